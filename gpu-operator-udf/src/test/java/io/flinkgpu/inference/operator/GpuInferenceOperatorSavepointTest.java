package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OperatorSnapshotUtil;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Savepoint compatibility of {@link GpuInferenceOperator}'s pending-request state: a snapshot
 * written by an earlier build of the operator (kept under {@code src/test/resources/snapshots})
 * restores into this one and every request in it is answered. The snapshot was taken with eight
 * requests executing (a full batch whose results had not come back) and three queued.
 *
 * <p>{@code -Dflinkgpu.write-snapshots=true} rewrites the committed snapshot with the current
 * build; do that only for a deliberate change of the state's layout.
 */
class GpuInferenceOperatorSavepointTest {
    static final String MODEL = GpuInferenceOperatorTest.MODEL;
    static final Path SNAPSHOT = Path.of("src/test/resources/snapshots/gpu-inference-pending-requests.snapshot");
    static final List<String> IDS = List.of("e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "q0", "q1", "q2");

    @TempDir
    static Path repoDir;

    static String repo;

    @BeforeAll
    static void repositoryWithoutModelBatchingSettings() throws Exception {
        Path dir = Files.createDirectories(repoDir.resolve(MODEL).resolve("1"));
        Path models = Path.of(GpuInferenceOperatorTest.TEST_MODELS);
        Files.copy(models.resolve(MODEL).resolve("1").resolve("model.onnx"), dir.resolve("model.onnx"));
        ObjectNode config = (ObjectNode) new ObjectMapper()
                .readTree(models.resolve(MODEL).resolve("config.json").toFile());
        config.remove("dynamic_batching");
        Files.writeString(repoDir.resolve(MODEL).resolve("config.json"), config.toString());
        repo = repoDir.toString();
    }

    private static GpuInference inference() {
        return GpuInference.builder().modelRepository(repo).maxBatchSize(8).maxEnqueuedBatches(1000)
                .maxQueueDelay(Duration.ofHours(1)).build();
    }

    private static OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse> harness() throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(inference().settings()),
                InferenceTypes.REQUEST.createSerializer(null));
    }

    static InferenceRequest request(String id) {
        float seed = id.hashCode() % 100 / 100f;
        return new InferenceRequest(id, MODEL, null,
                List.of(Tensor.ofFloats("x", new long[] {1, 4}, seed, -seed, 2 * seed, 0.5f)),
                RequestParameters.DEFAULTS);
    }

    @Test
    void aSnapshotOfAnEarlierBuildRestoresAndEveryRequestInItIsAnswered() throws Exception {
        restoresAndAnswersEveryRequest(SNAPSHOT);
    }

    /**
     * The current build's own snapshot restores the same way. With
     * {@code -Dflinkgpu.write-snapshots=true} it also replaces the committed one; do that only for
     * a deliberate change of the state's layout.
     */
    @Test
    void aSnapshotOfThisBuildRestoresTooAndEveryRequestInItIsAnswered(@TempDir Path dir) throws Exception {
        Path written = dir.resolve("current.snapshot");
        writeSnapshot(written);
        restoresAndAnswersEveryRequest(written);
        if (Boolean.getBoolean("flinkgpu.write-snapshots")) {
            Files.createDirectories(SNAPSHOT.getParent());
            Files.copy(written, SNAPSHOT, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
    }

    private void restoresAndAnswersEveryRequest(Path file) throws Exception {
        OperatorSubtaskState snapshot = OperatorSnapshotUtil.readStateHandle(file.toString());
        try (var h = harness()) {
            h.setup();
            h.initializeState(snapshot);
            h.open();
            h.endInput();
            List<InferenceResponse> out = h.extractOutputValues();
            assertThat(out).extracting(InferenceResponse::id).containsExactlyInAnyOrderElementsOf(IDS);
            assertThat(out).allSatisfy(r -> {
                assertThat(r.isError()).as("%s", r).isFalse();
                assertThat(r.modelVersion()).isEqualTo("1");
            });
        }
        // the same requests answered now, without a restore, give the same outputs
        List<InferenceResponse> fresh;
        try (var h = harness()) {
            h.open();
            for (String id : IDS) {
                h.processElement(new StreamRecord<>(request(id)));
            }
            h.endInput();
            fresh = h.extractOutputValues();
        }
        OperatorSubtaskState again = OperatorSnapshotUtil.readStateHandle(file.toString());
        try (var h = harness()) {
            h.setup();
            h.initializeState(again);
            h.open();
            h.endInput();
            for (InferenceResponse r : h.extractOutputValues()) {
                InferenceResponse f = fresh.stream().filter(x -> x.id().equals(r.id())).findFirst().orElseThrow();
                assertThat(r.outputs()).isEqualTo(f.outputs());
            }
        }
    }

    private void writeSnapshot(Path target) throws Exception {
        List<InferenceRequest> requests = new ArrayList<>();
        for (String id : IDS) {
            requests.add(request(id));
        }
        OperatorSubtaskState snapshot;
        try (var h = harness()) {
            h.open();
            for (InferenceRequest r : requests) { // the first eight: a full batch, executing at once
                h.processElement(new StreamRecord<>(r));
            }
            snapshot = h.snapshot(1L, 1L);
            assertThat(h.extractOutputValues()).isEmpty();
        }
        OperatorSnapshotUtil.writeStateHandle(snapshot, target.toString());
    }
}
