package io.flinkgpu.coordinator.collect;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** How the collector reads the operator's metric names as Flink's REST API spells them. */
class MetricNamesTest {
    @Test
    void perTenantCountersAreReadIntoTheModelSample() {
        Map<String, Double> values = new TreeMap<>();
        String model = "GPU_inference.gpu_inference.model.cnn.version.1.";
        values.put(model + "requestsIn", 40.0);
        values.put(model + "tenant.shop.requestsIn", 30.0);
        values.put(model + "tenant.search.requestsIn", 10.0);
        values.put("GPU_inference.gpu_inference.device.sim_1.utilization", 0.25);
        values.put("busyTimeMsPerSecond", 800.0);

        SubtaskSample s = MetricCollector.subtask(3, values);

        assertThat(s.deviceId()).isEqualTo("sim:1");
        assertThat(s.busyMsPerSecond()).isEqualTo(800.0);
        assertThat(s.models()).singleElement().satisfies(m -> {
            assertThat(m.model()).isEqualTo("cnn");
            assertThat(m.requestsIn()).isEqualTo(40.0);
            assertThat(m.tenantRequestsIn()).containsExactlyInAnyOrderEntriesOf(Map.of("shop", 30.0, "search", 10.0));
        });
    }
}
