package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A mixed-priority, mixed-tenant stream through Kafka and the MiniCluster: every request is
 * answered exactly once, with outputs or with a coded error.
 */
class QosEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final Set<ErrorCode> QOS_CODES = EnumSet.of(ErrorCode.TIMEOUT, ErrorCode.QUEUE_FULL,
            ErrorCode.QUOTA_EXCEEDED, ErrorCode.DEADLINE_INFEASIBLE, ErrorCode.FORBIDDEN_MODEL,
            ErrorCode.INVALID_PRIORITY);

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    @TempDir
    static Path repo;

    static EmbeddedKafka kafka;
    static FashionMnist images;

    @BeforeAll
    static void setUp() throws Exception {
        kafka = EmbeddedKafka.start();
        Path root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        Path source = root.resolve("models").resolve(MODEL);
        Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Files.copy(source.resolve("1").resolve("model.onnx"), repo.resolve(MODEL).resolve("1").resolve("model.onnx"));
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode config = (ObjectNode) mapper.readTree(source.resolve("config.json").toFile());
        config.set("scheduling", mapper.readTree("{\"priority_levels\": 3, \"default_priority\": 2,"
                + " \"default_timeout_ms\": 10000, \"aging_ms\": 200,"
                + " \"levels\": {\"1\": {\"timeout_action\": \"REJECT\"}, \"2\": {\"timeout_action\": \"DELAY\"},"
                + " \"3\": {\"timeout_action\": \"REJECT\", \"max_queue_size\": 40, \"min_share\": 0.1}}}"));
        Files.writeString(repo.resolve(MODEL).resolve("config.json"), config.toString());
        Files.writeString(repo.resolve("tenants.json"), "{\"tenants\": ["
                + "{\"name\": \"gold\", \"weight\": 3},"
                + "{\"name\": \"free\", \"weight\": 1, \"rate_limit\": 200, \"burst\": 50},"
                + "{\"name\": \"outsider\", \"allowed_models\": [\"another-model\"]}]}");
    }

    @AfterAll
    static void tearDown() throws Exception {
        kafka.close();
    }

    @Test
    void everyRequestOfAMixedStreamIsAnsweredExactlyOnce() throws Exception {
        Configuration config = TestJobs.config(kafka, "qos", 2, repo);
        config.set(InferenceJobOptions.PARALLELISM, 1);

        Random random = new Random(11);
        String[] tenants = {"gold", "free", "outsider", "walk-in"};
        JsonCodec codec = new JsonCodec();
        List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();
        Map<String, String> tenantOf = new HashMap<>();
        int n = 3000;
        for (int i = 0; i < n; i++) {
            String id = "q-" + i;
            String tenant = tenants[random.nextInt(tenants.length)];
            int priority = random.nextInt(10) == 0 ? 4 : random.nextInt(4); // 4 is invalid, 0 is the default
            long timeoutMs = random.nextInt(8) == 0 ? 1 + random.nextInt(3) : 0; // a few very short deadlines
            InferenceRequest r = new InferenceRequest(id, MODEL, null,
                    List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(i % images.size()))),
                    new RequestParameters(priority, timeoutMs, tenant));
            tenantOf.put(id, tenant);
            records.add(new ProducerRecord<>("qos-requests", id.getBytes(StandardCharsets.UTF_8), codec.encodeRequest(r)));
        }
        KafkaTopics.produce(kafka.bootstrapServers(), "qos-requests", records);

        JobClient job = TestJobs.start(config, 1, "qos-e2e");
        List<ConsumerRecord<byte[], byte[]>> out;
        try {
            out = KafkaTopics.read(kafka.bootstrapServers(), "qos-responses", got -> got.size() >= n,
                    Duration.ofMinutes(2), Duration.ofSeconds(3));
        } finally {
            job.cancel().get();
        }

        Map<String, InferenceResponse> responses = new HashMap<>();
        Map<ErrorCode, Integer> codes = new HashMap<>();
        int successes = 0;
        for (ConsumerRecord<byte[], byte[]> rec : out) {
            InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
            assertThat(responses.put(r.id(), r)).as("second response for %s", r.id()).isNull();
            if (r.isError()) {
                assertThat(QOS_CODES).as("%s", r).contains(r.error().code());
                codes.merge(r.error().code(), 1, Integer::sum);
            } else {
                successes++;
                assertThat(r.output("logits").shape()).containsExactly(1, 10);
            }
        }
        assertThat(responses).hasSize(n);
        responses.forEach((id, r) -> {
            if (tenantOf.get(id).equals("outsider") && !(r.isError() && r.error().code() == ErrorCode.INVALID_PRIORITY)) {
                assertThat(r.error().code()).as(id).isEqualTo(ErrorCode.FORBIDDEN_MODEL);
            }
        });
        assertThat(codes).containsKeys(ErrorCode.FORBIDDEN_MODEL, ErrorCode.INVALID_PRIORITY);
        assertThat(successes).isGreaterThan(n / 3);
    }
}
