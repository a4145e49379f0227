package io.flinkgpu.bench.load;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.random.RandomGenerator;

/**
 * The intended send times of an open-loop run, as offsets in nanoseconds from its start.
 * Computed before the run starts and never adjusted to what the system under test does: a
 * request whose intended time has passed is sent at once and its latency is still counted from
 * its intended time, so a stall on either side shows up in the measured tail (no coordinated
 * omission).
 */
public final class ArrivalSchedule {
    private final long[] offsets;
    private final double ratePerSecond;

    private ArrivalSchedule(long[] offsets, double ratePerSecond) {
        this.offsets = offsets;
        this.ratePerSecond = ratePerSecond;
    }

    /** A stream's rate over its run: requests/s at each offset (nanoseconds from the start). */
    @FunctionalInterface
    public interface Rate {
        double at(long offsetNanos);

        static Rate constant(double perSecond) {
            return offset -> perSecond;
        }

        /** {@code before} until {@code atNanos}, {@code after} from then on: a load step. */
        static Rate step(double before, double after, long atNanos) {
            return offset -> offset >= atNanos ? after : before;
        }
    }

    /** Poisson arrivals: exponentially distributed gaps with mean 1/rate, covering {@code durationNanos}. */
    public static ArrivalSchedule poisson(double ratePerSecond, long durationNanos, long seed) {
        if (!(ratePerSecond > 0)) {
            throw new IllegalArgumentException("rate must be positive, got " + ratePerSecond);
        }
        return generate(Rate.constant(ratePerSecond), ratePerSecond, durationNanos, new SplittableRandom(seed), false);
    }

    /**
     * Poisson arrivals at a rate that may change during the run (e.g. a {@link Rate#step}), the first
     * at the start: each gap is exponentially distributed with mean 1/rate at the arrival before it.
     * {@code random} fixes the sequence, so that configurations compared get the same arrivals.
     */
    public static ArrivalSchedule poisson(Rate rate, long durationNanos, RandomGenerator random) {
        double initial = rate.at(0);
        if (!(initial > 0)) {
            throw new IllegalArgumentException("rate must be positive, got " + initial);
        }
        return generate(rate, initial, durationNanos, random, true);
    }

    private static ArrivalSchedule generate(Rate rate, double initialRate, long durationNanos, RandomGenerator random,
            boolean firstAtStart) {
        long[] out = new long[(int) Math.min(Integer.MAX_VALUE - 8, durationNanos / (1e9 / initialRate) * 1.1 + 64)];
        int n = 0;
        if (firstAtStart && durationNanos > 0) {
            out[n++] = 0;
        }
        double t = 0;
        while (true) {
            double meanGapNanos = 1e9 / rate.at((long) t);
            // Inverse transform: -ln(1 - U) is Exp(1) for U uniform in [0, 1).
            t += -Math.log(1.0 - random.nextDouble()) * meanGapNanos;
            if (t >= durationNanos) {
                break;
            }
            if (n == out.length) {
                out = Arrays.copyOf(out, out.length * 2);
            }
            out[n++] = (long) t;
        }
        return new ArrivalSchedule(Arrays.copyOf(out, n), initialRate);
    }

    /** Evenly spaced arrivals at {@code rate}, for comparison and tests. */
    public static ArrivalSchedule constant(double ratePerSecond, long durationNanos) {
        double gap = 1e9 / ratePerSecond;
        int n = (int) Math.floor(durationNanos / gap);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            out[i] = (long) (i * gap);
        }
        return new ArrivalSchedule(out, ratePerSecond);
    }

    public int size() {
        return offsets.length;
    }

    /** Intended send time of request {@code i}, in nanoseconds after the run's start. */
    public long offset(int i) {
        return offsets[i];
    }

    /** The rate at the start of the run. */
    public double ratePerSecond() {
        return ratePerSecond;
    }
}
