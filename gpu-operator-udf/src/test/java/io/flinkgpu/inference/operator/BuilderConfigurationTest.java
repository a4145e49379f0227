package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Modifier;
import java.util.Arrays;
import java.util.Map;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** The builder's {@code configuration(...)} takes every option of {@link GpuInferenceOptions}, with no list to keep. */
class BuilderConfigurationTest {
    @Test
    void everyOptionButThePrefixStandInIsCopied() {
        long declared = Arrays.stream(GpuInferenceOptions.class.getFields())
                .filter(f -> Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType()))
                .count();
        assertThat(GpuInferenceOptions.all()).hasSize((int) declared - 1)
                .doesNotContain(GpuInferenceOptions.CONTROL_VERIFY_KEYS)
                .contains(GpuInferenceOptions.QUEUE_AWARE_ROUTING, GpuInferenceOptions.MAX_ISOLATED_CULPRITS,
                        GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE);
        Configuration flink = Configuration.fromMap(Map.of("inference.execution.max-isolated-culprits", "5",
                "inference.execution-threads", "3", "inference.routing.queue-aware", "false"));
        InferenceSettings settings = GpuInference.builder().configuration(flink).build().settings();
        assertThat(settings.maxIsolatedCulprits()).isEqualTo(5);
        assertThat(settings.executionThreads()).isEqualTo(3);
        assertThat(settings.queueAwareRouting()).isFalse();
    }
}
