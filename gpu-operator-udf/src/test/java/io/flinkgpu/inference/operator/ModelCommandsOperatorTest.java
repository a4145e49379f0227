package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.SubtaskCommand.Action;
import io.flinkgpu.contract.metrics.MetricNames;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** An inference subtask applying the coordinator's LOAD/UNLOAD commands from the control input. */
class ModelCommandsOperatorTest {
    static final Path TEST_MODELS = Path.of("src/test/resources/models");
    static final String MODEL = "affine-fp32";
    static final ModelId ID = new ModelId(MODEL, "1");

    @TempDir
    Path repo;

    private GpuInference inference() throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        if (!Files.exists(dir.resolve("model.onnx"))) {
            Files.copy(TEST_MODELS.resolve(MODEL).resolve("1/model.onnx"), dir.resolve("model.onnx"));
            Files.copy(TEST_MODELS.resolve(MODEL).resolve("config.json"), repo.resolve(MODEL).resolve("config.json"));
        }
        return GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(4)
                .evictionTimeout(Duration.ofMillis(200))
                .simulatedDevices(1, MemorySize.parse("64m"), "1+0.1*b").build();
    }

    /** One subtask (index 0) of the two-input operator, created by its factory as Flink does. */
    static final class Harness extends AbstractStreamOperatorTestHarness<InferenceResponse> {
        /** Where the harness records its operator's metrics (null: nowhere). */
        final RecordedMetrics metrics;

        Harness(GpuInference g) throws Exception {
            this(g, (String) null);
        }

        /** A subtask publishing on the queue board {@code queueBoard} (null: none). */
        Harness(GpuInference g, String queueBoard) throws Exception {
            super(new ControlledGpuInferenceOperatorFactory(g.settings(), queueBoard), 1, 1, 0);
            metrics = null;
        }

        private Harness(GpuInference g, RecordedMetrics metrics) throws Exception {
            super(new ControlledGpuInferenceOperatorFactory(g.settings()), metrics.environment("GPU inference"));
            this.metrics = metrics;
        }

        /** A harness whose operator metrics the test can read. */
        static Harness withMetrics(GpuInference g) throws Exception {
            return new Harness(g, new RecordedMetrics());
        }

        /** The value of the gauge whose identifier ends with {@code suffix}, or null while there is none. */
        Number gauge(String suffix) {
            return metrics.gauge(suffix);
        }

        ControlledGpuInferenceOperator op() {
            return (ControlledGpuInferenceOperator) getOperator();
        }

        void processElement1(StreamRecord<InferenceRequest> r) throws Exception {
            op().processElement1(r);
        }

        void processElement2(StreamRecord<byte[]> r) {
            op().processElement2(r);
        }

        void endInput1() throws Exception {
            op().endInput();
        }
    }

    private static Harness harness(GpuInference g) throws Exception {
        return new Harness(g);
    }

    private static StreamRecord<byte[]> plan(long epoch, SubtaskCommand... commands) {
        return new StreamRecord<>(ControlMessageCodec.encode(
                ControlMessage.of(epoch, 0, 2, List.of(), List.of(commands), "test " + epoch)));
    }

    private static SubtaskCommand cmd(int subtask, Action action, String model) {
        return new SubtaskCommand(subtask, action, model, null, "test");
    }

    private static GpuInferenceOperator op(Harness h) {
        return h.op();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("waiting for " + what).isLessThan(deadline);
            Thread.sleep(20);
        }
    }

    @Test
    void loadAndUnloadCommandsForThisSubtaskApplyAndEverythingElseIsIgnored() throws Exception {
        try (var h = harness(inference())) {
            h.open();
            ModelCache cache = op(h).cache();
            ModelCommands commands = op(h).commands();

            h.processElement2(new StreamRecord<>("{garbage".getBytes(StandardCharsets.UTF_8)));
            h.processElement2(plan(3, cmd(1, Action.LOAD, MODEL), cmd(0, Action.LOAD, "no-such-model"),
                    cmd(0, Action.LOAD, MODEL)));
            await("the LOAD", () -> cache.isLoaded(ID) && commands.failedCount() == 1);
            assertThat(commands.epoch()).isEqualTo(3);
            assertThat(commands.appliedCount()).isEqualTo(1);
            assertThat(cache.pinnedModels()).containsExactly(ID);

            Thread.sleep(600); // three eviction timeouts: a pinned model stays
            cache.evictIdle();
            assertThat(cache.isLoaded(ID)).isTrue();

            h.processElement2(plan(2, cmd(0, Action.UNLOAD, MODEL))); // stale: ignored
            Thread.sleep(100);
            assertThat(cache.isLoaded(ID)).isTrue();
            assertThat(commands.ignoredCount()).isEqualTo(2);

            h.processElement2(plan(4, cmd(0, Action.UNLOAD, MODEL)));
            await("the UNLOAD", () -> !cache.isLoaded(ID));
            assertThat(cache.pinnedModels()).isEmpty();
            assertThat(commands.epoch()).isEqualTo(4);

            // requests still load the model on demand
            h.processElement1(new StreamRecord<>(new InferenceRequest("r", MODEL, null,
                    List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)), RequestParameters.DEFAULTS)));
            h.endInput1();
            assertThat(h.extractOutputValues()).singleElement().satisfies(r -> assertThat(r.isError()).isFalse());
        }
    }

    @Test
    void aLoadAheadOfTrafficShowsInTheModelsLoadedGaugeBeforeAnyRequest() throws Exception {
        String loaded = "." + String.join(".", MetricNames.GROUP, MetricNames.MODEL, MODEL, MetricNames.VERSION, "1",
                MetricNames.LOADED);
        try (var h = Harness.withMetrics(inference())) {
            h.open();
            assertThat(h.gauge(loaded)).as("no metrics for a model never loaded nor requested").isNull();
            h.processElement2(plan(1, cmd(0, Action.LOAD, MODEL)));
            // what the coordinator reads to route the new instance (coordinator.plan.warm-before-route)
            await("the loaded gauge", () -> h.gauge(loaded) != null && h.gauge(loaded).intValue() == 1);
            assertThat(op(h).cache().isLoaded(ID)).isTrue();
            assertThat(h.extractOutputValues()).isEmpty();

            h.processElement2(plan(2, cmd(0, Action.UNLOAD, MODEL)));
            await("the UNLOAD", () -> !op(h).cache().isLoaded(ID));
            assertThat(h.gauge(loaded).intValue()).isZero();
        }
    }

    @Test
    void aRestoredSubtaskLoadsItsPinnedModelsAgainAndKeepsItsEpoch() throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(inference())) {
            h.open();
            h.processElement2(plan(7, cmd(0, Action.LOAD, MODEL)));
            await("the LOAD", () -> op(h).cache().isLoaded(ID));
            snapshot = h.snapshot(1, 1);
        }
        try (var h = harness(inference())) {
            h.initializeState(snapshot);
            h.open();
            assertThat(op(h).commands().epoch()).isEqualTo(7);
            await("the restored LOAD", () -> op(h).cache().isLoaded(ID));
            assertThat(op(h).cache().pinnedModels()).containsExactly(ID);

            h.processElement2(plan(7, cmd(0, Action.UNLOAD, MODEL))); // a replay of an applied epoch
            Thread.sleep(100);
            assertThat(op(h).cache().isLoaded(ID)).isTrue();
            assertThat(op(h).commands().ignoredCount()).isEqualTo(1);
        }
    }

    @Test
    void theSubtaskPublishesWhatItHoldsOnTheQueueBoardAndUncountsWhatArrives() throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Files.copy(TEST_MODELS.resolve(MODEL).resolve("1/model.onnx"), dir.resolve("model.onnx"));
        Files.copy(TEST_MODELS.resolve(MODEL).resolve("config.json"), repo.resolve(MODEL).resolve("config.json"));
        // 50 ms per batch of at most 4, one at a time: ten requests cannot all be answered at once
        GpuInference g = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(4).executionThreads(1)
                .simulatedDevices(1, MemorySize.parse("64m"), "50+0*b").build();
        io.flinkgpu.inference.control.QueueBoard board;
        try (var h = new Harness(g, "stage")) {
            h.open();
            board = io.flinkgpu.inference.control.QueueBoard.acquire(
                    PlanRouter.boardKey(h.getEnvironment().getJobID().toString(), "stage"), 1);
            assertThat(board.parallelism()).isEqualTo(1);
            assertThat(board.outstanding(0)).isZero();
            for (int i = 0; i < 10; i++) {
                board.sent(0); // a router sent ten
            }
            assertThat(board.outstanding(0)).isEqualTo(10);
            for (int i = 0; i < 10; i++) {
                h.processElement1(new StreamRecord<>(new InferenceRequest("r" + i, MODEL, null,
                        List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, i)), RequestParameters.DEFAULTS)));
            }
            // none answered yet, none on its way: the queued requests plus one for the batch executing,
            // which holds 1 to 4 of them (as many as arrived while the model loaded)
            assertThat(board.outstanding(0)).as("queued plus one per executing batch").isBetween(7L, 10L);
            h.endInput1();
            assertThat(h.extractOutputValues()).hasSize(10);
            assertThat(board.outstanding(0)).as("all answered").isZero();
        }
        try {
            assertThat(board.outstanding(0)).as("a closed subtask leaves the board")
                    .isEqualTo(io.flinkgpu.inference.control.QueueBoard.UNKNOWN);
        } finally {
            board.release();
        }
    }
}
