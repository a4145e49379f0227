package io.flinkgpu.bench.load;

import java.time.Duration;

/**
 * How long one rate point runs: a warm-up whose requests are excluded from the results, then
 * measurement windows until the last three are stable (each window's throughput within
 * {@code stabilityTolerance} of their mean) or {@code maxWindows} is reached, then a drain that
 * waits for the answers still outstanding.
 */
public record RunSpec(Duration warmup, Duration window, int minWindows, int maxWindows, Duration drainTimeout,
        double stabilityTolerance) {

    public static final int STABLE_WINDOWS = 3;

    public RunSpec {
        if (minWindows < STABLE_WINDOWS || maxWindows < minWindows) {
            throw new IllegalArgumentException("need " + STABLE_WINDOWS + " <= minWindows <= maxWindows");
        }
    }

    public long warmupNanos() {
        return warmup.toNanos();
    }

    public long windowNanos() {
        return window.toNanos();
    }

    /**
     * This spec with windows long enough that its {@code minWindows} windows at {@code ratePerSecond}
     * hold at least {@code requests} requests (on average); unchanged where they already do.
     */
    public RunSpec covering(double ratePerSecond, long requests) {
        if (!(ratePerSecond > 0) || requests <= 0) {
            return this;
        }
        long nanos = (long) Math.ceil(requests / (ratePerSecond * minWindows) * 1e9);
        return nanos <= window.toNanos() ? this
                : new RunSpec(warmup, Duration.ofNanos(nanos), minWindows, maxWindows, drainTimeout,
                        stabilityTolerance);
    }
}
