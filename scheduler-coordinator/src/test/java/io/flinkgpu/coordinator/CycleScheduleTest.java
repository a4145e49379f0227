package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class CycleScheduleTest {
    @Test
    void theNextCycleComesSoonerOnlyWhileARouteWaitsForItsLoad() {
        CycleSchedule defaults = CycleSchedule.fromConfig(new Configuration());
        assertThat(defaults.delayAfter(0)).isEqualTo(Duration.ofSeconds(5));
        assertThat(defaults.delayAfter(1)).isEqualTo(Duration.ofSeconds(1));
        assertThat(defaults.delayAfter(7)).isEqualTo(Duration.ofSeconds(1));
        // a warm check at or above the interval changes nothing
        CycleSchedule slow = CycleSchedule.fromConfig(Configuration.fromMap(Map.of("coordinator.interval", "2 s",
                "coordinator.plan.warm-check-interval", "3 s")));
        assertThat(slow.delayAfter(3)).isEqualTo(Duration.ofSeconds(2));
        assertThatThrownBy(() -> CycleSchedule.fromConfig(Configuration.fromMap(Map.of(
                "coordinator.plan.warm-check-interval", "0 s"))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("warm-check-interval");
    }
}
