package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.DeadLetter;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * 10,000 generated bad and borderline records through the running job: the job never fails
 * (restarts are switched off, so one failure would end it), and every record is either
 * dead-lettered with a reason or answered.
 */
class BadInputFuzzTest {
    static final String MODEL = "affine-fp32"; // inputs x FP32 [N,4]

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    static EmbeddedKafka kafka;

    @BeforeAll
    static void startKafka() throws Exception {
        kafka = EmbeddedKafka.start();
    }

    @AfterAll
    static void stopKafka() throws Exception {
        kafka.close();
    }

    @Test
    void tenThousandBadRecordsNeverFailTheJobAndAreAllAccountedFor() throws Exception {
        Path repo = FashionMnist.findRoot().resolve("gpu-operator-udf/src/test/resources/models");
        Configuration config = TestJobs.config(kafka, "fuzz", 2, repo);
        config.set(GpuInferenceOptions.MAX_TENSOR_ELEMENTS, 100_000L);
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none");

        Fuzzer fuzzer = new Fuzzer(new Random(2026));
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            records.add(fuzzer.next(i));
        }
        List<RecordMetadata> where = KafkaTopics.produceWithMetadata(kafka.bootstrapServers(), "fuzz-requests", records);

        JobClient job = TestJobs.start(config, 2, "fuzz");
        List<ConsumerRecord<byte[], byte[]>> letters;
        List<ConsumerRecord<byte[], byte[]>> responses;
        JobStatus status;
        try {
            letters = KafkaTopics.read(kafka.bootstrapServers(), "fuzz-dead-letter",
                    got -> got.size() >= fuzzer.invalidCount, Duration.ofMinutes(2), Duration.ofSeconds(2));
            responses = KafkaTopics.read(kafka.bootstrapServers(), "fuzz-responses",
                    got -> got.size() >= fuzzer.answerable, Duration.ofMinutes(2), Duration.ofSeconds(2));
            status = job.getJobStatus().get();
        } finally {
            job.cancel().get();
        }
        assertThat(status).isEqualTo(JobStatus.RUNNING);

