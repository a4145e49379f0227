package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.device.DeviceKind;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** inference.execution-threads: the option where set, else sized from the subtask's device. */
class ExecutionThreadsTest {
    private static final String MODEL = "affine-fp32";

    @TempDir
    Path repo;

    private static InferenceSettings settings(Map<String, String> options) {
        return InferenceSettings.fromConfiguration(Configuration.fromMap(options));
    }

    @Test
    void unsetTheCountComesFromTheDevice() {
        InferenceSettings unset = settings(Map.of());
        assertThat(unset.executionThreads()).isEqualTo(InferenceSettings.THREADS_FROM_DEVICE);
        // the CPU: the cores the runtime may count on, less one for the task's own threads, over the
        // cores one run takes
        assertThat(unset.executionThreads(DeviceKind.CPU, 4)).isEqualTo(3);
        assertThat(unset.executionThreads(DeviceKind.CPU, 2)).isEqualTo(1);
        assertThat(unset.executionThreads(DeviceKind.CPU, 1)).isEqualTo(1);
        InferenceSettings twoIntraOp = settings(Map.of("inference.device.intra-op-threads", "2"));
        assertThat(twoIntraOp.executionThreads(DeviceKind.CPU, 5)).isEqualTo(2);
        assertThat(twoIntraOp.executionThreads(DeviceKind.CPU, 4)).isEqualTo(1);
        assertThat(twoIntraOp.executionThreads(DeviceKind.CPU, 1)).isEqualTo(1);
        // a GPU, real or simulated: one, whatever the host's cores
        assertThat(unset.executionThreads(DeviceKind.CUDA, 8)).isEqualTo(1);
        assertThat(unset.executionThreads(DeviceKind.SIMULATED, 64)).isEqualTo(1);
    }

