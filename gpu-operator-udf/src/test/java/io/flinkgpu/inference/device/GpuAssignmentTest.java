package io.flinkgpu.inference.device;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Which GPU a subtask uses when Flink's external-resource framework assigned it some. */
class GpuAssignmentTest {
    static final List<CudaProbe.Gpu> FOUR = List.of(new CudaProbe.Gpu(0, "A", 1L << 34), new CudaProbe.Gpu(1, "A", 1L << 34),
            new CudaProbe.Gpu(2, "B", 1L << 35), new CudaProbe.Gpu(3, "B", 1L << 35));

    @Test
    void subtasksSpreadOverTheAssignedGpusOnly() {
        assertThat(DeviceSettings.chooseGpu(0, List.of(2, 3), FOUR).ordinal()).isEqualTo(2);
        assertThat(DeviceSettings.chooseGpu(1, List.of(2, 3), FOUR).ordinal()).isEqualTo(3);
        assertThat(DeviceSettings.chooseGpu(2, List.of(2, 3), FOUR).ordinal()).isEqualTo(2);
        assertThat(DeviceSettings.chooseGpu(3, List.of(), FOUR).ordinal()).isEqualTo(3);
        assertThat(DeviceSettings.chooseGpu(1, List.of(9), FOUR).ordinal()).as("unknown assignment: all GPUs").isEqualTo(1);
    }

    @Test
    void slotWeightsGiveTheFasterGpuMoreSubtasksAndAWrongCountFallsBackToIModN() {
        // weights 1:3 over the two assigned GPUs at parallelism 4: the layout [1, 0, 1, 1]
        List<Double> weights = List.of(1.0, 3.0);
        int[] ordinals = new int[4];
        for (int s = 0; s < 4; s++) {
            ordinals[s] = DeviceSettings.chooseGpu(s, 4, weights, List.of(2, 3), FOUR).ordinal();
        }
        assertThat(ordinals).containsExactly(3, 2, 3, 3);
        // parallelism unknown (0): i mod n as before
        assertThat(DeviceSettings.chooseGpu(0, 0, weights, List.of(2, 3), FOUR).ordinal()).isEqualTo(2);
        // two weights but four GPUs to choose from: logged, i mod 4, the task keeps running
        assertThat(DeviceSettings.chooseGpu(3, 4, weights, List.of(), FOUR).ordinal()).isEqualTo(3);
        assertThat(DeviceSettings.gpuIndex(2, 4, weights, 4)).isEqualTo(2);
    }
}
