package io.flinkgpu.bench.coordinator;

import java.util.List;

/**
 * The load ramp's offered rate over time: {@code base} requests/s for the first phase, a linear
 * ramp to {@code base * factor}, that rate, a linear ramp back down, and {@code base} again. Times
 * are seconds from the start of the first phase.
 *
 * @param seconds the five phases' lengths in seconds, each positive
 */
record RampProfile(double base, double factor, List<Integer> seconds) {
    /** The phases' names, in order. */
    static final List<String> PHASES = List.of("1x", "ramp up", "peak", "ramp down", "1x after");

    RampProfile {
        if (!(base > 0) || !(factor >= 1)) {
            throw new IllegalArgumentException("the ramp needs a positive base rate and a factor >= 1, got " + base
                    + " and " + factor);
        }
        if (seconds.size() != PHASES.size() || seconds.stream().anyMatch(s -> s == null || s <= 0)) {
            throw new IllegalArgumentException("the ramp needs " + PHASES.size() + " positive phase lengths, got "
                    + seconds);
        }
        seconds = List.copyOf(seconds);
    }

    /** The phase names, with the factor: "1x", "ramp up", "3x", "ramp down", "1x after". */
    List<String> names() {
        String peak = RecoveryOptions.num(factor) + "x";
        return PHASES.stream().map(p -> p.equals("peak") ? peak : p).toList();
    }

    /** Seconds from the start at which phase {@code i} begins ({@code i} = 5: the end). */
    double phaseStart(int i) {
        double t = 0;
        for (int k = 0; k < i; k++) {
            t += seconds.get(k);
        }
        return t;
    }

    /** The whole run in seconds. */
    int total() {
        return seconds.stream().mapToInt(Integer::intValue).sum();
    }

    /** The phase at {@code t} seconds from the start; the last phase from its start on, the first before 0. */
    int phaseAt(double t) {
        for (int i = PHASES.size() - 1; i > 0; i--) {
            if (t >= phaseStart(i)) {
                return i;
            }
        }
        return 0;
    }

    /** The offered rate at {@code t} seconds from the start, requests/s. */
    double rateAt(double t) {
        double peak = base * factor;
        int phase = phaseAt(t);
        double into = (t - phaseStart(phase)) / seconds.get(phase);
        return switch (phase) {
            case 1 -> base + (peak - base) * into;
            case 2 -> peak;
            case 3 -> peak - (peak - base) * into;
            default -> base;
        };
    }
}
