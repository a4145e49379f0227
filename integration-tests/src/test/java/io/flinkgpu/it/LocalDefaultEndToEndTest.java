package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.DeadLetter;
import io.flinkgpu.job.local.FashionMnist;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's first command, the local default, started as a user would (picocli, in this JVM):
 * its embedded Kafka broker, local Flink cluster and web UI, the shipped model, real traffic and
 * the live summary. From outside, through the printed Kafka bootstrap address, the test sends a
 * valid request, one too large for the operator's batches and one with an invalid parameter, and
 * checks their answers and dead letters, the printed summary, and the job's state over REST.
 */
class LocalDefaultEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String REQUESTS = "inference-requests";
    static final String RESPONSES = "inference-responses";
    static final String DEAD_LETTER = "inference-dead-letter";
    static final int DURATION_S = 25;
    /**
     * More samples than the shipped model's max_batch_size (64), which caps the operator's default
     * inference.batching.max-batch-size (128) for it.
     */
    static final int OVERSIZED_BATCH = 65;

    static final Pattern BOOTSTRAP = Pattern.compile("^  Kafka bootstrap   (\\S+)\\s*$", Pattern.MULTILINE);
    static final Pattern SUMMARY = Pattern.compile("\\[\\s*\\d+s\\] sent (\\d+) \\| answered (\\d+)");
    static final Pattern FINAL = Pattern.compile("^Answered (\\d+) of (\\d+) requests\\.$");

    static final ObjectMapper MAPPER = new ObjectMapper();

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void theLocalDefaultServesRequestsFromOutside() throws Exception {
        int webPort = StandaloneCluster.freePort();
        FlinkRest rest = FlinkRest.onLocalhost(webPort);
        long startNanos = System.nanoTime();
        LocalDefaultRun app = LocalDefaultRun.start(
                "--duration=" + DURATION_S, "--web-port=" + webPort, "--prometheus-port=0", "--interval=2");

        String unique = UUID.randomUUID().toString();
        String validId = "it-local-default-valid-" + unique;
        String oversizedId = "it-local-default-oversized-" + unique;
        String badTimeoutId = "it-local-default-bad-timeout-" + unique;
        long bannerNanos;
        try {
            String bootstrap = app.awaitLine(BOOTSTRAP, Duration.ofSeconds(60)).group(1);
            bannerNanos = System.nanoTime();
            // Everything read from the running broker must be read before --duration ends it.
            long runDeadline = bannerNanos + TimeUnit.SECONDS.toNanos(DURATION_S - 1);

            String jobId = rest.awaitOnlyRunningJob(Duration.ofSeconds(20));

            FashionMnist images = FashionMnist.load(FashionMnist.findRoot());
            JsonCodec json = new JsonCodec();
            byte[] valid = json.encodeRequest(imageRequest(validId, images, 1));
            byte[] oversized = json.encodeRequest(imageRequest(oversizedId, images, OVERSIZED_BATCH));
            ObjectNode badTimeout = (ObjectNode) MAPPER.readTree(json.encodeRequest(imageRequest(badTimeoutId, images, 1)));
            badTimeout.putObject("parameters").put("timeout_ms", -5);
            KafkaTopics.produce(bootstrap, REQUESTS, List.of(
                    record(validId, valid), record(oversizedId, oversized),
                    record(badTimeoutId, MAPPER.writeValueAsBytes(badTimeout))));

            Set<String> ids = Set.of(validId, oversizedId, badTimeoutId);
            Map<String, InferenceResponse> responses = readUntil(bootstrap, RESPONSES, ids,
                    LocalDefaultEndToEndTest::decodeResponse, until(runDeadline, Duration.ofSeconds(60)));
            assertThat(responses).as("responses to the three requests; output so far:%n%s", app.output())
                    .containsOnlyKeys(ids);

            InferenceResponse ok = responses.get(validId);
            assertThat(ok.isError()).as("valid request answered with %s", ok.error()).isFalse();
            Tensor logits = ok.output("logits");
            assertThat(logits).as("outputs %s", ok.outputs()).isNotNull();
            assertThat(logits.shape()).containsExactly(1L, 10L);
            for (float v : logits.asFloats()) {
                assertThat(Float.isFinite(v)).as("logit %s", v).isTrue();
            }

            InferenceResponse tooLarge = responses.get(oversizedId);
            assertThat(tooLarge.isError()).as("the %d-sample request: %s", OVERSIZED_BATCH, tooLarge).isTrue();
            assertThat(tooLarge.error().code()).as("%s", tooLarge.error()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
            assertThat(tooLarge.error().message()).contains("the model's max_batch_size is 64");

            InferenceResponse invalid = responses.get(badTimeoutId);
            assertThat(invalid.isError()).as("timeout_ms -5: %s", invalid).isTrue();
            assertThat(invalid.error().code()).as("%s", invalid.error()).isEqualTo(ErrorCode.INVALID_FIELD);

            Map<String, DeadLetter> deadLetters = readUntil(bootstrap, DEAD_LETTER, Set.of(oversizedId, badTimeoutId),
                    LocalDefaultEndToEndTest::decodeDeadLetter, until(runDeadline, Duration.ofSeconds(20)));
            assertThat(deadLetters).containsOnlyKeys(oversizedId, badTimeoutId);
            assertThat(deadLetters.get(oversizedId).code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
            assertThat(deadLetters.get(oversizedId).requestId()).isEqualTo(oversizedId);
            assertThat(deadLetters.get(badTimeoutId).code()).isEqualTo(ErrorCode.INVALID_FIELD);
            assertThat(deadLetters.get(badTimeoutId).requestId()).isEqualTo(badTimeoutId);

            // The refused requests left the job running, without a failure on record.
            rest.assertRunningWithoutExceptions(jobId);
        } finally {
            // The picocli call returns once --duration has passed; wait for it whatever happened above.
            app.join(Duration.ofSeconds(DURATION_S + 30));
        }
        long endNanos = System.nanoTime();
        assertThat(app.isAlive()).as("local default still running after its duration").isFalse();
        assertThat(app.exitCode()).as("exit code; output:%n%s", app.output()).isZero();
        assertThat(endNanos - bannerNanos).isGreaterThanOrEqualTo(TimeUnit.SECONDS.toNanos(DURATION_S));

        String output = app.output();
        List<long[]> summaries = new ArrayList<>();
        Matcher m = SUMMARY.matcher(output);
        while (m.find()) {
            summaries.add(new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2))});
        }
        assertThat(summaries).as("summary lines in%n%s", output).isNotEmpty();
        assertThat(summaries.stream().mapToLong(s -> s[1]).max().orElse(0))
                .as("answered in the summary lines of%n%s", output).isPositive();

        List<String> lines = output.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        assertThat(lines).isNotEmpty();
        Matcher last = FINAL.matcher(lines.get(lines.size() - 1));
        assertThat(last.matches()).as("last line of%n%s", output).isTrue();
        assertThat(Long.parseLong(last.group(1))).isPositive();
        assertThat(Long.parseLong(last.group(2))).isPositive();
        System.out.printf("local default ran %.1f s in all%n", (endNanos - startNanos) / 1e9);
    }

    private static InferenceRequest imageRequest(String id, FashionMnist images, int samples) {
        float[] pixels = new float[samples * FashionMnist.PIXELS];
        for (int i = 0; i < samples; i++) {
            System.arraycopy(images.image(i % images.size()), 0, pixels, i * FashionMnist.PIXELS, FashionMnist.PIXELS);
        }
        return new InferenceRequest(id, MODEL, null,
                List.of(Tensor.ofFloats("input", new long[] {samples, 1, 28, 28}, pixels)),
                RequestParameters.DEFAULTS);
    }

    private static ProducerRecord<byte[], byte[]> record(String id, byte[] value) {
        return new ProducerRecord<>(REQUESTS, id.getBytes(StandardCharsets.UTF_8), value);
    }

    private static Map.Entry<String, InferenceResponse> decodeResponse(byte[] value) {
        try {
            InferenceResponse r = WireFormat.AUTO.decodeResponse(value);
            return Map.entry(r.id(), r);
        } catch (ProtocolException e) {
            throw new AssertionError("unreadable response", e);
        }
    }

    private static Map.Entry<String, DeadLetter> decodeDeadLetter(byte[] value) {
        try {
            DeadLetter d = DeadLetter.fromJson(value);
            return d.requestId() == null ? null : Map.entry(d.requestId(), d);
        } catch (IOException e) {
            throw new AssertionError("unreadable dead letter " + new String(value, StandardCharsets.UTF_8), e);
        }
    }

    /** The time left until {@code deadlineNanos}, at most {@code cap}. */
    private static Duration until(long deadlineNanos, Duration cap) {
        long left = Math.max(0, deadlineNanos - System.nanoTime());
        return Duration.ofNanos(Math.min(left, cap.toNanos()));
    }

    /**
     * Reads {@code topic} from the beginning, keeping the first record for each of {@code ids},
     * until all are there or {@code timeout} passes.
     */
    private static <T> Map<String, T> readUntil(String bootstrap, String topic, Set<String> ids,
            Function<byte[], Map.Entry<String, T>> decode, Duration timeout) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("group.id", "it-local-default-" + UUID.randomUUID());
        p.setProperty("auto.offset.reset", "earliest");
        Map<String, T> found = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + timeout.toNanos();
            while (found.size() < ids.size() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(200))) {
                    Map.Entry<String, T> e = decode.apply(rec.value());
                    if (e != null && ids.contains(e.getKey())) {
                        found.putIfAbsent(e.getKey(), e.getValue());
                    }
                }
            }
        }
        return found;
    }
}
