package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class QueueAwareRoutingOptionTest {
    @Test
    void onByDefaultAndOffFromAFlinkConfigurationOrTheBuilder() {
        assertThat(GpuInference.builder().build().settings().queueAwareRouting()).isTrue();
        assertThat(InferenceSettings.fromConfiguration(new Configuration()).queueAwareRouting()).isTrue();
        Configuration off = Configuration.fromMap(Map.of("inference.routing.queue-aware", "false"));
        assertThat(InferenceSettings.fromConfiguration(off).queueAwareRouting()).isFalse();
        // the job hands its whole configuration to the builder: the option must come through it
        assertThat(GpuInference.builder().configuration(off).build().settings().queueAwareRouting()).isFalse();
        assertThat(GpuInference.builder().queueAwareRouting(false).build().settings().queueAwareRouting()).isFalse();
    }
}
