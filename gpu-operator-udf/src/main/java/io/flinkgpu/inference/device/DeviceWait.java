package io.flinkgpu.inference.device;

/**
 * The time the calling thread's batches waited for a device busy with other batches, so that a
 * batch's own service time can be told from its time in the device's queue. Only a device that
 * runs batches one after another on one timeline ({@link SimulatedDevice}) waits; the CPU and CUDA
 * devices run concurrent batches side by side and add nothing.
 *
 * <p>Per thread: an execution thread calls {@link #reset()} before a batch and {@link #serviceMs}
 * (or {@link #takeNanos()}) after it; every {@link Device#execute} in between (a batch split to isolate a bad request runs
 * several) adds its wait.
 */
public final class DeviceWait {
    private static final ThreadLocal<long[]> WAITED = ThreadLocal.withInitial(() -> new long[1]);

    private DeviceWait() {}

    /** Adds a wait of the calling thread's current batch. */
    static void add(long nanos) {
        if (nanos > 0) {
            WAITED.get()[0] += nanos;
        }
    }

    /** Starts counting the calling thread's wait from zero. */
    public static void reset() {
        WAITED.get()[0] = 0;
    }

    /**
     * A batch's service time: {@code runMs}, its whole run on the calling thread, less the wait
     * since {@link #reset()} (taken), never below zero (a test may time the run on a clock of its own).
     */
    public static double serviceMs(double runMs) {
        return Math.max(0, runMs - takeNanos() / 1e6);
    }

    /** The calling thread's wait since {@link #reset()}, then zero. */
    public static long takeNanos() {
        long[] waited = WAITED.get();
        long nanos = waited[0];
        waited[0] = 0;
        return nanos;
    }
}
