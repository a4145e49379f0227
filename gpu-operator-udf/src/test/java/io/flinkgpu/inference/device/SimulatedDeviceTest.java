package io.flinkgpu.inference.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.onnxruntime.OrtException;
import io.flinkgpu.inference.execution.BatchIsolation;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SimulatedDeviceTest {
    static final long MIB = 1L << 20;
    static final Path AFFINE = Path.of("src/test/resources/models/affine-fp32/1/model.onnx");

    private static InferenceRequest affineRequest(int samples) {
        return affineRequest("r", "1", samples);
    }

    private static InferenceRequest affineRequest(String id, String version, int samples) {
        float[] x = new float[samples * 4];
        for (int i = 0; i < x.length; i++) {
            x[i] = i * 0.25f - 1;
        }
        return new InferenceRequest(id, "affine-fp32", version, List.of(Tensor.ofFloats("x", new long[] {samples, 4}, x)),
                RequestParameters.DEFAULTS);
    }

    @Test
    void speedModelsParseAndPredict() {
        assertThat(SpeedModel.parse("2+0.5*b").latencyNanos(8, 123)).isEqualTo(6_000_000);
        assertThat(SpeedModel.parse(" 3 ").latencyNanos(100, 0)).isEqualTo(3_000_000);
        assertThat(SpeedModel.parse("cpu*0.25").latencyNanos(32, 4_000_000)).isEqualTo(1_000_000);
        assertThat(SpeedModel.parse("CPU*2").latencyNanos(1, 1_000)).isEqualTo(2_000);
        assertThat(SpeedModel.parse("1.5+0.05*b")).isEqualTo(SpeedModel.linear(1.5, 0.05));
        for (String bad : List.of("", "fast", "-1+2*b", "cpu*0", "1+2*x", "cpu*")) {
            assertThatThrownBy(() -> SpeedModel.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void memoryIsAccountedInWholePagesUpToTheCapacity() {
        SimulatedDevice device = new SimulatedDevice("sim:0", 8 * MIB, SpeedModel.CPU_SPEED);

        assertThat(device.reserve(1)).isTrue(); // one 2 MiB page
        assertThat(device.freeMemoryBytes()).isEqualTo(6 * MIB);
        assertThat(device.reserve(5 * MIB)).isTrue(); // three pages
        assertThat(device.freeMemoryBytes()).isZero();
        assertThat(device.reserve(1)).isFalse();
        device.release(5 * MIB);
        assertThat(device.freeMemoryBytes()).isEqualTo(6 * MIB);
        assertThat(device.telemetry().memoryUsedBytes()).isEqualTo(2 * MIB);
        assertThat(device.telemetry().memoryTotalBytes()).isEqualTo(8 * MIB);
    }

    @Test
    void loadTimeModelsParseAndPredict() {
        assertThat(LoadTimeModel.parse("50+0.5*mib").loadNanos(4 * MIB)).isEqualTo(52_000_000);
        assertThat(LoadTimeModel.parse(" 20 ").loadNanos(100 * MIB)).isEqualTo(20_000_000);
        assertThat(LoadTimeModel.parse("0").loadNanos(MIB)).isZero();
        assertThat(LoadTimeModel.parse(LoadTimeModel.DEFAULT_SPEC)).isEqualTo(LoadTimeModel.linear(50, 0.5));
        for (String bad : List.of("", "fast", "-1", "1+2*b", "1+mib")) {
            assertThatThrownBy(() -> LoadTimeModel.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class);
        }
        assertThatThrownBy(() -> new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "1", List.of(), "slow"))
                .hasMessageContaining("load time model 'slow'");
    }

    @Test
    void aLoadTakesAtLeastItsModelledTimeWhileBatchesOfLoadedModelsGoOn() throws Exception {
        SimulatedDevice device = new SimulatedDevice("sim:2", 64 * MIB, SpeedModel.CPU_SPEED, Map.of(),
                LoadTimeModel.parse("300"), 1);
        try (OnnxModel first = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device)) {
            ExecutorService loader = Executors.newSingleThreadExecutor();
            try {
                long started = System.nanoTime();
                Future<OnnxModel> second = loader.submit(() -> OnnxModel.load(new ModelId("affine-fp32", "2"), AFFINE,
                        device));
                // the loaded model keeps serving while the other one loads
                assertThat(first.run(List.of(affineRequest(2)))).hasSize(1);
                assertThat(second.isDone()).isFalse();
                try (OnnxModel loaded = second.get(10, TimeUnit.SECONDS)) {
                    assertThat(System.nanoTime() - started).isGreaterThanOrEqualTo(300_000_000L);
                    assertThat(loaded.run(List.of(affineRequest(1)))).hasSize(1);
                }
            } finally {
                loader.shutdownNow();
            }
        }
    }

    @Test
    void injectedOutOfMemoryFailsTheNextLoadsThenLoadsSucceed() throws Exception {
        SimulatedDevice device = new SimulatedDevice("sim:1", 64 * MIB, SpeedModel.CPU_SPEED);
        device.injectOutOfMemoryOnLoad(2);

        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device))
                    .isInstanceOf(DeviceOutOfMemoryException.class)
                    .hasMessageContaining("out of memory creating a session on sim:1");
        }
        try (OnnxModel model = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device)) {
            assertThat(model.run(List.of(affineRequest(2)))).hasSize(1);
        }
    }

    @Test
    void outOfMemoryIsRecognisedInOnnxRuntimeMessagesToo() {
        assertThat(DeviceOutOfMemoryException.isOutOfMemory(new OrtException(
                "Error code - ORT_RUNTIME_EXCEPTION - message: Failed to allocate memory for requested buffer of size 123")))
                .isTrue();
        assertThat(DeviceOutOfMemoryException.isOutOfMemory(new RuntimeException("wrapper",
                new OrtException("CUDA failure 2: out of memory")))).isTrue();
        assertThat(DeviceOutOfMemoryException.isOutOfMemory(new OrtException("Protobuf parsing failed"))).isFalse();
    }

    @Test
    void aLostDeviceRefusesLoadsAndBatches() throws Exception {
        SimulatedDevice device = new SimulatedDevice("sim:2", 64 * MIB, SpeedModel.CPU_SPEED);
        try (OnnxModel model = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device)) {
            device.injectDeviceLost();

            assertThat(device.isHealthy()).isFalse();
            assertThatThrownBy(() -> model.run(List.of(affineRequest(1)))).isInstanceOf(DeviceLostException.class)
                    .hasMessageContaining("sim:2 is lost");
            assertThatThrownBy(() -> OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device))
                    .isInstanceOf(DeviceLostException.class);
            assertThat(device.reserve(1)).isFalse();
        }
    }

    @Test
    void aBatchTakesItsModelledTimeAndItsOutputsAreTheCpusOutputs() throws Exception {
        SimulatedDevice slow = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.CPU_SPEED,
                Map.of("affine-fp32", SpeedModel.parse("40+5*b")), 1);
        CpuDevice cpu = new CpuDevice("cpu:0", 64 * MIB, 1);
        try (OnnxModel onSim = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, slow);
                OnnxModel onCpu = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, cpu)) {
            onSim.run(List.of(affineRequest(1))); // first run allocates; time the second
            slow.telemetry();

            long started = System.nanoTime();
            List<List<Tensor>> simulated = onSim.run(List.of(affineRequest(4)));
            long elapsedMs = (System.nanoTime() - started) / 1_000_000;

            assertThat(elapsedMs).as("40 ms + 4 x 5 ms").isGreaterThanOrEqualTo(60);
            assertThat(simulated).isEqualTo(onCpu.run(List.of(affineRequest(4))));
            assertThat(slow.telemetry().utilization()).isGreaterThan(0.0);
        }
    }

    @Test
    void concurrentBatchesQueueOnOneDeviceTimeline() throws Exception {
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.parse("50"));
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try (OnnxModel model = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device)) {
            model.run(List.of(affineRequest(1)));
            long started = System.nanoTime();
            List<Future<List<List<Tensor>>>> runs = List.of(
                    pool.submit(() -> model.run(List.of(affineRequest(1)))),
                    pool.submit(() -> model.run(List.of(affineRequest(1)))),
                    pool.submit(() -> model.run(List.of(affineRequest(1)))));
            for (Future<?> f : runs) {
                f.get(10, TimeUnit.SECONDS);
            }
            long elapsedMs = (System.nanoTime() - started) / 1_000_000;

            assertThat(elapsedMs).as("three 50 ms batches on one GPU run one after another").isGreaterThanOrEqualTo(150);
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void aBatchQueuedBehindAnotherModelsBatchCountsItsWaitApartFromItsServiceTime() throws Exception {
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.parse("5"),
                Map.of("slow", SpeedModel.parse("300")), 1);
        ExecutorService pool = Executors.newFixedThreadPool(1);
        try (OnnxModel slow = OnnxModel.load(new ModelId("slow", "1"), AFFINE, device);
                OnnxModel fast = OnnxModel.load(new ModelId("fast", "1"), AFFINE, device)) {
            DeviceWait.reset();
            fast.run(List.of(affineRequest(1)));
            assertThat(DeviceWait.takeNanos()).as("an idle device: no wait").isZero();

            Future<?> slowRun = pool.submit(() -> slow.run(List.of(affineRequest(1))));
            Thread.sleep(20); // the slow batch holds the device for about 300 ms from now on
            DeviceWait.reset();
            long started = System.nanoTime();
            fast.run(List.of(affineRequest(1)));
            long elapsed = System.nanoTime() - started;
            long waited = DeviceWait.takeNanos();
            slowRun.get(10, TimeUnit.SECONDS);

            assertThat(waited).as("queued behind the slow batch's remaining ~280 ms")
                    .isBetween(TimeUnit.MILLISECONDS.toNanos(150), TimeUnit.MILLISECONDS.toNanos(300));
            assertThat(elapsed - waited).as("its own 5 ms").isBetween(TimeUnit.MILLISECONDS.toNanos(5),
                    TimeUnit.MILLISECONDS.toNanos(60));
            assertThat(DeviceWait.takeNanos()).as("taken: zero again").isZero();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void speedsAndFailuresNameAModelOrAModelVersionTheVersionedEntryWinning() {
        Map<String, SpeedModel> speeds = DeviceSettings.modelSpeeds(List.of("m=2", " m:2 = 10+1*b", "n=cpu*3"));
        assertThat(speeds).containsOnlyKeys("m", "m:2", "n");
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.parse("1"), speeds,
                DeviceSettings.modelFailures(List.of("m:2=0.25", "n=1", "o=0")), LoadTimeModel.NONE, 1);
        assertThat(device.speedOf("m", "2")).isEqualTo(SpeedModel.linear(10, 1));
        assertThat(device.speedOf("m", "1")).isEqualTo(SpeedModel.linear(2, 0));
        assertThat(device.speedOf("m", null)).isEqualTo(SpeedModel.linear(2, 0));
        assertThat(device.speedOf("x", "2")).isEqualTo(SpeedModel.linear(1, 0));
        assertThat(device.failureShareOf("m", "2")).isEqualTo(0.25);
        assertThat(device.failureShareOf("m", "1")).isZero();
        assertThat(device.failureShareOf("n", "7")).isEqualTo(1.0);
        assertThat(device.failureShareOf("o", "1")).isZero();
        assertThat(device.toString()).contains("failing on purpose");
    }

    @Test
    void malformedSpeedAndFailureEntriesAreRefusedAtConfigurationNamingTheEntry() {
        for (String bad : List.of("m:=2", ":2=2", "m 2=2", "m:2:3=2", "m:2=fast", "=2", "no-equals")) {
            assertThatThrownBy(() -> new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "1", List.of(bad), "0",
                    List.of(), List.of())).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(DeviceSettings.MODEL_SPEEDS_KEY).hasMessageContaining("'" + bad + "'");
        }
        for (String bad : List.of("m=1.5", "m=-0.1", "m=NaN", "m=often", "m:2=", "m", "m:=0.1", "=0.1")) {
            assertThatThrownBy(() -> new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "1", List.of(), "0",
                    List.of(), List.of(bad))).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(DeviceSettings.MODEL_FAILURES_KEY).hasMessageContaining("'" + bad + "'");
        }
        assertThatThrownBy(() -> DeviceSettings.modelFailures(List.of("m:2=0.1", "m:2 =0.2")))
                .hasMessageContaining("'m:2 =0.2'").hasMessageContaining("more than once");
        // well-formed ones pass, at the bounds too
        new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "1", List.of("m:2=3+1*b"), "0", List.of(),
                List.of("m:2=0.1", "m=0", "n:1=1"));
    }

    /** Runs {@code batches} one-sample batches of m:{@code version}; the set of those that failed. */
    private static BitSet failed(SimulatedDevice device, String version, int batches, boolean withRequestIds)
            throws Exception {
        BitSet failed = new BitSet();
        int[] ran = {0};
        for (int i = 0; i < batches; i++) {
            try {
                device.execute("m", version, withRequestIds ? "req-" + i : null, 1, () -> ++ran[0]);
            } catch (SimulatedFailureException e) {
                assertThat(e).hasMessageContaining("simulated failure of m:" + version).hasMessageContaining("sim:");
                failed.set(i);
            }
        }
        assertThat(ran[0]).as("a failed batch does not run").isEqualTo(batches - failed.cardinality());
        assertThat(device.isHealthy()).isTrue();
        return failed;
    }

    private static SimulatedDevice failing(String id, Map<String, Double> failures) {
        return new SimulatedDevice(id, 64 * MIB, SpeedModel.parse("0"), Map.of(), failures, LoadTimeModel.NONE, 1);
    }

    @Test
    void aShareOfTheVersionsBatchesFailsTheSameOnesOnEveryRun() throws Exception {
        for (boolean ids : new boolean[] {true, false}) {
            BitSet first = failed(failing("sim:0", Map.of("m:2", 0.1)), "2", 2000, ids);
            BitSet second = failed(failing("sim:1", Map.of("m:2", 0.1)), "2", 2000, ids);
            assertThat(first.cardinality()).as("10%% of 2000 batches, seeded by %s", ids ? "request id" : "counter")
                    .isBetween(160, 240);
            assertThat(second).as("deterministic").isEqualTo(first);
            assertThat(failed(failing("sim:2", Map.of("m:2", 0.1)), "1", 500, ids).cardinality())
                    .as("other versions are not failed").isZero();
        }
        BitSet lot = failed(failing("sim:3", Map.of("m", 0.5, "m:2", 0.05)), "1", 2000, true);
        assertThat(lot.cardinality()).as("the model's entry for version 1").isBetween(900, 1100);
        assertThat(failed(failing("sim:4", Map.of("m", 0.5, "m:2", 0.05)), "2", 2000, true).cardinality())
                .as("the versioned entry wins").isBetween(60, 140);
        assertThat(failed(failing("sim:5", Map.of("m:2", 1.0)), "2", 50, true).cardinality()).isEqualTo(50);
        assertThat(failed(failing("sim:6", Map.of("m:2", 0.0)), "2", 50, true).cardinality()).isZero();
    }

    @Test
    void aSimulatedFailureBecomesAnErrorAnswerOfItsRequestNotAFault() throws Exception {
        SimulatedDevice device = failing("sim:7", Map.of("affine-fp32:2", 0.3));
        try (OnnxModel v2 = OnnxModel.load(new ModelId("affine-fp32", "2"), AFFINE, device);
                OnnxModel v1 = OnnxModel.load(new ModelId("affine-fp32", "1"), AFFINE, device)) {
            // which request ids fail their batch when they are first, as the device decides it
            java.util.Set<String> poisonous = new java.util.HashSet<>();
            List<String> ids = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                if (SimulatedFailures.unit("affine-fp32:2#rq" + i) < 0.3) {
                    poisonous.add("q" + i);
                }
                ids.add("q" + i);
            }
            String culprit = ids.stream().filter(poisonous::contains).findFirst().orElseThrow();
            ids.remove(culprit);
            ids.add(0, culprit);
            List<InferenceRequest> batch = new ArrayList<>();
            ids.subList(0, 16).forEach(id -> batch.add(affineRequest(id, "2", 1)));
            List<List<Tensor>> outputs = new ArrayList<>(java.util.Collections.nCopies(16, null));
            InferenceError[] errors = new InferenceError[16];
            // the operator's path for a failed run: isolation, then an error answer per culprit
            new BatchIsolation(v2::run, 16).run(batch, outputs, errors, (culprits, runs) -> { });
            assertThat(errors[0].code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
            assertThat(errors[0].message()).contains("simulated failure of affine-fp32:2");
            for (int i = 0; i < 16; i++) {
                if (errors[i] == null) {
                    assertThat(outputs.get(i)).as("answered " + i).isNotNull();
                } else {
                    assertThat(poisonous).as("only a request that fails when first fails").contains(ids.get(i));
                }
            }
            assertThat(Arrays.stream(errors).filter(e -> e == null).count()).isPositive();
            // version 1 of the same model on the same device is not failed
            assertThat(v1.run(List.of(affineRequest(culprit, "1", 1)))).hasSize(1);
            assertThat(device.isHealthy()).isTrue();
        }
    }
}