        Set<String> deadLettered = new HashSet<>();
        for (ConsumerRecord<byte[], byte[]> rec : letters) {
            DeadLetter d = DeadLetter.fromJson(rec.value());
            assertThat(d.reason()).isNotBlank();
            assertThat(deadLettered.add(d.partition() + "@" + d.offset())).as("one dead letter per record").isTrue();
        }
        Map<String, Integer> answers = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : responses) {
            InferenceResponse r = WireFormat.AUTO.decodeResponse(rec.value());
            answers.merge(r.id(), 1, Integer::sum);
        }
        int accounted = 0;
        Map<String, Integer> expectedAnswers = new HashMap<>();
        for (int i = 0; i < records.size(); i++) {
            RecordMetadata m = where.get(i);
            boolean letter = deadLettered.contains(m.partition() + "@" + m.offset());
            String id = fuzzer.ids.get(i);
            if (letter || id != null) {
                accounted++;
            }
            if (id != null) {
                expectedAnswers.merge(id, 1, Integer::sum);
            }
            if (fuzzer.valid.get(i)) {
                assertThat(letter).as("record %d is valid and must not be dead-lettered", i).isFalse();
            }
        }
        assertThat(accounted).isEqualTo(records.size());
        assertThat(deadLettered).hasSize(fuzzer.invalidCount);
        // every record with an id (the payload's or the Kafka key) is answered, duplicates as often as sent
        assertThat(answers).isEqualTo(expectedAnswers);
    }

    /** Generates bad and borderline records, remembering which are valid and which id each carries. */
    static final class Fuzzer {
        final Random random;
        final List<String> ids = new ArrayList<>();
        final List<Boolean> valid = new ArrayList<>();
        int invalidCount;
        int answerable;
        final JsonCodec json = new JsonCodec();
        final BinaryCodec binary = new BinaryCodec();

        Fuzzer(Random random) {
            this.random = random;
        }

        String validJson(String id) {
            return new String(json.encodeRequest(request(id)), StandardCharsets.UTF_8);
        }

        InferenceRequest request(String id) {
            int n = 1 + random.nextInt(3);
            float[] x = new float[n * 4];
            for (int k = 0; k < x.length; k++) {
                x[k] = random.nextFloat();
            }
            return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("x", new long[] {n, 4}, x)),
                    new RequestParameters(0, 0, "fuzz"));
        }

        ProducerRecord<byte[], byte[]> next(int i) {
            String id = "f-" + i;
            byte[] payload;
            boolean ok = false;
            boolean keyed = true;
            String answeredId = id;
            switch (random.nextInt(16)) {
                case 0 -> { // truncated JSON
                    String s = validJson(id);
                    payload = s.substring(0, random.nextInt(s.length() - 1)).getBytes(StandardCharsets.UTF_8);
                }
                case 1 -> payload = validJson(id).replace("\"data\":[", "\"data\":[\"zero\",").getBytes(StandardCharsets.UTF_8);
                case 2 -> payload = validJson(id).replaceFirst("\"shape\":\\[\\d+,4\\]",
                        "\"shape\":[" + (1L << (20 + random.nextInt(40))) + ",4]").getBytes(StandardCharsets.UTF_8);
                case 3 -> payload = validJson(id).replaceFirst("\"shape\":\\[(\\d+),4\\]", "\"shape\":[$1,-4]")
                        .getBytes(StandardCharsets.UTF_8);
                case 4 -> payload = validJson(id).replace("\"" + MODEL + "\"", "\"model-" + random.nextInt(100) + "\"")
                        .getBytes(StandardCharsets.UTF_8);
                case 5 -> payload = validJson(id).replace("\"model_name\":", "\"model_version\":\"9\",\"model_name\":")
                        .getBytes(StandardCharsets.UTF_8);
                case 6 -> { // invalid UTF-8 somewhere inside
                    byte[] b = validJson(id).getBytes(StandardCharsets.UTF_8);
                    b[10 + random.nextInt(b.length - 20)] = (byte) (0x80 | random.nextInt(0x40));
                    b[b.length / 2] = (byte) 0xC0;
                    payload = b;
                }
                case 7 -> payload = new byte[0];
                case 8 -> { // duplicate id: a valid request reusing an earlier id
                    answeredId = "f-" + random.nextInt(Math.max(1, i));
                    payload = validJson(answeredId).getBytes(StandardCharsets.UTF_8);
                    ok = true;
                }
                case 9 -> { // random bytes, no key
                    payload = new byte[1 + random.nextInt(300)];
                    random.nextBytes(payload);
                    keyed = false;
                    answeredId = null;
                }
                case 10 -> { // truncated binary frame
                    byte[] b = binary.encodeRequest(request(id));
                    payload = java.util.Arrays.copyOf(b, b.length - 1 - random.nextInt(b.length - 1));
                }
                case 11 -> payload = validJson(id).replaceFirst("\\[(\\d+),4\\]", "[$1,3]").getBytes(StandardCharsets.UTF_8);
                case 12 -> payload = ("{\"id\":\"" + id + "\",\"model_name\":\"" + MODEL + "\",\"inputs\":[{\"name\":\"x\","
                        + "\"datatype\":\"FP32\",\"shape\":[1,4],\"data\":" + "[".repeat(200) + "1" + "]".repeat(200)
                        + "}]}").getBytes(StandardCharsets.UTF_8);
                case 13 -> { // borderline but valid: nested data, whitespace, binary encoding
                    payload = random.nextBoolean() ? binary.encodeRequest(request(id))
                            : ("  \n" + validJson(id) + "\n ").getBytes(StandardCharsets.UTF_8);
                    ok = true;
                }
                case 14 -> payload = validJson(id).replace("\"datatype\":\"FP32\"", "\"datatype\":\"FP128\"")
                        .getBytes(StandardCharsets.UTF_8);
                default -> {
                    payload = validJson(id).getBytes(StandardCharsets.UTF_8);
                    ok = true;
                }
            }
            if (!ok) {
                invalidCount++;
            }
            ids.add(answeredId == null ? null : keyed || ok ? answeredId : null);
            valid.add(ok);
            if (answeredId != null) {
                answerable++;
            }
            return new ProducerRecord<>("unused", keyed ? id.getBytes(StandardCharsets.UTF_8) : null, payload);
        }
    }
}
