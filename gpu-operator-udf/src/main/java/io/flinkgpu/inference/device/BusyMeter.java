package io.flinkgpu.inference.device;

import java.util.function.LongSupplier;

/**
 * Utilisation as the busy fraction of wall time between two samples, as GPU tools report it: the
 * share of the time during which at least one batch ran. Runs that overlap (several execution
 * threads on one device) count once, and a run still going at a sample counts up to that sample
 * (the rest goes to the next window), so two overlapping runs of 40% each read 40%, not 80%.
 *
 * <p>{@link #begin()} and {@link #end()} bracket a run on the device; {@link #busy(long)} adds time
 * the caller has already laid out on one timeline (the simulated GPU's modelled batches).
 */
final class BusyMeter {
    private final LongSupplier clock;
    /** Busy time of the current window before {@link #busySince}. */
    private long busyNanos;
    private long windowStart;
    /** Runs going now. */
    private int running;
    /** When the runs going now began to keep the device busy (or the window start, if later). */
    private long busySince;

    BusyMeter(LongSupplier clock) {
        this.clock = clock;
        this.windowStart = clock.getAsLong();
    }

    /** A run starts. */
    synchronized void begin() {
        if (running++ == 0) {
            busySince = clock.getAsLong();
        }
    }

    /** A run {@link #begin() begun} ends. */
    synchronized void end() {
        if (running == 0) {
            return;
        }
        if (--running == 0) {
            busyNanos += Math.max(0, clock.getAsLong() - busySince);
        }
    }

    /** Adds busy time that does not overlap any other (the caller serialises it). */
    synchronized void busy(long nanos) {
        busyNanos += Math.max(0, nanos);
    }

    /** The busy fraction since the previous call, and starts a new window. */
    synchronized double sample() {
        long now = clock.getAsLong();
        long busy = busyNanos;
        if (running > 0) {
            busy += Math.max(0, now - busySince);
            busySince = now;
        }
        long window = now - windowStart;
        double u = window <= 0 ? 0 : Math.min(1.0, (double) busy / window);
        busyNanos = 0;
        windowStart = now;
        return u;
    }
}
