package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The operator on simulated devices, with a corrupt model and with hot reload. */
class GpuInferenceOperatorDevicesTest {
    static final Path TEST_MODELS = Path.of("src/test/resources/models");
    static final String MODEL = "affine-fp32";

    @TempDir
    Path repo;

    private void copyModel(String source, String name, String version) throws Exception {
        Path dir = Files.createDirectories(repo.resolve(name).resolve(version));
        Files.copy(TEST_MODELS.resolve(source).resolve("1/model.onnx"), dir.resolve("model.onnx"));
        Files.writeString(repo.resolve(name).resolve("config.json"), Files.readString(
                TEST_MODELS.resolve(source).resolve("config.json")).replace("\"" + source + "\"", "\"" + name + "\""));
    }

    private static InferenceRequest request(String id, String model, int i) {
        return new InferenceRequest(id, model, null,
                List.of(Tensor.ofFloats("x", new long[] {1, 4}, i, i + 1, i + 2, i + 3)), RequestParameters.DEFAULTS);
    }

    private static OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse> harness(GpuInference g)
            throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(g.settings()),
                InferenceTypes.REQUEST.createSerializer(null));
    }

    private static void runMail(OneInputStreamOperatorTestHarness<?, ?> h) throws Exception {
        Mailboxes.runPending(h);
    }

    @Test
    void onSimulatedGpusACorruptModelFailsOnlyItsOwnRequests() throws Exception {
        copyModel(MODEL, MODEL, "1");
        copyModel(MODEL, "broken", "1");
        Files.write(repo.resolve("broken/1/model.onnx"), new byte[] {7, 7, 7});
        GpuInference inference = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(4)
                .maxQueueDelay(Duration.ofHours(1)).maxEnqueuedBatches(1000)
                .simulatedDevices(2, MemorySize.parse("64m"), "1+0.1*b").build();
        try (var h = harness(inference)) {
            h.open();
            for (int i = 0; i < 12; i++) {
                h.processElement(new StreamRecord<>(request("r" + i, i % 3 == 0 ? "broken" : MODEL, i)));
            }
            h.endInput();

            List<InferenceResponse> out = h.extractOutputValues();
            assertThat(out).hasSize(12);
            for (InferenceResponse r : out) {
                if (r.modelName().equals("broken")) {
                    assertThat(r.error().code()).isEqualTo(ErrorCode.MODEL_LOAD_FAILED);
                    assertThat(r.error().message()).contains("cannot load broken:1 on sim:0");
                } else {
                    assertThat(r.isError()).as(r.id()).isFalse();
                    assertThat(r.output("y").shape()).containsExactly(1, 3);
                }
            }
        }
    }

    @Test
    void hotReloadMovesTrafficToANewVersionWithoutFailingARequest() throws Exception {
        copyModel(MODEL, MODEL, "1");
        GpuInference inference = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(1)
                .maxEnqueuedBatches(1000).repositoryPollInterval(Duration.ofMillis(50))
                .simulatedDevices(1, MemorySize.parse("64m"), "cpu*1").build();
        List<String> versions = new ArrayList<>();
        try (var h = harness(inference)) {
            h.open();
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            int sent = 0;
            while (System.nanoTime() < deadline && !versions.contains("2")) {
                if (sent == 20) {
                    Path v2 = Files.createDirectories(repo.resolve(MODEL).resolve("2"));
                    Files.copy(TEST_MODELS.resolve(MODEL).resolve("1/model.onnx"), v2.resolve("model.onnx"));
                }
                h.processElement(new StreamRecord<>(request("r" + sent, MODEL, sent)));
                sent++;
                Thread.sleep(5);
                runMail(h);
                versions.clear();
                for (InferenceResponse r : h.extractOutputValues()) {
                    assertThat(r.isError()).as("%s: %s", r.id(), r.error()).isFalse();
                    versions.add(r.modelVersion());
                }
            }
            h.endInput();
            versions.clear();
            for (InferenceResponse r : h.extractOutputValues()) {
                assertThat(r.isError()).as("%s: %s", r.id(), r.error()).isFalse();
                versions.add(r.modelVersion());
            }
        }
        int firstV2 = versions.indexOf("2");
        assertThat(firstV2).as("traffic moved to version 2").isGreaterThanOrEqualTo(20);
        assertThat(versions.subList(0, firstV2)).containsOnly("1");
        assertThat(versions.subList(firstV2, versions.size())).as("and never back").containsOnly("2");
    }
}
