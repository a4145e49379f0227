package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Every rejected request is answered with its code, through the operator. */
class QosOperatorTest {
    static final String MODEL = "affine-fp32";

    @TempDir
    static Path repo;

    @BeforeAll
    static void repositoryWithSchedulingAndTenants() throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Files.copy(Path.of("src/test/resources/models", MODEL, "1", "model.onnx"), dir.resolve("model.onnx"));
        ObjectMapper mapper = new ObjectMapper();
        ObjectNode config = (ObjectNode) mapper.readTree(Path.of("src/test/resources/models", MODEL, "config.json").toFile());
        config.remove("dynamic_batching");
        config.set("scheduling", mapper.readTree("{\"priority_levels\": 2, \"default_priority\": 2, "
                + "\"default_timeout_ms\": 60000, \"levels\": {\"2\": {\"max_queue_size\": 3}}}"));
        Files.writeString(repo.resolve(MODEL).resolve("config.json"), config.toString());
        Files.writeString(repo.resolve("tenants.json"), "{\"tenants\": ["
                + "{\"name\": \"outsider\", \"allowed_models\": [\"some-other-model\"]},"
                + "{\"name\": \"tiny\", \"max_in_flight\": 1}]}");
    }

    static InferenceRequest request(String id, int priority, String tenant, long timeoutMs) {
        return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)),
                new RequestParameters(priority, timeoutMs, tenant));
    }

    @Test
    void rejectionsCarryTheirCodes() throws Exception {
        GpuInference inference = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(16)
                .maxQueueDelay(Duration.ofHours(1)).build();
        try (var h = new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(inference.settings()),
                InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            h.processElement(new StreamRecord<>(request("forbidden", 1, "outsider", 0)));
            h.processElement(new StreamRecord<>(request("tiny-1", 1, "tiny", 0)));
            h.processElement(new StreamRecord<>(request("tiny-2", 1, "tiny", 0)));
            for (int i = 0; i < 4; i++) {
                h.processElement(new StreamRecord<>(request("low-" + i, 2, "shop", 0)));
            }
            h.processElement(new StreamRecord<>(request("bad-priority", 3, "shop", 0)));
            h.processElement(new StreamRecord<>(request("short-timeout", 1, "shop", 50)));
            Thread.sleep(60); // short-timeout expires in the queue
            h.setProcessingTime(h.getProcessingTime() + 100); // fires the deadline timer
            h.endInput();

            Map<String, InferenceResponse> out = h.extractOutputValues().stream()
                    .collect(Collectors.toMap(InferenceResponse::id, r -> r));
            assertThat(out).hasSize(9);
            assertThat(out.get("forbidden").error().code()).isEqualTo(ErrorCode.FORBIDDEN_MODEL);
            assertThat(out.get("tiny-1").isError()).isFalse();
            assertThat(out.get("tiny-2").error().code()).isEqualTo(ErrorCode.QUOTA_EXCEEDED);
            assertThat(out.get("low-3").error().code()).isEqualTo(ErrorCode.QUEUE_FULL);
            assertThat(List.of("low-0", "low-1", "low-2")).allSatisfy(id -> assertThat(out.get(id).isError()).isFalse());
            assertThat(out.get("bad-priority").error().code()).isEqualTo(ErrorCode.INVALID_PRIORITY);
            assertThat(out.get("short-timeout").error().code()).isEqualTo(ErrorCode.TIMEOUT);
        }
    }
}
