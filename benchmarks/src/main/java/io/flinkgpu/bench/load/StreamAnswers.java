package io.flinkgpu.bench.load;

/**
 * The answers to one stream of a {@link LoadDriver#timed timed run}: for every request sent, its
 * intended send time and, if it was answered, when, with which error code and by which model
 * version (the first answer counts; repeats, e.g. at-least-once duplicates, are ignored).
 * Nothing is excluded or aggregated: the benchmark that ran the streams analyses them (per window of intended send time,
 * per traffic class, ...). Closed when the run ends; answers arriving later are ignored.
 */
public final class StreamAnswers implements Target.Completions {
    /** The error code recorded for a failed answer whose target gave none. */
    public static final String UNKNOWN_ERROR = "ERROR";

    private final long[] intended;
    private final long[] received;
    private final boolean[] done;
    private final String[] errorCodes;
    private final String[] versions;
    private int sent;
    private int answered;
    private int errors;
    private boolean closed;

    StreamAnswers(int capacity) {
        intended = new long[capacity];
        received = new long[capacity];
        errorCodes = new String[capacity];
        versions = new String[capacity];
        done = new boolean[capacity];
    }

    /** Request {@code seq} is about to be sent; its latency counts from {@code intendedNanos}. */
    synchronized void sending(int seq, long intendedNanos) {
        intended[seq] = intendedNanos;
        sent = Math.max(sent, seq + 1);
    }

    @Override
    public void complete(int seq, long receivedNanos, boolean error, int batchSize, double queueMs,
            double inferenceMs) {
        complete(seq, receivedNanos, error ? UNKNOWN_ERROR : null, batchSize, queueMs, inferenceMs);
    }

    @Override
    public synchronized void complete(int seq, long receivedNanos, String errorCode, int batchSize, double queueMs,
            double inferenceMs) {
        if (closed || seq < 0 || seq >= sent || done[seq]) {
            return;
        }
        done[seq] = true;
        received[seq] = receivedNanos;
        errorCodes[seq] = errorCode;
        answered++;
        errors += errorCode == null ? 0 : 1;
    }

    @Override
    public synchronized void version(int seq, String version) {
        if (!closed && seq >= 0 && seq < sent && !done[seq]) {
            versions[seq] = version;
        }
    }

    synchronized void close() {
        closed = true;
    }

    /** Requests sent. */
    public synchronized int sent() {
        return sent;
    }

    /** Requests answered (with or without error). */
    public synchronized int answered() {
        return answered;
    }

    /** Answers that were errors. */
    public synchronized int errors() {
        return errors;
    }

    /** Requests sent and not (yet) answered. */
    public synchronized int outstanding() {
        return sent - answered;
    }

    /** Intended send time of request {@code seq} (System.nanoTime). */
    public synchronized long intendedNanos(int seq) {
        return intended[seq];
    }

    public synchronized boolean answered(int seq) {
        return done[seq];
    }

    /** Answer time minus intended send time of an answered request. */
    public synchronized long latencyNanos(int seq) {
        return received[seq] - intended[seq];
    }

    /** The model version that answered request {@code seq}, null when unanswered or the target does not say. */
    public synchronized String version(int seq) {
        return done[seq] ? versions[seq] : null;
    }

    /** The error code of an answered request, null when it succeeded. */
    public synchronized String errorCode(int seq) {
        return errorCodes[seq];
    }
}
