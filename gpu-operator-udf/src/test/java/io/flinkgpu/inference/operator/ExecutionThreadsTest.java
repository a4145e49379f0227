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
