package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.device.Device;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/**
 * {@code inference.device.slot-weights}: read and checked when the job is built (a wrong count,
 * a weight that is not a positive number, or one that is not a number at all is a configuration
 * error then, never a failed task), and the device each subtask picks from it.
 */
class SlotWeightsOptionTest {

    static Configuration simulated(int devices, String weights) {
        Configuration c = Configuration.fromMap(Map.of("inference.device.type", "simulated",
                "inference.device.simulated.count", String.valueOf(devices), "inference.device.simulated.memory", "64m"));
        if (weights != null) {
            c.setString(GpuInferenceOptions.DEVICE_SLOT_WEIGHTS.key(), weights);
        }
        return c;
    }

    @Test
    void weightsThreeToOneGiveDeviceZeroThreeOfFourSubtasks() {
        InferenceSettings settings = InferenceSettings.fromConfiguration(simulated(2, "3;1"));
        assertThat(settings.device().slotWeights()).containsExactly(3.0, 1.0);
        List<String> devices = new ArrayList<>();
        for (int s = 0; s < 4; s++) {
            Device d = settings.createDevice(s, 4, List.of());
            devices.add(d.id());
        }
        assertThat(devices).containsExactly("sim:0", "sim:1", "sim:0", "sim:0");
        // the same subtasks at parallelism 2 (before a rescale to 4): one on each
        assertThat(settings.createDevice(1, 2, List.of()).id()).isEqualTo("sim:1");
        // subtasks of one device share its instance
        assertThat(settings.createDevice(2, 4, List.of())).isSameAs(settings.createDevice(0, 4, List.of()));
    }

    @Test
    void withoutWeightsSubtaskIUsesDeviceIModN() {
        InferenceSettings settings = InferenceSettings.fromConfiguration(simulated(2, null));
        assertThat(settings.device().slotWeights()).isEmpty();
        for (int s = 0; s < 5; s++) {
            assertThat(settings.createDevice(s, 5, List.of()).id()).isEqualTo("sim:" + (s % 2));
        }
        InferenceSettings equal = InferenceSettings.fromConfiguration(simulated(2, "2;2"));
        for (int s = 0; s < 5; s++) {
            assertThat(equal.createDevice(s, 5, List.of()).id()).isEqualTo("sim:" + (s % 2));
        }
    }

    @Test
    void aWrongCountANonPositiveOrANonNumericWeightFailsTheBuildWithTheOptionNamed() {
        assertThatThrownBy(() -> InferenceSettings.fromConfiguration(simulated(2, "3")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.device.slot-weights has 1 weight(s)")
                .hasMessageContaining("inference.device.simulated.count is 2");
        assertThatThrownBy(() -> InferenceSettings.fromConfiguration(simulated(2, "3;0")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.device.slot-weights").hasMessageContaining("device 1 has weight 0.0");
        assertThatThrownBy(() -> InferenceSettings.fromConfiguration(simulated(2, "3;-1")))
                .hasMessageContaining("finite number > 0");
        assertThatThrownBy(() -> InferenceSettings.fromConfiguration(simulated(2, "3;fast")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.device.slot-weights");
        Configuration cpu = Configuration.fromMap(Map.of("inference.device.type", "cpu",
                "inference.device.slot-weights", "1;1"));
        assertThatThrownBy(() -> InferenceSettings.fromConfiguration(cpu))
                .hasMessageContaining("'cpu'");
        // the library's builder checks them when the job is built, from a Flink configuration too
        assertThatThrownBy(() -> GpuInference.builder().configuration(simulated(3, "1;2")).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.device.simulated.count is 3");
        assertThat(GpuInference.builder().simulatedDevices(2, org.apache.flink.configuration.MemorySize.parse("64m"),
                "1").slotWeights(3.0, 1.0).build().settings().device().slotWeights()).containsExactly(3.0, 1.0);
    }

    @Test
    void theOptionIsDocumented() {
        assertThat(new org.apache.flink.configuration.description.HtmlFormatter().format(
                GpuInferenceOptions.DEVICE_SLOT_WEIGHTS.description())).contains("largest remainder", "i mod the number of GPUs");
        assertThat(GpuInferenceOptions.DEVICE_SLOT_WEIGHTS.defaultValue()).isEmpty();
    }
}
