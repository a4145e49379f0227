package io.flinkgpu.inference.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.util.List;
import org.junit.jupiter.api.Test;

/** On a machine without a GPU (the normal case) the probe reports none and devices fall back. */
class CudaProbeTest {
    static final long MIB = 1L << 20;

    private static DeviceSettings settings(String type) {
        return new DeviceSettings(type, 256 * MIB, 0.9, 1, 2, 512 * MIB, "cpu*1", List.of("fashion-mnist-cnn=2+0.1*b"));
    }

    @Test
    void probeOnThisMachineReportsNoCudaWithAReasonAndNeverThrows() {
        assumeFalse(System.getenv().containsKey("EXPECT_CUDA"), "a GPU machine");

        CudaProbe.Result result = CudaProbe.get();

        assertThat(result.available()).isFalse();
        assertThat(result.gpus()).isEmpty();
        assertThat(result.reason()).isNotBlank();
        assertThat(CudaProbe.get()).as("probed once").isSameAs(result);
        assertThat(CudaProbe.probe().reason()).isEqualTo(result.reason());
    }

    @Test
    void autoAndCudaRunOnTheCpuWithoutAGpu() {
        assumeFalse(CudaProbe.get().available());

        for (String type : List.of("auto", "cuda", "AUTO")) {
            Device device = settings(type).createDevice(3);
            assertThat(device.kind()).as(type).isEqualTo(DeviceKind.CPU);
            assertThat(device.id()).isEqualTo("cpu:3");
            assertThat(device.totalMemoryBytes()).isEqualTo(256 * MIB);
        }
    }

    @Test
    void simulatedDevicesAreSharedBySubtasksThatLandOnThem() {
        DeviceSettings s = settings("simulated");

        Device d0 = s.createDevice(0);
        Device d1 = s.createDevice(1);
        Device d2 = s.createDevice(2);

        assertThat(d0.kind()).isEqualTo(DeviceKind.SIMULATED);
        assertThat(d0.id()).isEqualTo("sim:0");
        assertThat(d1.id()).isEqualTo("sim:1");
        assertThat(d2).as("subtask 2 of 2 devices shares sim:0").isSameAs(d0);
        assertThat(d0.totalMemoryBytes()).isEqualTo(512 * MIB);
        assertThat(((SimulatedDevice) d0).speedOf("fashion-mnist-cnn")).isEqualTo(SpeedModel.linear(2, 0.1));
        assertThat(((SimulatedDevice) d0).speedOf("other")).isEqualTo(SpeedModel.cpuMultiple(1));
        assertThat(settings("cpu").createDevice(1).kind()).isEqualTo(DeviceKind.CPU);
    }

    @Test
    void badDeviceSettingsAreRejectedUpFront() {
        assertThatThrownBy(() -> settings("tpu")).hasMessageContaining("auto, cuda, cpu, simulated");
        assertThatThrownBy(() -> new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "warp speed", List.of()))
                .hasMessageContaining("speed model");
        assertThatThrownBy(() -> new DeviceSettings("simulated", MIB, 0.9, 1, 1, MIB, "1", List.of("no-equals")))
                .hasMessageContaining("model=speed");
        assertThatThrownBy(() -> new DeviceSettings("cuda", MIB, 1.5, 1, 1, MIB, "1", List.of()))
                .hasMessageContaining("fraction");
    }

    @Test
    void nvidiaSmiCsvIsParsedWithUnknownValuesAsNaN() {
        String out = "0, 87, 64, 312.45, 40321, 143771\n"
                + "1, [N/A], 35, [Not Supported], 0, 143771\n"
                + "WARNING: infoROM is corrupted at gpu 0000:01:00.0\n";

        List<NvidiaSmi.Sample> samples = NvidiaSmi.parse(out);

        assertThat(samples).hasSize(2);
        assertThat(samples.get(0)).isEqualTo(new NvidiaSmi.Sample(0, 87, 64, 312.45, 40321, 143771));
        assertThat(samples.get(1).utilizationPercent()).isNaN();
        assertThat(samples.get(1).powerWatts()).isNaN();
        assertThat(samples.get(1).temperatureCelsius()).isEqualTo(35);
    }
}
