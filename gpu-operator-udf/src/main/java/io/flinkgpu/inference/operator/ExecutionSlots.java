package io.flinkgpu.inference.operator;

/**
 * The batches one runtime runs at once, and which may start: {@code threads} execution threads take
 * any batch; where inference.execution-threads is unset on the CPU, {@code reserved} more (the core
 * kept for the task's own threads, at most one) take a batch only while the others are busy and only
 * if its model runs at least {@code minReservedSampleNanos} per sample: beside such a model the task's
 * own work per request (parsing, admission, answering, Kafka) is a small share of that core, which
 * would otherwise stay idle while long batches hold up the queue (a transformer encoder's
 * milliseconds per sequence against tens of microseconds).
 */
public record ExecutionSlots(int threads, int reserved, long minReservedSampleNanos) {
    /** {@link #minSampleNanos} when no batch may start. */
    public static final long NONE = -1;

    public ExecutionSlots {
        if (threads < 1 || reserved < 0 || minReservedSampleNanos < 0) {
            throw new IllegalArgumentException("threads " + threads + ", reserved " + reserved + ", min sample nanos "
                    + minReservedSampleNanos);
        }
    }

    /** Slots for {@code threads} threads that take any batch, none reserved. */
    public static ExecutionSlots of(int threads) {
        return new ExecutionSlots(threads, 0, 0);
    }

    /** The threads the runtime's pool needs. */
    public int poolSize() {
        return threads + reserved;
    }

    /**
     * What a batch must run per sample to start while {@code executing} batches run, {@code
     * onReserved} of them on the reserved core: 0 (any batch) while one of the threads is free,
     * the reserved core's threshold while only that core is, and {@link #NONE} when every slot is
     * taken. A batch started while {@link #threadsBusy} holds the reserved core, any other a thread.
     */
    public long minSampleNanos(int executing, int onReserved) {
        if (!threadsBusy(executing, onReserved)) {
            return 0;
        }
        return onReserved < reserved ? minReservedSampleNanos : NONE;
    }

    /**
     * Whether a batch that starts now while {@code executing} batches run, {@code onReserved} of
     * them on the reserved core, takes the reserved core (every thread is busy) rather than a thread.
     */
    public boolean threadsBusy(int executing, int onReserved) {
        return executing - onReserved >= threads;
    }
}
