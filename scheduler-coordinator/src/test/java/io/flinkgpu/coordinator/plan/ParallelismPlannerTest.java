package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
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

    // ---- sizing by measured rate -------------------------------------------------------------

    /** At most 6 slots per device; threshold 0.8, hysteresis 0.15: target busy 0.74, scale-down bound 0.68. */
    final ParallelismPlanner sizing = new ParallelismPlanner(6, 0, List.of(), 0.8, 0.7, 0.15, Duration.ofMinutes(5));

    /** A device whose subtasks (all equally busy) take {@code rate} requests/s, forecast {@code forecast} (or NaN). */
    static SlotLoad rated(String id, double busy, double rate, double forecast) {
        return new SlotLoad(id, 0.3, busy, List.of(), busy, rate, forecast);
    }

    @Test
    void aSaturatedDeviceWithAForecastOfThreeTimesItsRateGetsAllItNeedsInOneDecision() {
        // busy 0.90 at 100/s on 1 slot: 111.1/s per slot fully busy; 300/s at 0.74 needs ceil(3.65) = 4 slots
        ParallelismPlanner.Result r = sizing.plan(List.of(rated("sim:0", 0.9, 100, 300)), 1, NOW, Long.MIN_VALUE)
                .orElseThrow();
        assertThat(r.parallelism()).hasValue(4);
        assertThat(r.decision().action()).isEqualTo("PARALLELISM");
        assertThat(r.decision().reason()).contains("parallelism 1 -> 4", "operator-bound: sim:0 (subtasks busy 0.90",
                "sim:0 observed 100.0/s at busy 0.90 on 1 slot(s)", "true rate 111.1/s per slot",
                "demand 300.0/s (forecast)", "required ceil(300.0 / (111.1 x 0.74)) = 4 slot(s)", "4 slots per device");

        // the step-by-step rule would have taken three decisions, five minutes apart: 1 -> 2 -> 3 -> 4
        ParallelismPlanner.Result stepped = sizing.plan(List.of(device("sim:0", 0.3, 0.9)), 1, NOW, Long.MIN_VALUE)
                .orElseThrow();
        assertThat(stepped.parallelism()).hasValue(2);

        // at 4 slots with the 300/s arrived: each 0.675 busy; 3 slots would be 0.90: it stays
        assertThat(sizing.plan(List.of(rated("sim:0", 300 / (111.1111 * 4), 300, Double.NaN)), 4, NOW + 600_000,
                NOW)).isEmpty();

        // two devices: the level is the one the hotter device needs, the other gets the same
        ParallelismPlanner.Result two = sizing.plan(List.of(rated("sim:0", 0.9, 100, 300), rated("sim:1", 0.3, 30,
                Double.NaN)), 2, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(two.parallelism()).hasValue(8);
        assertThat(two.decision().reason()).contains("sim:1 observed 30.0/s at busy 0.30", "demand 30.0/s (observed)",
                "= 1 slot(s)");
    }

    @Test
    void aForecastThatWouldSaturateTheSubtasksScalesUpBeforeTheyAre() {
        // busy 0.60 at 120/s on 2 slots: 100/s per slot; 320/s would make them 1.60 busy; 320 / 74 -> 5 slots
        ParallelismPlanner.Result r = sizing.plan(List.of(rated("sim:0", 0.6, 120, 320)), 2, NOW, Long.MIN_VALUE)
                .orElseThrow();
        assertThat(r.parallelism()).hasValue(5);
        assertThat(r.decision().reason()).contains("sim:0 (forecast 320.0/s would make its subtasks 1.60 busy >= 0.80",
                "required ceil(320.0 / (100.0 x 0.74)) = 5 slot(s)");
        // the same load without a forecast stays: 0.60 is under the threshold, and 1 slot would be 1.20
        assertThat(sizing.plan(List.of(rated("sim:0", 0.6, 120, Double.NaN)), 2, NOW, Long.MIN_VALUE)).isEmpty();
    }

    @Test
    void sizingCapsAtTheSlotLimitAndKeepsTheGuardsAndTheInterval() {
        // needs 13 slots (1000/s at 1 x 0.9 busy -> 111.1/s per slot): 6 is the most
        ParallelismPlanner.Result capped = sizing.plan(List.of(rated("sim:0", 0.9, 100, 1000)), 1, NOW,
                Long.MIN_VALUE).orElseThrow();
        assertThat(capped.parallelism()).hasValue(6);
        assertThat(capped.decision().reason()).contains("= 13 slot(s)", "6 slots per device",
                "fewer than required: coordinator.parallelism.max-slots-per-device is 6");
        // the device itself busy: no slot however many the rate asks for
        SlotLoad gpuBound = new SlotLoad("sim:0", 0.9, 0.95, List.of(), 0.95, 100, 1000);
        assertThat(sizing.plan(List.of(gpuBound), 1, NOW, Long.MIN_VALUE)).isEmpty();
        // within the interval: a hold that gives the sized target and its numbers
        ParallelismPlanner.Result held = sizing.plan(List.of(rated("sim:0", 0.9, 100, 300)), 1, NOW, NOW - 60_000)
                .orElseThrow();
        assertThat(held.parallelism()).isEmpty();
        assertThat(held.decision().reason()).contains("1 -> 4", "= 4 slot(s)", "60 s ago < 300 s");
    }

    @Test
    void whenDemandFallsItGivesBackSeveralLevelsAtOnceAsFarAsTheHysteresisAllows() {
        // 6 slots each, 0.20 busy at 60/s: 50/s per slot; 60/s at 0.74 needs 2 slots, where they would be 0.60 < 0.68
        List<SlotLoad> quiet = List.of(rated("sim:0", 0.2, 60, Double.NaN), rated("sim:1", 0.2, 60, Double.NaN));
        ParallelismPlanner.Result r = sizing.plan(quiet, 12, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(4);
        assertThat(r.decision().reason()).contains("parallelism 12 -> 4",
                "sim:0 observed 60.0/s at busy 0.20 on 6 slot(s): true rate 50.0/s per slot",
                "required ceil(60.0 / (50.0 x 0.74)) = 2 slot(s)", "with 2 slots per device it would be 0.60 < 0.68");
        // without rates the same busy times give back one level only
        assertThat(sizing.plan(List.of(device("sim:0", 0.3, 0.2), device("sim:1", 0.3, 0.2)), 12, NOW,
                Long.MIN_VALUE).flatMap(ParallelismPlanner.Result::parallelism)).hasValue(10);
        // 0.24 busy: 2 slots would carry 72/s at 0.74 but be 0.72 busy, not under 0.68: 3 slots (0.48)
        ParallelismPlanner.Result hysteresis = sizing.plan(List.of(rated("sim:0", 0.24, 72, Double.NaN),
                rated("sim:1", 0.1, 30, Double.NaN)), 12, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(hysteresis.parallelism()).hasValue(6);
        assertThat(hysteresis.decision().reason()).contains("= 2 slot(s)", "with 3 slots per device it would be 0.48");
        // a forecast holds slots that the measured rate alone would give back: 150/s at 50/s per slot, 0.74 -> 5
        assertThat(sizing.plan(List.of(rated("sim:0", 0.2, 60, 150), rated("sim:1", 0.2, 60, Double.NaN)), 12, NOW,
                Long.MIN_VALUE).flatMap(ParallelismPlanner.Result::parallelism)).hasValue(10);
    }

    @Test
    void withWeightsSizingJumpsToTheLevelThatGivesTheSlowDeviceItsSlots() {
        // 3:1 at 4 (3:1): sim:1 saturated at 0.95 with 95/s on its 1 slot (100/s per slot); 300/s forecast
        // needs ceil(300 / 74) = 5 slots there: the lowest level giving sim:1 5 is 20 (15:5), beyond 6 on
        // sim:0; the highest within it, 8 (6:2), still gives sim:1 one more
        SlotLoad fast = new SlotLoad("sim:0", 0.3, 0.4, List.of(0, 2, 3), 0.4, 120, Double.NaN);
        SlotLoad slow = new SlotLoad("sim:1", 0.3, 0.95, List.of(1), 0.95, 95, 300);
        ParallelismPlanner.Result r = threeToOne.plan(List.of(fast, slow), 4, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(r.parallelism()).hasValue(8);
        assertThat(r.decision().reason()).contains("= 5 slot(s)", "slots per device 6:2",
                "fewer than required: coordinator.parallelism.max-slots-per-device is 6");
        // 2 slots for sim:1 (150/s forecast: ceil(150 / 74) = 3)? 7 is 5:2, 8 is 6:2: neither; none within 6 gives 3
        SlotLoad need3 = new SlotLoad("sim:1", 0.3, 0.95, List.of(1), 0.95, 95, 150);
        assertThat(threeToOne.plan(List.of(fast, need3), 4, NOW, Long.MIN_VALUE).flatMap(
                ParallelismPlanner.Result::parallelism)).hasValue(8);
        // 2 slots (130/s: ceil(1.76) = 2): the lowest level with 2 on sim:1 is 7 (5:2)
        SlotLoad need2 = new SlotLoad("sim:1", 0.3, 0.95, List.of(1), 0.95, 95, 130);
        assertThat(threeToOne.plan(List.of(fast, need2), 4, NOW, Long.MIN_VALUE).flatMap(
                ParallelismPlanner.Result::parallelism)).hasValue(7);
    }

    @Test
    void whereTheTrueRateCannotBeMeasuredItStepsByBusyTime() {
        // busy 0.03: under 0.05, the rate is not divided by it; no rate counted at all; a rate of 0
        List<SlotLoad> idle = List.of(rated("sim:0", 0.03, 5, Double.NaN), rated("sim:1", 0.02, 4, Double.NaN));
        ParallelismPlanner.Result down = sizing.plan(idle, 8, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(down.parallelism()).as("one level, as without rates").hasValue(6);
        assertThat(down.decision().reason()).doesNotContain("sized by rate");
        assertThat(sizing.plan(List.of(device("sim:0", 0.3, 0.03), device("sim:1", 0.3, 0.02)), 8, NOW,
                Long.MIN_VALUE)).isEqualTo(Optional.of(down));

        ParallelismPlanner.Result noRate = sizing.plan(List.of(rated("sim:0", 0.95, 0, 300), rated("sim:1", 0.4,
                Double.NaN, Double.NaN)), 2, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(noRate.parallelism()).as("one slot more, as without rates").hasValue(4);
        assertThat(noRate.decision().reason()).doesNotContain("sized by rate");

        // one device measured, the other not: the measured one is sized, the other stepped, and both named
        ParallelismPlanner.Result mixed = sizing.plan(List.of(rated("sim:0", 0.9, 100, 300), rated("sim:1", 0.95,
                Double.NaN, Double.NaN)), 2, NOW, Long.MIN_VALUE).orElseThrow();
        assertThat(mixed.parallelism()).hasValue(8);
        assertThat(mixed.decision().reason()).contains("sized by rate: sim:0 observed 100.0/s",
                "sim:1 by busy time (no rate or busy under 0.05)");
    }

    @Test
    void aTargetBusyOutsideTheBandIsAConfigurationError() {
        assertThat(sizing.targetBusy()).isEqualTo(0.8 * (1 - 0.15 / 2));
        assertThat(new ParallelismPlanner(6, 0, List.of(), 0.8, 0.7, 0.15, Duration.ofMinutes(5), 0.7).targetBusy())
                .isEqualTo(0.7);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ParallelismPlanner(6, 0, List.of(), 0.8, 0.7,
                0.15, Duration.ofMinutes(5), 0.5)).hasMessageContaining("coordinator.parallelism.target-busy 0.5")
                .hasMessageContaining("[0.680, 0.800]");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ParallelismPlanner(6, 0, List.of(), 0.8, 0.7,
                0.15, Duration.ofMinutes(5), 0.9)).hasMessageContaining("coordinator.parallelism.target-busy");
    }

    // ---- a noisy steady load does not flap -----------------------------------------------------

    /**
     * A simulated 10 minutes of planning cycles, every 15 s, on a steady load with noise: every device
     * has a true rate per slot and a mean demand; each cycle the demand is the mean times a random
     * factor within +-noise, a device takes at most what its slots carry, and its subtasks are as busy
     * as the demand makes them. With noise under a quarter of the hysteresis the planner may move
     * towards the level that carries the load (several times, min-interval apart) and once overshoot
     * and come back, but never reverse twice.
     */
    @net.jqwik.api.Property(tries = 400)
    void aNoisySteadyLoadReversesAtMostOnce(
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 4) int devices,
            @net.jqwik.api.ForAll boolean weighted,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.Size(4) List<@net.jqwik.api.constraints.IntRange(
                    min = 1, max = 4) Integer> weights,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 2, max = 8) int maxSlots,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0.5, max = 0.95) double threshold,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0.05, max = 0.3) double hysteresis,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0, max = 1) double targetInBand,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.DoubleRange(min = 0, max = 1) double noiseOfMost,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.Size(4) List<@net.jqwik.api.constraints.DoubleRange(
                    min = 20, max = 500) Double> perSlot,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.Size(4) List<@net.jqwik.api.constraints.DoubleRange(
                    min = 0.05, max = 1) Double> loadOfMax,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 1, max = 8) int startLevel,
            @net.jqwik.api.ForAll @net.jqwik.api.constraints.IntRange(min = 15, max = 180) int intervalSeconds,
            @net.jqwik.api.ForAll long seed) {
        List<Double> w = weighted ? weights.subList(0, devices).stream().map(Integer::doubleValue).toList() : List.of();
        double lower = threshold * (1 - hysteresis);
        double target = lower + targetInBand * (threshold - lower);
        ParallelismPlanner p = new ParallelismPlanner(maxSlots, devices, w, threshold, 0.7, hysteresis,
                Duration.ofSeconds(intervalSeconds), target);
        io.flinkgpu.contract.placement.SlotLayout layout = w.isEmpty()
                ? io.flinkgpu.contract.placement.SlotLayout.equal(devices)
                : io.flinkgpu.contract.placement.SlotLayout.of(w);
        double noise = noiseOfMost * hysteresis / 4;
        java.util.Random random = new java.util.Random(seed);
        double[] mean = new double[devices];
        for (int d = 0; d < devices; d++) {
            // up to what the most slots carry fully busy (more would only saturate at the cap)
            int most = layout.slotCounts(ParallelismPlanner.levelParallelism(layout, devices, maxSlots))[d];
            mean[d] = loadOfMax.get(d) * most * perSlot.get(d);
        }
        int parallelism = ParallelismPlanner.levelParallelism(layout, devices, Math.min(startLevel, maxSlots));
        long last = Long.MIN_VALUE;
        List<Integer> changes = new ArrayList<>();
        List<Long> at = new ArrayList<>();
        for (long now = 0; now <= 600_000; now += 15_000) {
            int[] counts = layout.slotCounts(parallelism);
            List<SlotLoad> loads = new ArrayList<>();
            for (int d = 0; d < devices; d++) {
                double demand = mean[d] * (1 + noise * (2 * random.nextDouble() - 1));
                double capacity = counts[d] * perSlot.get(d);
                double busy = Math.min(1, demand / capacity);
                loads.add(new SlotLoad("sim:" + d, Double.NaN, busy, layout.subtasksOf(d, parallelism), busy,
                        Math.min(demand, capacity), Double.NaN));
            }
            Optional<ParallelismPlanner.Result> r = p.plan(loads, parallelism, now, last);
            if (r.isPresent() && r.get().parallelism().isPresent()) {
                int next = r.get().parallelism().get();
                changes.add(Integer.signum(next - parallelism));
                at.add(now);
                parallelism = next;
                last = now;
            }
        }
        for (int i = 1; i < at.size(); i++) {
            assertThat(at.get(i) - at.get(i - 1)).as("changes %s", at).isGreaterThanOrEqualTo(intervalSeconds * 1000L);
        }
        int reversals = 0;
        for (int i = 1; i < changes.size(); i++) {
            reversals += changes.get(i) != changes.get(i - 1).intValue() ? 1 : 0;
        }
        assertThat(reversals).as("directions %s", changes).isLessThanOrEqualTo(1);
    }
}
