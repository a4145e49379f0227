package io.flinkgpu.bench.load;

/**
 * A system under load. {@link #send} must not wait for the answer: the target reports every
 * answer later through the {@link Completions} handed to {@link #begin}.
 */
public interface Target {
    /** Called before a run (one rate point) starts; answers for earlier runs must be ignored from now on. */
    void begin(int runId, Completions completions);

    /** Sends request {@code seq} of the current run; may block (e.g. a full producer buffer). */
    void send(int seq) throws Exception;

    /** The classes of the requests it sends, whose latencies are reported apart too (default: none). */
    default RequestClasses requestClasses() {
        return RequestClasses.NONE;
    }

    /** Where a target reports answers. Implementations are thread-safe. */
    interface Completions {
        /**
         * Request {@code seq} was answered at {@code receivedNanos} (System.nanoTime). {@code batchSize},
         * {@code queueMs} and {@code inferenceMs} are the server's timings, or 0/NaN when unknown.
         */
        void complete(int seq, long receivedNanos, boolean error, int batchSize, double queueMs, double inferenceMs);

        /**
         * As {@link #complete(int, long, boolean, int, double, double)}, from a target that knows why a
         * request failed: {@code errorCode} is the answer's error code, null for a success. Completions
         * that keep the code override this; the others only see whether it failed.
         */
        default void complete(int seq, long receivedNanos, String errorCode, int batchSize, double queueMs,
                double inferenceMs) {
            complete(seq, receivedNanos, errorCode != null, batchSize, queueMs, inferenceMs);
        }

        /**
         * Request {@code seq}'s answer names {@code version} (the model version that answered it), from a
         * target that knows it; reported right before the answer's {@code complete}. Completions that keep
         * versions override this.
         */
        default void version(int seq, String version) {}
    }
}
