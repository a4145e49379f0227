package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Collectors;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The inference operator under Flink's operator test harness. */
class GpuInferenceOperatorTest {
    static final String TEST_MODELS = "src/test/resources/models";
    static final String MODEL = "affine-fp32";

    /** A repository with the affine model whose config leaves batching to the operator's settings. */
    @TempDir
    static Path repoDir;

    static String REPO;

    @BeforeAll
    static void repositoryWithoutModelBatchingSettings() throws Exception {
        Path dir = Files.createDirectories(repoDir.resolve(MODEL).resolve("1"));
        Files.copy(Path.of(TEST_MODELS, MODEL, "1", "model.onnx"), dir.resolve("model.onnx"));
        ObjectNode config = (ObjectNode) new ObjectMapper().readTree(Path.of(TEST_MODELS, MODEL, "config.json").toFile());
        config.remove("dynamic_batching");
        Files.writeString(repoDir.resolve(MODEL).resolve("config.json"), config.toString());
        REPO = repoDir.toString();
    }

    private final Random random = new Random(7);

    private static OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse> harness(
            GpuInference inference) throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(inference.settings()),
                InferenceTypes.REQUEST.createSerializer(null));
    }

    private static GpuInference.Builder builder(String repo) {
        return GpuInference.builder().modelRepository(repo).maxBatchSize(8).maxEnqueuedBatches(1000);
    }

    private InferenceRequest request(String id, int samples) {
        float[] values = new float[samples * 4];
        for (int i = 0; i < values.length; i++) {
            values[i] = random.nextFloat() * 2 - 1;
        }
        return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("x", new long[] {samples, 4}, values)),
                RequestParameters.DEFAULTS);
    }

    /** Runs mail (batch completions) until the predicate holds or the time is up. */
    private static void runMailUntil(OneInputStreamOperatorTestHarness<?, InferenceResponse> h, int responses)
            throws Exception {
        Mailboxes.runUntil(h, () -> h.extractOutputValues().size() >= responses);
    }

    private static Map<String, InferenceResponse> byId(List<InferenceResponse> responses) {
        return responses.stream().collect(Collectors.toMap(InferenceResponse::id, r -> r));
    }

    @Test
    void batchedOutputsEqualRunningEachRequestAlone() throws Exception {
        List<InferenceRequest> requests = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            requests.add(request("r" + i, 1 + i % 3));
        }
        List<InferenceResponse> out;
        try (var h = harness(builder(REPO).maxQueueDelay(Duration.ofHours(1)).build())) {
            h.open();
            for (InferenceRequest r : requests) {
                h.processElement(new StreamRecord<>(r));
            }
            h.endInput();
            out = h.extractOutputValues();
        }
        assertThat(out).hasSize(requests.size());
        Map<String, InferenceResponse> responses = byId(out);
        assertThat(responses.values()).allSatisfy(r -> assertThat(r.isError()).isFalse());
        assertThat(responses.values()).anySatisfy(r -> assertThat(r.timings().batchSize()).isGreaterThan(1));
        assertThat(responses.values()).allSatisfy(r -> assertThat(r.timings().batchSize()).isLessThanOrEqualTo(8));

        try (OnnxModel alone = OnnxModel.load(new ModelId(MODEL, "1"),
                Path.of(REPO, MODEL, "1", "model.onnx"), new CpuDevice("cpu:0", 1L << 30, 1))) {
            for (InferenceRequest r : requests) {
                List<Tensor> expected = alone.run(List.of(r)).get(0);
                InferenceResponse actual = responses.get(r.id());
                assertThat(actual.modelVersion()).isEqualTo("1");
                for (Tensor e : expected) {
                    assertThat(actual.output(e.name()).shape()).isEqualTo(e.shape());
                    float[] a = actual.output(e.name()).asFloats();
                    float[] x = e.asFloats();
                    for (int i = 0; i < x.length; i++) {
                        assertThat(a[i]).isCloseTo(x[i], org.assertj.core.data.Offset.offset(1e-5f));
                    }
                }
            }
        }
    }

    @Test
    void boundedInputLosesNoTail() throws Exception {
        try (var h = harness(builder(REPO).maxQueueDelay(Duration.ofHours(1)).build())) {
            h.open();
            for (int i = 0; i < 21; i++) { // two full batches of 8 and a tail of 5
                h.processElement(new StreamRecord<>(request("t" + i, 1)));
            }
            runMailUntil(h, 16);
            assertThat(h.extractOutputValues()).hasSize(16); // the tail waits for more input ...
            h.endInput();
            assertThat(h.extractOutputValues()).hasSize(21); // ... and is flushed at the end
            assertThat(byId(h.extractOutputValues())).containsKeys("t0", "t20");
        }
    }

    @Test
    void queuedRequestsSurviveSnapshotAndRestore() throws Exception {
        GpuInference inference = builder(REPO).maxQueueDelay(Duration.ofHours(1)).build();
        OperatorSubtaskState snapshot;
        try (var h = harness(inference)) {
            h.open();
            for (int i = 0; i < 5; i++) {
                h.processElement(new StreamRecord<>(request("q" + i, 1)));
            }
            assertThat(h.extractOutputValues()).isEmpty();
            snapshot = h.snapshot(1L, 1L);
            // the job fails here: the queued requests are never answered by this instance
        }
        try (var h = harness(inference)) {
            h.setup();
            h.initializeState(snapshot);
            h.open();
            h.processElement(new StreamRecord<>(request("after", 1)));
            h.endInput();
            assertThat(byId(h.extractOutputValues()).keySet())
                    .containsExactlyInAnyOrder("q0", "q1", "q2", "q3", "q4", "after");
            assertThat(h.extractOutputValues()).allSatisfy(r -> assertThat(r.isError()).isFalse());
        }
    }

    @Test
    void delayClosesPartialBatchWithoutEndOfInput() throws Exception {
        try (var h = harness(builder(REPO).maxQueueDelay(Duration.ofMillis(5)).build())) {
            h.open();
            h.processElement(new StreamRecord<>(request("lonely", 1)));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (h.extractOutputValues().isEmpty() && System.nanoTime() < deadline) {
                h.setProcessingTime(h.getProcessingTime() + 1); // fires the batcher's delay timer
                Mailboxes.runPending(h);
                Thread.sleep(1);
            }
            assertThat(h.extractOutputValues()).singleElement()
                    .satisfies(r -> assertThat(r.timings().batchSize()).isEqualTo(1));
        }
    }

    @Test
    void invalidRequestsAreAnsweredWithTheirErrorCode() throws Exception {
        try (var h = harness(builder(REPO).maxQueueDelay(Duration.ofHours(1)).build())) {
            h.open();
            h.processElement(new StreamRecord<>(new InferenceRequest("unknown", "nope", null,
                    List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)), null)));
            h.processElement(new StreamRecord<>(new InferenceRequest("shape", MODEL, null,
                    List.of(Tensor.ofFloats("x", new long[] {1, 3}, 1, 2, 3)), null)));
            h.processElement(new StreamRecord<>(request("fine", 1)));
            h.endInput();
            Map<String, InferenceResponse> out = byId(h.extractOutputValues());
            assertThat(out.get("unknown").error().code()).isEqualTo(ErrorCode.UNKNOWN_MODEL);
            assertThat(out.get("shape").error().code()).isEqualTo(ErrorCode.SHAPE_MISMATCH);
            assertThat(out.get("fine").isError()).isFalse();
        }
    }

    @Test
    void modelThatCannotLoadAnswersEveryRequestWithModelLoadFailed(@TempDir Path repo) throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Files.copy(Path.of(TEST_MODELS, MODEL, "config.json"), repo.resolve(MODEL).resolve("config.json"));
        Files.write(dir.resolve("model.onnx"), new byte[] {1, 2, 3, 4}); // not an ONNX model
        try (var h = harness(builder(repo.toString()).maxQueueDelay(Duration.ofHours(1)).build())) {
            h.open();
            for (int i = 0; i < 3; i++) {
                h.processElement(new StreamRecord<>(request("m" + i, 1)));
            }
            h.endInput();
            assertThat(h.extractOutputValues()).hasSize(3)
                    .allSatisfy(r -> assertThat(r.error().code()).isEqualTo(ErrorCode.MODEL_LOAD_FAILED));
        }
    }

    @Test
    void backpressureStopsTakingInputUntilBatchesComplete() throws Exception {
        // One full batch may wait; more input must first let executing batches complete.
        // (one execution thread: the bound below counts one executing batch)
        GpuInference inference = GpuInference.builder().modelRepository(REPO).maxBatchSize(4).maxEnqueuedBatches(1)
                .maxQueueDelay(Duration.ofHours(1)).executionThreads(1).build();
        Map<String, Integer> seen = new HashMap<>();
        try (var h = harness(inference)) {
            h.open();
            for (int i = 0; i < 40; i++) {
                h.processElement(new StreamRecord<>(request("b" + i, 1)));
                // while processing input the operator itself ran completions: responses appear
                // before the end of input even though nobody else runs the mailbox
                seen.put("b" + i, h.extractOutputValues().size());
            }
            h.endInput();
            assertThat(h.extractOutputValues()).hasSize(40);
        }
        assertThat(seen.get("b39")).isGreaterThanOrEqualTo(40 - 4 - 4 - 1);
    }

    @Test
    void variableLengthInputsAreGroupedByShapeAndStackedCorrectly() throws Exception {
        List<InferenceRequest> requests = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            int length = 2 + i % 3; // sequences of 2, 3 and 4 tokens interleaved
            long[] tokens = new long[length];
            for (int t = 0; t < length; t++) {
                tokens[t] = random.nextInt(1000);
            }
            requests.add(new InferenceRequest("s" + i, "seq-sum", null,
                    List.of(Tensor.ofLongs("tokens", new long[] {1, length}, tokens)), null));
        }
        try (var h = harness(GpuInference.builder().modelRepository(TEST_MODELS).build())) {
            h.open();
            for (InferenceRequest r : requests) {
                h.processElement(new StreamRecord<>(r));
            }
            h.endInput();
            Map<String, InferenceResponse> out = byId(h.extractOutputValues());
            assertThat(out).hasSize(requests.size());
            for (InferenceRequest r : requests) {
                long expected = java.util.Arrays.stream(r.input("tokens").asLongs()).sum();
                InferenceResponse response = out.get(r.id());
                assertThat(response.isError()).as("%s", response).isFalse();
                assertThat(response.output("total").asLongs()).containsExactly(expected);
            }
            assertThat(out.values()).anySatisfy(r -> assertThat(r.timings().batchSize()).isGreaterThan(1));
        }
    }

    @Test
    void executingBatchesAreInTheSnapshotAndRunAgainAfterRestore() throws Exception {
        GpuInference inference = builder(REPO).maxQueueDelay(Duration.ofHours(1)).build();
        OperatorSubtaskState snapshot;
        try (var h = harness(inference)) {
            h.open();
            for (int i = 0; i < 8; i++) { // a full batch: dispatched to the execution thread at once
                h.processElement(new StreamRecord<>(request("e" + i, 1)));
            }
            h.processElement(new StreamRecord<>(request("queued", 1)));
            // the batch's results wait in the mailbox: for the operator it is still executing
            snapshot = h.snapshot(1L, 1L);
            assertThat(h.extractOutputValues()).isEmpty();
        }
        try (var h = harness(inference)) {
            h.setup();
            h.initializeState(snapshot);
            h.open();
            h.endInput();
            assertThat(byId(h.extractOutputValues()).keySet()).containsExactlyInAnyOrder(
                    "e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7", "queued");
        }
    }
}
