package io.flinkgpu.bench.load;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicLongArray;
import org.HdrHistogram.Histogram;

/**
 * Collects the answers of one run. Latency of a request = time its answer was received minus
 * its <em>intended</em> send time. Requests intended before {@code measureStartNanos} are
 * warm-up and excluded; requests still unanswered when the run is finished count as lost, are
 * recorded with the latency they had reached by then (a lower bound) and miss the SLO. Where the
 * sender also reports when each send call returned ({@link #sent}), the result carries how late the
 * sender was and the latency counted from the actual send ({@link PointResult.SendLag}).
 */
public final class PointRecorder implements Target.Completions {
    static final long HIGHEST_US = 3_600_000_000L;

    private final AtomicLongArray intended;
    /**
     * When each request's send call returned (0: not recorded); null where the sender does not
     * report it (the closed loop), so that its points do not allocate a second array of capacity.
     */
    private final AtomicLongArray actual;
    /** Written by the sending thread only, read once it has finished. */
    private final Histogram sendLagUs = new Histogram(HIGHEST_US, 3);
    private final Histogram fromSendUs = new Histogram(HIGHEST_US, 3);
    private final long measureStartNanos;
    private final long windowNanos;
    private final long sloNanos;
    private final BitSet done = new BitSet();
    private final Histogram latencyUs = new Histogram(HIGHEST_US, 3);
    private final Histogram[] windowLatencyUs;
    private final long[] windowCompletions;
    private volatile int sent;
    private long answered;
    private long measuredAnswered;
    private long errors;
    private long withinSlo;
    private long duplicates;
    private long batchSamples;
    private long batchCount;
    private double queueMsSum;
    private double inferenceMsSum;
    private long timingsCount;
    private final Histogram queueUs = new Histogram(HIGHEST_US, 3);
    private final Histogram inferenceUs = new Histogram(HIGHEST_US, 3);
    private final Histogram outsideUs = new Histogram(HIGHEST_US, 3);
    private final RequestClasses classes;
    private final Histogram[] classLatencyUs;

    public PointRecorder(int capacity, long measureStartNanos, long windowNanos, int maxWindows, double sloMs) {
        this(capacity, measureStartNanos, windowNanos, maxWindows, sloMs, RequestClasses.NONE);
    }

    /** As above, also keeping the latencies of each of {@code classes} apart. */
    public PointRecorder(int capacity, long measureStartNanos, long windowNanos, int maxWindows, double sloMs,
            RequestClasses classes) {
        this(capacity, measureStartNanos, windowNanos, maxWindows, sloMs, classes, true);
    }

    /** As above; {@code sendTimes}: whether the sender reports its send calls ({@link #sent}). */
    public PointRecorder(int capacity, long measureStartNanos, long windowNanos, int maxWindows, double sloMs,
            RequestClasses classes, boolean sendTimes) {
        this.classes = classes;
        this.classLatencyUs = new Histogram[classes.names().size()];
        for (int i = 0; i < classLatencyUs.length; i++) {
            classLatencyUs[i] = new Histogram(HIGHEST_US, 3);
        }
        this.intended = new AtomicLongArray(capacity);
        this.actual = sendTimes ? new AtomicLongArray(capacity) : null;
        this.measureStartNanos = measureStartNanos;
        this.windowNanos = windowNanos;
        this.sloNanos = (long) (sloMs * 1e6);
        this.windowLatencyUs = new Histogram[maxWindows];
        this.windowCompletions = new long[maxWindows];
        for (int i = 0; i < maxWindows; i++) {
            windowLatencyUs[i] = new Histogram(HIGHEST_US, 2);
        }
    }

    public long measureStartNanos() {
        return measureStartNanos;
    }

    /** Request {@code seq} is about to be sent; its latency counts from {@code intendedNanos}. */
    public void sending(int seq, long intendedNanos) {
        intended.set(seq, intendedNanos);
        sent = Math.max(sent, seq + 1);
    }

    /**
     * Request {@code seq}'s send call returned at {@code sentNanos}: how late it went out after its
     * intended time is recorded for measured requests, and its answer's latency is also counted
     * from this instant. Called by the sending thread only.
     */
    public void sent(int seq, long sentNanos) {
        if (actual == null) {
            throw new IllegalStateException("this recorder was made without send times");
        }
        long at = intended.get(seq);
        actual.set(seq, sentNanos);
        if (at >= measureStartNanos) {
            sendLagUs.recordValue(Math.min(HIGHEST_US, Math.max(0, sentNanos - at) / 1000));
        }
    }

    public int sent() {
        return sent;
    }

    @Override
    public void complete(int seq, long receivedNanos, boolean error, int batchSize, double queueMs,
            double inferenceMs) {
        completeFirst(seq, receivedNanos, error, batchSize, queueMs, inferenceMs);
    }

