package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class ParallelismPlannerTest {
    static final long NOW = 10_000_000;
    final ParallelismPlanner planner = new ParallelismPlanner(3, 0, 0.8, 0.7, 0.15, Duration.ofMinutes(5));

    static SlotLoad device(String id, double utilization, double busy) {
        return new SlotLoad(id, utilization, busy);
    }

    private Optional<Integer> target(List<SlotLoad> devices, int parallelism) {
        return planner.plan(devices, parallelism, NOW, Long.MIN_VALUE).flatMap(ParallelismPlanner.Result::parallelism);
    }

    @Test
    void anOperatorBoundDeviceAddsOneSlotOnEveryDevice() {
        List<SlotLoad> devices = List.of(device("sim:0", 0.3, 0.95), device("sim:1", 0.2, 0.4));
        ParallelismPlanner.Result r = planner.plan(devices, 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(6);
        assertThat(r.decision().action()).isEqualTo("PARALLELISM");
        assertThat(r.decision().reason()).contains("parallelism 4 -> 6", "sim:0 (subtasks busy 0.95 >= 0.80",
                "0.30 < target 0.70", "3 slots per device");
    }

    @Test
    void aBusyDeviceIsNotOperatorBoundAndGetsNoSlot() {
        // the GPU itself is the bottleneck: more subtasks would not help; placement moves models instead
        assertThat(target(List.of(device("sim:0", 0.9, 0.95), device("sim:1", 0.2, 0.1)), 2)).isEmpty();
    }

    @Test
    void idleSubtasksGiveASlotBackOnlyBelowTheThresholdLessHysteresis() {
        // 3 slots, busiest 0.40: with 2 it would be 0.60 < 0.68
        assertThat(target(List.of(device("sim:0", 0.2, 0.40), device("sim:1", 0.2, 0.3)), 6))
                .hasValue(4);
        // busiest 0.50: 0.75 with one slot fewer, not below 0.68
        assertThat(target(List.of(device("sim:0", 0.2, 0.50), device("sim:1", 0.2, 0.3)), 6))
                .isEmpty();
        assertThat(target(List.of(device("sim:0", 0.0, 0.0), device("sim:1", 0.0, 0.0)), 2))
                .as("never below one slot per device").isEmpty();
    }

    @Test
    void everyGpuGetsASlotAndUnevenSpreadsAreEvenedOut() {
        ParallelismPlanner fourGpus = new ParallelismPlanner(3, 4, 0.8, 0.7, 0.15, Duration.ofMinutes(5));
        ParallelismPlanner.Result r = fourGpus.plan(List.of(device("sim:0", 0.1, 0.1), device("sim:1", 0.1, 0.1)),
                2, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(4);
        assertThat(r.decision().reason()).contains("4 GPUs but 2 inference subtasks");
        assertThat(target(List.of(device("sim:0", 0.1, 0.5), device("sim:1", 0.1, 0.5)), 3)).hasValue(4);
    }

    @Test
    void atTheSlotLimitOrWithinTheIntervalItHoldsWithAReason() {
        List<SlotLoad> saturated = List.of(device("sim:0", 0.3, 0.95), device("sim:1", 0.3, 0.9));
        ParallelismPlanner.Result atLimit = planner.plan(saturated, 6, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(atLimit.parallelism()).isEmpty();
        assertThat(atLimit.decision().action()).isEqualTo("HOLD");
        assertThat(atLimit.decision().reason()).contains("already at 3 slots per device");

        List<SlotLoad> busy = List.of(device("sim:0", 0.3, 0.95), device("sim:1", 0.3, 0.9));
        ParallelismPlanner.Result recent = planner.plan(busy, 2, NOW, NOW - 60_000).orElseThrow();
        assertThat(recent.parallelism()).isEmpty();
        assertThat(recent.decision().reason()).contains("2 -> 4", "60 s ago < 300 s");
        assertThat(planner.plan(busy, 2, NOW, NOW - 300_000).orElseThrow().parallelism()).hasValue(4);
    }
}
