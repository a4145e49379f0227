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

    // ---- devices of different speed ----------------------------------------------------------

    /** Weights 3:1, at most 6 slots per device. */
    final ParallelismPlanner threeToOne = new ParallelismPlanner(6, 0, List.of(3.0, 1.0), 0.8, 0.7, 0.15,
            Duration.ofMinutes(5));

    static SlotLoad device(String id, double utilization, double busy, Integer... subtasks) {
        return new SlotLoad(id, utilization, busy, List.of(subtasks));
    }

    @Test
    void withWeightsTheFasterDeviceGetsMoreSlotsAndTheReasonSaysHowMany() {
        // at 4 the layout is [0, 1, 0, 0]: sim:0 runs 3 subtasks, sim:1 one
        List<SlotLoad> fastBound = List.of(device("sim:0", 0.3, 0.95, 0, 2, 3), device("sim:1", 0.2, 0.4, 1));
        ParallelismPlanner.Result r = threeToOne.plan(fastBound, 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).as("the next level: 4 slots on sim:0, 1 on sim:1").hasValue(5);
        assertThat(r.decision().reason()).contains("parallelism 4 -> 5", "operator-bound: sim:0",
                "slots per device 4:1 (sim:0 4, sim:1 1; device weights 3:1)");

        // the slow device saturated: the lowest level that gives it a second slot is 7 (5:2)
        List<SlotLoad> slowBound = List.of(device("sim:0", 0.3, 0.4, 0, 2, 3), device("sim:1", 0.2, 0.95, 1));
        ParallelismPlanner.Result slow = threeToOne.plan(slowBound, 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(slow.parallelism()).hasValue(7);
        assertThat(slow.decision().reason()).contains("slots per device 5:2 (sim:0 5, sim:1 2");
        // with at most 4 slots per device no level gives it one: a hold that says why
        ParallelismPlanner capped = new ParallelismPlanner(4, 0, List.of(3.0, 1.0), 0.8, 0.7, 0.15,
                Duration.ofMinutes(5));
        ParallelismPlanner.Result held = capped.plan(slowBound, 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(held.parallelism()).isEmpty();
        assertThat(held.decision().action()).isEqualTo("HOLD");
        assertThat(held.decision().reason()).contains("no level within 4 slots per device",
                "gives sim:1 another slot");
    }

    @Test
    void withWeightsALevelIsGivenBackByEachDevicesOwnProjectedBusyTime() {
        // at 7 (5:2) the level below is 5 (4:1): sim:1 would go from 2 subtasks to 1
        List<SlotLoad> quiet = List.of(device("sim:0", 0.2, 0.3, 0, 2, 3, 4, 5), device("sim:1", 0.2, 0.3, 1, 6));
        ParallelismPlanner.Result r = threeToOne.plan(quiet, 7, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(5);
        assertThat(r.decision().reason()).contains("with slots per device 4:1", "it would be 0.60 < 0.68");
        // sim:1 at 0.4 would be 0.8 on one subtask: keep the level
        List<SlotLoad> slowBusy = List.of(device("sim:0", 0.2, 0.3, 0, 2, 3, 4, 5), device("sim:1", 0.2, 0.4, 1, 6));
        assertThat(threeToOne.plan(slowBusy, 7, NOW, Long.MIN_VALUE)).isEmpty();
    }

    @Test
    void withWeightsAParallelismBetweenLevelsIsFilledUpToItsLevel() {
        // 6 splits 5:1; level 5 is 7 (5:2)
        List<SlotLoad> devices = List.of(device("sim:0", 0.2, 0.6, 0, 2, 3, 4, 5), device("sim:1", 0.2, 0.6, 1));
        ParallelismPlanner.Result r = threeToOne.plan(devices, 6, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(7);
        assertThat(r.decision().reason()).contains("6 subtasks over 2 GPUs (5:1) are between levels");
        assertThat(ParallelismPlanner.levelParallelism(io.flinkgpu.contract.placement.SlotLayout.of(List.of(3.0, 1.0)),
                2, 3)).isEqualTo(4);
    }

    @Test
    void aJobLaidOutOtherwiseThanTheWeightsSayGetsAHold() {
        // the job runs i mod 2 (no slot weights) while the coordinator declares 3:1
        List<SlotLoad> modTwo = List.of(device("sim:0", 0.3, 0.95, 0, 2), device("sim:1", 0.3, 0.3, 1, 3));
        ParallelismPlanner.Result r = threeToOne.plan(modTwo, 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).isEmpty();
        assertThat(r.decision().action()).isEqualTo("HOLD");
        assertThat(r.decision().reason()).contains("sim:0 runs subtasks [0, 2]", "give it [0, 2, 3]",
                "inference.device.slot-weights must be the same");
        // more devices than weights
        assertThat(threeToOne.plan(List.of(device("sim:0", 0.1, 0.1), device("sim:1", 0.1, 0.1),
                device("sim:2", 0.1, 0.1)), 3, NOW, Long.MIN_VALUE).orElseThrow().decision().reason())
                .contains("reports 3 devices", "has 2 weight(s)");
    }

    @Test
    void equalWeightsPlanExactlyAsNoWeights() {
        ParallelismPlanner equal = new ParallelismPlanner(3, 0, List.of(2.0, 2.0), 0.8, 0.7, 0.15, Duration.ofMinutes(5));
        double[][] loads = {{0.3, 0.95, 0.2, 0.4}, {0.2, 0.4, 0.2, 0.3}, {0.2, 0.5, 0.2, 0.3}, {0.9, 0.95, 0.2, 0.1},
                {0.1, 0.5, 0.1, 0.5}};
        for (double[] l : loads) {
            for (int p = 1; p <= 7; p++) {
                List<SlotLoad> devices = List.of(device("sim:0", l[0], l[1]), device("sim:1", l[2], l[3]));
                assertThat(equal.plan(devices, p, NOW, Long.MIN_VALUE)).as("p=%d %s", p, java.util.Arrays.toString(l))
                        .isEqualTo(planner.plan(devices, p, NOW, Long.MIN_VALUE));
            }
        }
    }

    @Test
    void badWeightsAreAConfigurationError() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ParallelismPlanner(4, 0, List.of(1.0, -2.0), 0.8,
                0.7, 0.15, Duration.ofMinutes(5))).hasMessageContaining("coordinator.parallelism.device-weights")
                .hasMessageContaining("device 1");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ParallelismPlanner(4, 3, List.of(1.0, 2.0), 0.8,
                0.7, 0.15, Duration.ofMinutes(5))).hasMessageContaining("coordinator.parallelism.device-count is 3");
    }
}
