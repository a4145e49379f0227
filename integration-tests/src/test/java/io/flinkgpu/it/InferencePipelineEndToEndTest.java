package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.DeadLetter;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The whole pipeline against real parts: an in-process Kafka broker (KRaft), a Flink
 * MiniCluster, the shipped Fashion-MNIST model and real images.
 */
class InferencePipelineEndToEndTest extends KafkaAndImages {
    static final String MODEL = "fashion-mnist-cnn";
    static final long[] IMAGE_SHAPE = {1, 1, 28, 28};

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    private static Configuration jobConfig(String prefix) throws Exception {
        Configuration config = TestJobs.config(kafka, prefix, 2, root.resolve("models"));
        config.set(InferenceJobOptions.PARALLELISM, 2);
        config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(2));
        return config;
    }

    private static JobClient start(Configuration config) throws Exception {
        return TestJobs.start(config, 2, "e2e");
    }

    private static InferenceRequest imageRequest(String id, int sample) {
        return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("input", IMAGE_SHAPE, images.image(sample))),
                new RequestParameters(0, 0, "it"));
    }

    private static ProducerRecord<byte[], byte[]> record(String id, byte[] payload) {
        return new ProducerRecord<>("unused", id.getBytes(StandardCharsets.UTF_8), payload);
    }

    @Test
    void tenThousandRequestsGetExactlyTenThousandCorrectResponses() throws Exception {
        Configuration config = jobConfig("tenk");
        int n = 10_000;
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>(n);
        JsonCodec json = new JsonCodec();
        BinaryCodec binary = new BinaryCodec();
        for (int i = 0; i < n; i++) {
            InferenceRequest r = imageRequest("req-" + i, i % images.size());
            // both encodings on one topic: the job reads it as AUTO
            records.add(record(r.id(), i % 2 == 0 ? json.encodeRequest(r) : binary.encodeRequest(r)));
        }
        KafkaTopics.produce(kafka.bootstrapServers(), config.get(InferenceJobOptions.REQUESTS_TOPIC), records);

        JobClient job = start(config);
        List<ConsumerRecord<byte[], byte[]>> out;
        try {
            out = KafkaTopics.read(kafka.bootstrapServers(), config.get(InferenceJobOptions.RESPONSES_TOPIC),
                    got -> got.size() >= n, Duration.ofMinutes(3), Duration.ofSeconds(3));
        } finally {
            job.cancel().get();
        }

        assertThat(out).hasSize(n);
        Map<String, InferenceResponse> responses = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : out) {
            InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
            assertThat(responses.put(r.id(), r)).as("duplicate response for %s", r.id()).isNull();
        }
        double meanBatch = responses.values().stream().mapToInt(r -> r.timings().batchSize()).average().orElse(0);
        assertThat(meanBatch).as("requests were batched").isGreaterThan(1.5);

        try (OnnxModel direct = OnnxModel.load(new ModelId(MODEL, "1"),
                root.resolve("models").resolve(MODEL).resolve("1").resolve("model.onnx"),
                new CpuDevice("cpu:0", 1L << 30, 1))) {
            float[][] expected = new float[images.size()][];
            for (int s = 0; s < images.size(); s++) {
                expected[s] = direct.run(List.of(imageRequest("direct", s))).get(0).get(0).asFloats();
            }
            for (int i = 0; i < n; i++) {
                InferenceResponse r = responses.get("req-" + i);
                assertThat(r).as("response for req-%d", i).isNotNull();
                assertThat(r.isError()).as("%s", r).isFalse();
                assertThat(r.modelVersion()).isEqualTo("1");
                assertThat(r.output("logits").shape()).containsExactly(1, 10);
                float[] actual = r.output("logits").asFloats();
                float[] want = expected[i % images.size()];
                for (int k = 0; k < want.length; k++) {
                    assertThat(Math.abs(actual[k] - want[k]))
                            .as("req-%d logit %d: %s vs %s", i, k, Arrays.toString(actual), Arrays.toString(want))
                            .isLessThanOrEqualTo(1e-4f * Math.max(1f, Math.abs(want[k])));
                }
            }
        }
    }

    @Test
    void invalidRecordsAreDeadLetteredWithTheirCodeAndValidOnesAnswered() throws Exception {
        Configuration config = jobConfig("mixed");
        config.set(GpuInferenceOptions.MAX_REQUEST_SIZE, MemorySize.parse("1mb"));
        // an operator cap below the model's max_batch_size (64), for the request legal for the model but over it
        config.set(GpuInferenceOptions.MAX_BATCH_SIZE, 32);

        Map<String, ErrorCode> invalid = new LinkedHashMap<>();
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        String image = Arrays.toString(images.image(0));
        String okInput = "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":" + image + "}";
        addInvalid(invalid, records, "bad-truncated", ErrorCode.MALFORMED_PAYLOAD,
                "{\"id\":\"bad-truncated\",\"model_name\":\"" + MODEL + "\",\"inputs\":[");
        addInvalid(invalid, records, "bad-empty", ErrorCode.MALFORMED_PAYLOAD, "");
        addInvalid(invalid, records, "bad-not-object", ErrorCode.MALFORMED_PAYLOAD, "[1,2,3]");
        records.add(record("bad-utf8", new byte[] {'{', '"', 'i', 'd', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'}));
        invalid.put("bad-utf8", ErrorCode.MALFORMED_PAYLOAD);
        records.add(record("bad-binary", Arrays.copyOf(new BinaryCodec().encodeRequest(imageRequest("bad-binary", 0)), 100)));
        invalid.put("bad-binary", ErrorCode.MALFORMED_PAYLOAD);
        addInvalid(invalid, records, "bad-no-model", ErrorCode.MISSING_FIELD,
                "{\"id\":\"bad-no-model\",\"inputs\":[" + okInput + "]}");
        addInvalid(invalid, records, "bad-unknown-model", ErrorCode.UNKNOWN_MODEL,
                "{\"id\":\"bad-unknown-model\",\"model_name\":\"resnet-9000\",\"inputs\":[" + okInput + "]}");
        addInvalid(invalid, records, "bad-unknown-version", ErrorCode.UNKNOWN_VERSION,
                "{\"id\":\"bad-unknown-version\",\"model_name\":\"" + MODEL + "\",\"model_version\":\"7\",\"inputs\":["
                        + okInput + "]}");
        addInvalid(invalid, records, "bad-unknown-input", ErrorCode.UNKNOWN_INPUT,
                "{\"id\":\"bad-unknown-input\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + okInput.replace("\"input\"", "\"pixels\"") + "]}");
        addInvalid(invalid, records, "bad-datatype", ErrorCode.DATATYPE_MISMATCH,
                "{\"id\":\"bad-datatype\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + "{\"name\":\"input\",\"datatype\":\"INT64\",\"shape\":[1,1,28,28],\"data\":[" + "1,".repeat(783)
                        + "1]}]}");
        addInvalid(invalid, records, "bad-shape", ErrorCode.SHAPE_MISMATCH,
                "{\"id\":\"bad-shape\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + okInput.replace("[1,1,28,28]", "[1,28,28]") + "]}");
        addInvalid(invalid, records, "bad-count", ErrorCode.ELEMENT_COUNT_MISMATCH,
                "{\"id\":\"bad-count\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":[0.5,0.5]}]}");
        addInvalid(invalid, records, "bad-nan", ErrorCode.NAN_NOT_ALLOWED,
                "{\"id\":\"bad-nan\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + okInput.replaceFirst("\\[0\\.0,", "[NaN,") + "]}");
        addInvalid(invalid, records, "bad-batch", ErrorCode.BATCH_TOO_LARGE,
                "{\"id\":\"bad-batch\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[65,1,28,28],\"data\":[0.5]}]}");
        addInvalid(invalid, records, "bad-huge", ErrorCode.TENSOR_TOO_LARGE,
                "{\"id\":\"bad-huge\",\"model_name\":\"" + MODEL + "\",\"inputs\":[" + okInput + "]}"
                        + " ".repeat(2 * 1024 * 1024));
        addInvalid(invalid, records, "bad-negative", ErrorCode.INVALID_FIELD,
                "{\"id\":\"bad-negative\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + okInput.replace("[1,1,28,28]", "[1,1,-28,28]") + "]}");
        // legal for the model (max_batch_size 64) but over the operator's batch limit (32): refused, not fatal
        addInvalid(invalid, records, "bad-operator-batch", ErrorCode.BATCH_TOO_LARGE,
                "{\"id\":\"bad-operator-batch\",\"model_name\":\"" + MODEL + "\",\"inputs\":["
                        + "{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[40,1,28,28],\"data\":["
                        + "0.5,".repeat(40 * 784 - 1) + "0.5]}]}");
        // a well-formed request with an invalid parameter: its id is read, so its caller is answered
        addInvalid(invalid, records, "bad-timeout", ErrorCode.INVALID_FIELD,
                "{\"id\":\"bad-timeout\",\"model_name\":\"" + MODEL + "\",\"parameters\":{\"timeout_ms\":-5},"
                        + "\"inputs\":[" + okInput + "]}");
        assertThat(okInput).startsWith("{\"name\":\"input\",\"datatype\":\"FP32\",\"shape\":[1,1,28,28],\"data\":[0.0,");

        List<String> valid = new ArrayList<>();
        List<ProducerRecord<byte[], byte[]>> mixed = new ArrayList<>();
        int v = 0;
        for (ProducerRecord<byte[], byte[]> bad : records) {
            for (int k = 0; k < 20; k++, v++) {
                InferenceRequest r = imageRequest("ok-" + v, v % images.size());
                valid.add(r.id());
                mixed.add(record(r.id(), new JsonCodec().encodeRequest(r)));
            }
            mixed.add(bad);
        }
        KafkaTopics.produce(kafka.bootstrapServers(), config.get(InferenceJobOptions.REQUESTS_TOPIC), mixed);

        JobClient job = start(config);
        List<ConsumerRecord<byte[], byte[]>> responses;
        List<ConsumerRecord<byte[], byte[]>> deadLetters;
        try {
            responses = KafkaTopics.read(kafka.bootstrapServers(), config.get(InferenceJobOptions.RESPONSES_TOPIC),
                    got -> got.size() >= valid.size() + invalid.size(), Duration.ofMinutes(2), Duration.ofSeconds(2));
            deadLetters = KafkaTopics.read(kafka.bootstrapServers(), config.get(InferenceJobOptions.DEAD_LETTER_TOPIC),
                    got -> got.size() >= invalid.size(), Duration.ofSeconds(30), Duration.ofSeconds(1));
        } finally {
            job.cancel().get();
        }

        Map<String, DeadLetter> letters = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : deadLetters) {
            DeadLetter d = DeadLetter.fromJson(rec.value());
            letters.put(d.requestId(), d);
        }
        assertThat(deadLetters).hasSize(invalid.size());
        Map<String, ErrorCode> letterCodes = letters.entrySet().stream()
                .collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().code()));
        assertThat(letterCodes).containsExactlyInAnyOrderEntriesOf(invalid);
        // refused by the parser: the record's own bytes
        assertThat(letters.get("bad-truncated").reencoded()).isFalse();
        assertThat(letters.get("bad-truncated").original()).isEqualTo(
                records.stream().filter(r -> new String(r.key(), StandardCharsets.UTF_8).equals("bad-truncated"))
                        .findFirst().orElseThrow().value());
        // refused by the operator after decoding: the request re-encoded, with the record's source
        DeadLetter count = letters.get("bad-count");
        assertThat(count.reencoded()).isTrue();
        assertThat(count.topic()).isEqualTo(config.get(InferenceJobOptions.REQUESTS_TOPIC));
        assertThat(count.offset()).isGreaterThanOrEqualTo(0);
        InferenceRequest back = WireFormat.AUTO.decodeRequest(count.original());
        assertThat(back.id()).isEqualTo("bad-count");
        assertThat(back.parameters().origin()).isEqualTo(count.topic() + "/" + count.partition() + "@" + count.offset());
        assertThat(letters.get("bad-operator-batch").reason()).contains("inference.batching.max-batch-size");
        assertThat(letters.values()).allSatisfy(d -> assertThat(d.reason()).isNotBlank());

        Map<String, InferenceResponse> answered = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : responses) {
            InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
            answered.put(r.id(), r);
        }
        assertThat(responses).hasSize(valid.size() + invalid.size());
        for (String id : valid) {
            assertThat(answered.get(id)).as(id).isNotNull();
            assertThat(answered.get(id).isError()).as("%s", answered.get(id)).isFalse();
        }
        for (Map.Entry<String, ErrorCode> e : invalid.entrySet()) {
            assertThat(answered.get(e.getKey())).as(e.getKey()).isNotNull();
            assertThat(answered.get(e.getKey()).error().code()).as(e.getKey()).isEqualTo(e.getValue());
        }
    }

    private static void addInvalid(Map<String, ErrorCode> invalid, List<ProducerRecord<byte[], byte[]>> records,
            String id, ErrorCode code, String payload) {
        invalid.put(id, code);
        records.add(record(id, payload.getBytes(StandardCharsets.UTF_8)));
    }
}
