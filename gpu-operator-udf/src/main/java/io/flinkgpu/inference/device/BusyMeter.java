package io.flinkgpu.inference.device;

import java.util.function.LongSupplier;

/**
 * Utilisation as the busy fraction of wall time between two samples. Busy intervals are
 * recorded when work ends; overlapping work (several threads) is capped at 100%.
 */
final class BusyMeter {
    private final LongSupplier clock;
    private long busyNanos;
    private long windowStart;

    BusyMeter(LongSupplier clock) {
        this.clock = clock;
        this.windowStart = clock.getAsLong();
    }

    synchronized void busy(long nanos) {
        busyNanos += Math.max(0, nanos);
    }

    /** The busy fraction since the previous call, and starts a new window. */
    synchronized double sample() {
        long now = clock.getAsLong();
        long window = now - windowStart;
        double u = window <= 0 ? 0 : Math.min(1.0, (double) busyNanos / window);
        busyNanos = 0;
        windowStart = now;
        return u;
    }
}