    /** As {@link #complete}; returns false for an unknown or repeated answer (at-least-once duplicates). */
    public synchronized boolean completeFirst(int seq, long receivedNanos, boolean error, int batchSize,
            double queueMs, double inferenceMs) {
        if (seq < 0 || seq >= intended.length() || done.get(seq)) {
            duplicates++;
            return false;
        }
        long sentAt = intended.get(seq);
        if (sentAt == 0) { // not sent by this run
            duplicates++;
            return false;
        }
        done.set(seq);
        answered++;
        long latency = Math.max(0, receivedNanos - sentAt);
        long window = Math.floorDiv(receivedNanos - measureStartNanos, windowNanos);
        if (window >= 0 && window < windowCompletions.length) {
            windowCompletions[(int) window]++;
            windowLatencyUs[(int) window].recordValue(Math.min(HIGHEST_US, latency / 1000));
        }
        if (sentAt < measureStartNanos) {
            return true; // warm-up
        }
        measuredAnswered++;
        latencyUs.recordValue(Math.min(HIGHEST_US, latency / 1000));
        long actualAt = actual == null ? 0 : actual.get(seq);
        if (actualAt != 0) {
            fromSendUs.recordValue(Math.min(HIGHEST_US, Math.max(0, receivedNanos - actualAt) / 1000));
        }
        recordClass(seq, latency);
        if (error) {
            errors++;
        } else if (latency <= sloNanos) {
            withinSlo++;
        }
        if (!error && batchSize > 0) {
            batchSamples += batchSize;
            batchCount++;
        }
        if (!error && !Double.isNaN(queueMs)) {
            queueMsSum += queueMs;
            inferenceMsSum += inferenceMs;
            timingsCount++;
            long queue = Math.max(0, Math.round(queueMs * 1000));
            long inference = Math.max(0, Math.round(inferenceMs * 1000));
            queueUs.recordValue(Math.min(HIGHEST_US, queue));
            inferenceUs.recordValue(Math.min(HIGHEST_US, inference));
            outsideUs.recordValue(Math.min(HIGHEST_US, Math.max(0, latency / 1000 - queue - inference)));
        }
        return true;
    }

    /** Answers received so far to this run's requests, warm-up included (duplicates not). */
    public synchronized long answeredTotal() {
        return answered;
    }

    /** Answers received so far for requests sent so far. */
    public synchronized long outstanding() {
        return sent - answered;
    }

    /** Completions received in measurement window {@code i}. */
    public synchronized long windowCompletions(int i) {
        return windowCompletions[i];
    }

    /** Whether the last {@link RunSpec#STABLE_WINDOWS} windows before {@code windows} agree within {@code tolerance}. */
    public synchronized boolean stable(int windows, double tolerance) {
        return isStable(windowCompletions, windows, tolerance);
    }

    static boolean isStable(long[] counts, int windows, double tolerance) {
        if (windows < RunSpec.STABLE_WINDOWS) {
            return false;
        }
        double mean = 0;
        for (int i = windows - RunSpec.STABLE_WINDOWS; i < windows; i++) {
            mean += counts[i];
        }
        mean /= RunSpec.STABLE_WINDOWS;
        if (mean == 0) {
            return false;
        }
        for (int i = windows - RunSpec.STABLE_WINDOWS; i < windows; i++) {
            if (Math.abs(counts[i] - mean) > tolerance * mean) {
                return false;
            }
        }
        return true;
    }

    /**
     * Closes the run: every request sent in the measurement period and not answered by
     * {@code finishedNanos} is lost.
     */
    public synchronized PointResult finish(String mode, double offered, int windows, long finishedNanos,
            double sloMs, double stabilityTolerance) {
        long lost = 0;
        long measuredSent = 0;
        for (int i = 0; i < sent; i++) {
            long at = intended.get(i);
            if (at == 0 || at < measureStartNanos) {
                continue;
            }
            measuredSent++;
            if (!done.get(i)) {
                lost++;
                latencyUs.recordValue(Math.min(HIGHEST_US, Math.max(0, finishedNanos - at) / 1000));
                recordClass(i, Math.max(0, finishedNanos - at));
            }
        }
        double seconds = windows * windowNanos / 1e9;
        long completions = 0;
        List<PointResult.Window> ws = new ArrayList<>();
        for (int i = 0; i < windows; i++) {
            completions += windowCompletions[i];
            Histogram h = windowLatencyUs[i];
            ws.add(new PointResult.Window(windowCompletions[i] / (windowNanos / 1e9),
                    h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(50) / 1000.0,
                    h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(99) / 1000.0));
        }
        double attainment = measuredSent == 0 ? 0 : (double) withinSlo / measuredSent;
        double throughput = completions / seconds;
        return PointResult.of(mode, offered, seconds, measuredSent, measuredAnswered, errors, lost, duplicates,
                throughput, latencyUs, sloMs, attainment, isStable(windowCompletions, windows, stabilityTolerance),
                ws, batchCount == 0 ? Double.NaN : (double) batchSamples / batchCount,
                timingsCount == 0 ? Double.NaN : queueMsSum / timingsCount,
                timingsCount == 0 ? Double.NaN : inferenceMsSum / timingsCount, classLatencies(),
                timingsCount == 0 ? null : new PointResult.StageTail(timingsCount, PointResult.pct(queueUs, 50),
                        PointResult.pct(queueUs, 99), PointResult.pct(inferenceUs, 50), PointResult.pct(inferenceUs, 99),
                        PointResult.pct(outsideUs, 50), PointResult.pct(outsideUs, 99)),
                sendLagUs.getTotalCount() == 0 ? null : new PointResult.SendLag(sendLagUs.getTotalCount(),
                        PointResult.pct(sendLagUs, 50), PointResult.pct(sendLagUs, 99),
                        sendLagUs.getMaxValue() / 1000.0, PointResult.pct(fromSendUs, 50),
                        PointResult.pct(fromSendUs, 99)));
    }

    private void recordClass(int seq, long latencyNanos) {
        int c = classes.of(seq);
        if (c >= 0) {
            classLatencyUs[c].recordValue(Math.min(HIGHEST_US, latencyNanos / 1000));
        }
    }

    private List<PointResult.ClassLatency> classLatencies() {
        List<PointResult.ClassLatency> out = new ArrayList<>();
        for (int i = 0; i < classLatencyUs.length; i++) {
            Histogram h = classLatencyUs[i];
            out.add(new PointResult.ClassLatency(classes.names().get(i), h.getTotalCount(), PointResult.pct(h, 50),
                    PointResult.pct(h, 99)));
        }
        return out;
    }
}
