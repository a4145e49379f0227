package io.flinkgpu.contract.placement;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;

/**
 * The slot layout's promises, over random integer weights (so that the reference split below can
 * be computed exactly, in integers) and parallelisms.
 */
class SlotLayoutProperties {

    @Provide
    Arbitrary<List<Integer>> weights() {
        return Arbitraries.integers().between(1, 10).list().ofMinSize(1).ofMaxSize(6);
    }

    static SlotLayout layout(List<Integer> weights) {
        return SlotLayout.of(weights);
    }

    @Property
    void everySubtaskGetsExactlyOneDeviceAndEachDeviceItsCount(@ForAll("weights") List<Integer> weights,
            @ForAll @IntRange(min = 0, max = 60) int parallelism) {
        SlotLayout layout = layout(weights);
        int[] device = layout.assignment(parallelism);
        int[] counts = layout.slotCounts(parallelism);
        assertThat(device).hasSize(parallelism);
        int[] seen = new int[weights.size()];
        for (int d : device) {
            assertThat(d).isBetween(0, weights.size() - 1);
            seen[d]++;
        }
        assertThat(seen).isEqualTo(counts);
        // subtasksOf partitions the subtasks the same way
        List<Integer> all = new ArrayList<>();
        for (int d = 0; d < weights.size(); d++) {
            List<Integer> own = layout.subtasksOf(d, parallelism);
            assertThat(own).hasSize(counts[d]).isSorted();
            own.forEach(s -> assertThat(layout.deviceOf(s, parallelism)).isEqualTo(device[s]));
            all.addAll(own);
        }
        Collections.sort(all);
        assertThat(all).hasSize(parallelism);
        for (int s = 0; s < parallelism; s++) {
            assertThat(all.get(s)).isEqualTo(s);
        }
    }

    @Property
    void slotCountsAreTheWeightsLargestRemainderSplit(@ForAll("weights") List<Integer> weights,
            @ForAll @IntRange(min = 0, max = 200) int parallelism) {
        int[] counts = layout(weights).slotCounts(parallelism);
        assertThat(counts).isEqualTo(largestRemainder(weights, parallelism));
        assertThat(java.util.Arrays.stream(counts).sum()).isEqualTo(parallelism);
        if (parallelism >= weights.size()) {
            assertThat(java.util.Arrays.stream(counts).min().orElse(1)).as("every device at least one slot").isGreaterThanOrEqualTo(1);
        }
    }

    @Property
    void equalWeightsAreIModDevices(@ForAll @IntRange(min = 1, max = 8) int devices,
            @ForAll @IntRange(min = 1, max = 1000) int weight, @ForAll @IntRange(min = 0, max = 100) int parallelism) {
        List<Integer> weights = Collections.nCopies(devices, weight);
        SlotLayout layout = layout(weights);
        int[] device = layout.assignment(parallelism);
        for (int i = 0; i < parallelism; i++) {
            assertThat(device[i]).as("subtask %d of %d", i, parallelism).isEqualTo(i % devices);
            assertThat(layout.deviceOf(i, parallelism)).isEqualTo(i % devices);
            assertThat(SlotLayout.equal(devices).deviceOf(i, parallelism)).isEqualTo(i % devices);
        }
    }

    @Property
    void aRescaleByOneMovesOnlyTheSubtasksTheNewCountsForce(@ForAll("weights") List<Integer> weights,
            @ForAll @IntRange(min = 1, max = 80) int parallelism) {
        SlotLayout layout = layout(weights);
        int[] before = layout.assignment(parallelism);
        int[] after = layout.assignment(parallelism + 1);
        int[] countsBefore = layout.slotCounts(parallelism);
        int[] countsAfter = layout.slotCounts(parallelism + 1);
        int forced = 0; // a device that loses k slots must lose k subtasks; nothing else need move
        for (int d = 0; d < weights.size(); d++) {
            forced += Math.max(0, countsBefore[d] - countsAfter[d]);
        }
        int moved = 0;
        for (int s = 0; s < parallelism; s++) {
            if (before[s] != after[s]) {
                moved++;
            }
        }
        assertThat(moved).isEqualTo(forced);
    }

    /**
     * The reference split, exact in integers: largest remainder, ties to the lower index, every
     * device at least one slot where there are as many slots as devices (a device whose quota is
     * under one gets one and the rest is split among the others again).
     */
    static int[] largestRemainder(List<Integer> weights, int parallelism) {
        int n = weights.size();
        int[] counts = new int[n];
        if (parallelism <= 0) {
            return counts;
        }
        boolean[] fixed = new boolean[n];
        int rest = parallelism;
        if (parallelism >= n) {
            boolean changed = true;
            while (changed) {
                changed = false;
                long total = 0;
                for (int d = 0; d < n; d++) {
                    total += fixed[d] ? 0 : weights.get(d);
                }
                int pass = rest;
                for (int d = 0; d < n; d++) {
                    if (!fixed[d] && (long) pass * weights.get(d) < total) { // quota under one
                        fixed[d] = true;
                        counts[d] = 1;
                        rest--;
                        changed = true;
                    }
                }
            }
        }
        long total = 0;
        for (int d = 0; d < n; d++) {
            total += fixed[d] ? 0 : weights.get(d);
        }
        long[] remainder = new long[n];
        int given = 0;
        for (int d = 0; d < n; d++) {
            if (fixed[d]) {
                remainder[d] = -1;
                continue;
            }
            long share = (long) rest * weights.get(d);
            counts[d] += (int) (share / total);
            given += (int) (share / total);
            remainder[d] = share % total;
        }
        for (int left = rest - given; left > 0; left--) {
            int best = -1;
            for (int d = 0; d < n; d++) {
                if (remainder[d] >= 0 && (best < 0 || remainder[d] > remainder[best])) {
                    best = d;
                }
            }
            counts[best]++;
            remainder[best] = -1;
        }
        return counts;
    }
}
