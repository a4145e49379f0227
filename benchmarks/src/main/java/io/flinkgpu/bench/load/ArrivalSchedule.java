package io.flinkgpu.bench.load;

import java.util.Arrays;
import java.util.SplittableRandom;

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

    /** Poisson arrivals: exponentially distributed gaps with mean 1/rate, covering {@code durationNanos}. */
    public static ArrivalSchedule poisson(double ratePerSecond, long durationNanos, long seed) {
        if (!(ratePerSecond > 0)) {
            throw new IllegalArgumentException("rate must be positive, got " + ratePerSecond);
        }
        SplittableRandom random = new SplittableRandom(seed);
        double meanGapNanos = 1e9 / ratePerSecond;
        long[] out = new long[(int) Math.min(Integer.MAX_VALUE - 8, durationNanos / meanGapNanos * 1.1 + 64)];
        int n = 0;
        double t = 0;
        while (true) {
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
        return new ArrivalSchedule(Arrays.copyOf(out, n), ratePerSecond);
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

    public double ratePerSecond() {
        return ratePerSecond;
    }
}