    @Test
    void aSetCountIsUsedOnEveryDeviceAndZeroIsRefused() {
        InferenceSettings three = settings(Map.of("inference.execution-threads", "3"));
        for (DeviceKind kind : DeviceKind.values()) {
            assertThat(three.executionThreads(kind, 16)).isEqualTo(3);
        }
        assertThatThrownBy(() -> settings(Map.of("inference.execution-threads", "0")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.execution-threads must be at least 1");
    }

    @Test
    void unsetOnTheCpuTheCoreKeptForTheTaskTakesLongBatches() {
        InferenceSettings unset = settings(Map.of());
        ExecutionSlots two = unset.executionSlots(DeviceKind.CPU, 2);
        assertThat(two).isEqualTo(new ExecutionSlots(1, 1, 1_000_000));
        assertThat(two.poolSize()).isEqualTo(2);
        assertThat(unset.executionSlots(DeviceKind.CPU, 4)).isEqualTo(new ExecutionSlots(3, 1, 1_000_000));
        // nothing to lend: one core, or less than one run's intra-op threads left beside the threads
        assertThat(unset.executionSlots(DeviceKind.CPU, 1)).isEqualTo(ExecutionSlots.of(1));
        InferenceSettings twoIntraOp = settings(Map.of("inference.device.intra-op-threads", "2"));
        assertThat(twoIntraOp.executionSlots(DeviceKind.CPU, 3)).isEqualTo(ExecutionSlots.of(1));
        assertThat(twoIntraOp.executionSlots(DeviceKind.CPU, 4)).isEqualTo(new ExecutionSlots(1, 1, 1_000_000));
        // a GPU, or a set count: never lent
        assertThat(unset.executionSlots(DeviceKind.CUDA, 8)).isEqualTo(ExecutionSlots.of(1));
        assertThat(unset.executionSlots(DeviceKind.SIMULATED, 8)).isEqualTo(ExecutionSlots.of(1));
        assertThat(settings(Map.of("inference.execution-threads", "1")).executionSlots(DeviceKind.CPU, 8))
                .isEqualTo(ExecutionSlots.of(1));
        // the threshold as configured
        String threshold = "inference.execution-threads.reserved-core-min-sample-time";
        assertThat(settings(Map.of(threshold, "250 micro")).executionSlots(DeviceKind.CPU, 2))
                .isEqualTo(new ExecutionSlots(1, 1, 250_000));
        assertThatThrownBy(() -> settings(Map.of(threshold, "-1 ms")))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(threshold);
    }

    @Test
    void aBatchOnTheReservedCoreMustBeLongAndTheThreadsTakeAny() {
        ExecutionSlots slots = new ExecutionSlots(2, 1, 5_000);
        assertThat(slots.minSampleNanos(0, 0)).isZero();
        assertThat(slots.minSampleNanos(1, 0)).isZero();
        assertThat(slots.minSampleNanos(2, 0)).isEqualTo(5_000); // the threads busy: a long batch only
        assertThat(slots.minSampleNanos(3, 1)).isEqualTo(ExecutionSlots.NONE);
        // a long batch on the reserved core leaves the threads to any batch
        assertThat(slots.minSampleNanos(1, 1)).isZero();
        assertThat(slots.minSampleNanos(2, 1)).isZero();
        assertThat(ExecutionSlots.of(1).minSampleNanos(1, 0)).isEqualTo(ExecutionSlots.NONE);
        // a threshold of 0: any batch takes the reserved core, and it is still one core
        ExecutionSlots any = new ExecutionSlots(1, 1, 0);
        assertThat(any.minSampleNanos(1, 0)).isZero();
        assertThat(any.threadsBusy(1, 0)).isTrue();
        assertThat(any.minSampleNanos(2, 1)).isEqualTo(ExecutionSlots.NONE);
        assertThat(any.threadsBusy(0, 0)).isFalse();
        assertThatThrownBy(() -> new ExecutionSlots(0, 1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aTaskSlotCountsItsShareOfTheCores() {
        int cores = Runtime.getRuntime().availableProcessors();
        assertThat(InferenceSettings.coresPerSlot(1)).isEqualTo(cores);
        assertThat(InferenceSettings.coresPerSlot(cores * 2)).isEqualTo(1);
        assertThat(InferenceSettings.coresPerSlot(0)).isEqualTo(cores);
    }

    private GpuInference inference(Integer threads) throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Path source = Path.of("src/test/resources/models").resolve(MODEL);
        if (!Files.exists(dir.resolve("model.onnx"))) {
            Files.copy(source.resolve("1/model.onnx"), dir.resolve("model.onnx"));
            Files.copy(source.resolve("config.json"), repo.resolve(MODEL).resolve("config.json"));
        }
        GpuInference.Builder b = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(1)
                .maxQueueDelay(Duration.ZERO).maxEnqueuedBatches(100)
                .simulatedDevices(1, MemorySize.parse("64m"), "150+0*b");
        if (threads != null) {
            b.executionThreads(threads);
        }
        return b.build();
    }

    /** The queue waits of two requests that arrive together, in order. */
    private List<Double> queueWaits(GpuInference inference) throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(inference.settings()),
                InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            h.processElement(new StreamRecord<>(request("a")));
            h.processElement(new StreamRecord<>(request("b")));
            // run the batches' mails as they come, without ending the input (which flushes the queue)
            Mailboxes.runUntil(h, () -> h.extractOutputValues().size() >= 2);
            List<InferenceResponse> out = h.extractOutputValues();
            assertThat(out).hasSize(2).allSatisfy(r -> assertThat(r.isError()).as(r.id()).isFalse());
            return out.stream().sorted(Comparator.comparing(InferenceResponse::id))
                    .map(r -> r.timings().queueMs()).toList();
        }
    }

    private static InferenceRequest request(String id) {
        return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)),
                RequestParameters.DEFAULTS);
    }

    /**
     * {@code n} requests of slow-square (768^3 multiply-adds, milliseconds on one core) that arrive
     * together, on the CPU with execution-threads unset, after one request taught the batcher the
     * model's run time; returns each one's start after the first's ({@link LentCoreChecks#starts}).
     */
    private double[] startsOverRunTime(String reservedCoreThreshold, int n) throws Exception {
        return startsOverRunTime(reservedCoreThreshold, n, null);
    }

    /** As {@link #startsOverRunTime(String, int)}, the operator's metrics recorded in {@code metrics} (null: not). */
    private double[] startsOverRunTime(String reservedCoreThreshold, int n, RecordedMetrics metrics) throws Exception {
        String model = "slow-square";
        Path dir = Files.createDirectories(repo.resolve(model).resolve("1"));
        Path source = Path.of("src/test/resources/models").resolve(model);
        if (!Files.exists(dir.resolve("model.onnx"))) {
            Files.copy(source.resolve("1/model.onnx"), dir.resolve("model.onnx"));
            Files.copy(source.resolve("config.json"), repo.resolve(model).resolve("config.json"));
        }
        Configuration options = Configuration.fromMap(Map.of(
                "inference.execution-threads.reserved-core-min-sample-time", reservedCoreThreshold));
        GpuInference inference = GpuInference.builder().configuration(options).modelRepository(repo.toString())
                .maxBatchSize(1).maxQueueDelay(Duration.ZERO).maxEnqueuedBatches(100).deviceType("cpu").build();
        var factory = new GpuInferenceOperatorFactory(inference.settings());
        var serializer = InferenceTypes.REQUEST.createSerializer(null);
        try (var h = metrics == null ? new OneInputStreamOperatorTestHarness<>(factory, serializer)
                : new OneInputStreamOperatorTestHarness<>(factory, serializer, metrics.environment("GPU inference"))) {
            h.open();
            h.processElement(new StreamRecord<>(LentCoreChecks.request("warm", 1)));
            Mailboxes.runUntil(h, () -> h.extractOutputValues().size() >= 1);
            for (int i = 0; i < n; i++) {
                h.processElement(new StreamRecord<>(LentCoreChecks.request("r" + i, i + 2)));
            }
            Mailboxes.runUntil(h, () -> h.extractOutputValues().size() >= n + 1);
            return LentCoreChecks.starts(h.extractOutputValues().subList(1, n + 1).stream()
                    .sorted(Comparator.comparing(InferenceResponse::id)).toList());
        }
    }

    @Test
    void onTheCpuALongBatchTakesTheCoreKeptForTheTaskWhileTheThreadIsBusy() throws Exception {
        LentCoreChecks.check(this::startsOverRunTime);
    }

    @Test
    void theBatchesOnTheCoreKeptForTheTaskAreCounted() throws Exception {
        // the second request arrives while the first runs (completions wait in the harness's mailbox):
        // with a core to lend it starts there, and the counter says so; with the threshold out of reach it waits
        RecordedMetrics lent = new RecordedMetrics();
        startsOverRunTime("1 ms", 2, lent);
        assertThat(lent.count("gpu_inference.reservedCoreBatches"))
                .isEqualTo(Runtime.getRuntime().availableProcessors() >= 2 ? 1L : 0L);
        RecordedMetrics kept = new RecordedMetrics();
        startsOverRunTime("1 h", 2, kept);
        assertThat(kept.count("gpu_inference.reservedCoreBatches")).isZero();
    }

    @Test
    void onASimulatedGpuOneBatchRunsAtATimeUnlessTheOptionSaysMore() throws Exception {
        // unset: one execution thread, so "b" waits for "a"'s whole 150 ms run
        List<Double> sized = queueWaits(inference(null));
        assertThat(sized.get(1) - sized.get(0)).isGreaterThan(120);
        // two: "b" starts as "a" does
        List<Double> two = queueWaits(inference(2));
        assertThat(two.get(1) - two.get(0)).isLessThan(60);
    }
}
