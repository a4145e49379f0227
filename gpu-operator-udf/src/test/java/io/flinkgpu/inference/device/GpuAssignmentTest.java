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
}
