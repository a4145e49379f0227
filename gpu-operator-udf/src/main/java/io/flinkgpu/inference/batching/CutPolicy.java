package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LatencyModel;
import io.flinkgpu.inference.qos.SchedulingConfig;

/**
 * When one model's queued requests are cut into a batch, and how large that batch may be. This is
 * the scheduler half of the batcher; which requests fill the batch is the {@link RequestQueue}'s
 * decision.
 *
 * <p>A lane (the model's requests of one {@link BatchKey}) is ready when
 * <ol>
 *   <li>it holds a full batch (the {@link BatchSizeController}'s cap), or
 *   <li>it holds at least a preferred batch size, or
 *   <li>its oldest request waited {@code maxQueueDelay}, or, with {@link BatchSizing#SLO_AWARE}:
 *       it holds the smallest batch that keeps up with the arrival rate under the latency model
 *       (one request at low load: no waiting), or filling that batch would miss the earliest
 *       queued deadline.
 * </ol>
 * A batch holds at most the cap (the max batch size when flushing), the largest preferred size
 * reached when that is why it was cut, with SLO-aware sizing no more than is predicted to finish
 * before the earliest deadline, and with {@code low_priority_batch_ms} no more than runs in that
 * time while level-1 traffic is about and none is queued.
 *
 * <p>It keeps the model's arrival rate (an exponentially weighted mean gap between samples) and
 * when a level-1 request last arrived. Single-threaded, like the batcher.
 */
final class CutPolicy {
    /** SLO-aware sizing sizes batches to keep up with this multiple of the measured arrival rate. */
    static final double KEEP_UP_HEADROOM = 1.2;
    /** How recently a level-1 request must have arrived for {@code low_priority_batch_ms} to apply. */
    static final long TOP_LEVEL_RECENT_NANOS = 1_000_000_000L;
    private static final double ARRIVAL_EWMA = 0.1;

    /** What the policy reads of one lane. */
    interface LaneState {
        /** Queued requests. */
        int requests();

        /** Queued samples. */
        int samples();

        /** When the oldest queued request was enqueued; only called while requests are queued. */
        long oldestEnqueuedNanos();

        /** The earliest queued deadline, possibly earlier than the true one; {@link Long#MAX_VALUE}: none. */
        long earliestDeadlineNanos();

        /** Requests queued at a level. */
        int requestsAt(int level);
    }

    private final BatchingConfig batching;
    private final SchedulingConfig sched;
    private final LatencyModel latency;
    private final BatchSizeController sizes;
    private final int[] preferred;
    private long lastArrivalNanos = Long.MIN_VALUE;
    private long lastTopLevelArrivalNanos = Long.MIN_VALUE;
    private double meanInterArrivalNanosPerSample;

    /** {@code batching} must be complete ({@link BatchingConfig#isComplete()}). */
    CutPolicy(BatchingConfig batching, SchedulingConfig sched, LatencyModel latency, BatchSizeController sizes) {
        this.batching = batching;
        this.sched = sched;
        this.latency = latency;
        this.sizes = sizes;
        this.preferred = batching.preferredBatchSizes().stream().mapToInt(Integer::intValue).toArray();
    }

    /** Notes a request of {@code samples} samples queued at {@code level}. */
    void recordArrival(int level, int samples, long now) {
        if (lastArrivalNanos != Long.MIN_VALUE) {
            double gap = (double) Math.max(0, now - lastArrivalNanos) / samples;
            meanInterArrivalNanosPerSample = meanInterArrivalNanosPerSample == 0 ? gap
                    : (1 - ARRIVAL_EWMA) * meanInterArrivalNanosPerSample + ARRIVAL_EWMA * gap;
        }
        lastArrivalNanos = now;
        if (level == 1) {
            lastTopLevelArrivalNanos = now;
        }
    }

    /** Why the lane's batch is cut now, or null when it is not ready. */
    Batch.CloseReason readiness(LaneState lane, long now) {
        if (lane.requests() == 0) {
            return null;
        }
        if (lane.samples() >= sizes.cap()) {
            return Batch.CloseReason.MAX_SIZE;
        }
        if (preferred.length > 0 && lane.samples() >= preferred[0]) {
            return Batch.CloseReason.PREFERRED_SIZE;
        }
        long oldest = lane.oldestEnqueuedNanos();
        if (now - oldest >= batching.maxQueueDelay().toNanos()) {
            return Batch.CloseReason.QUEUE_DELAY;
        }
        if (sched.batchSizing() == BatchSizing.SLO_AWARE) {
            int needed = batchToKeepUp();
            if (lane.samples() >= needed) {
                // Large enough to keep up with arrivals (at low load: one request, no waiting).
                return needed == 1 ? Batch.CloseReason.LOW_LOAD : Batch.CloseReason.KEEPS_UP;
            }
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                long slack = deadline - now - latency.predictNanos(needed);
                double fill = (needed - lane.samples()) * meanInterArrivalNanosPerSample;
                if (slack <= 0 || fill >= slack) {
                    return Batch.CloseReason.DEADLINE;
                }
            }
        }
        return null;
    }

    /** When a lane that is not ready becomes ready by waiting. */
    long wakeNanos(LaneState lane) {
        long oldest = lane.oldestEnqueuedNanos();
        long wake = oldest + batching.maxQueueDelay().toNanos();
        if (sched.batchSizing() == BatchSizing.SLO_AWARE) {
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                wake = Math.min(wake, deadline - latency.predictNanos(batchToKeepUp()));
            }
        }
        return wake;
    }

    /** Samples the batch cut from the lane for {@code reason} may hold at most. */
    int limit(LaneState lane, Batch.CloseReason reason, long now) {
        int limit = reason == Batch.CloseReason.FLUSH ? batching.maxBatchSize() : sizes.cap();
        if (reason == Batch.CloseReason.PREFERRED_SIZE) {
            int cap = limit;
            for (int p : preferred) {
                if (p <= lane.samples() && p <= cap) {
                    limit = p; // ascending: ends on the largest preferred size reached
                }
            }
        }
        if (sched.batchSizing() == BatchSizing.SLO_AWARE && reason != Batch.CloseReason.FLUSH && latency.hasData()) {
            long deadline = sloDeadline(lane, lane.oldestEnqueuedNanos());
            while (limit > 1 && deadline != Long.MAX_VALUE && now + latency.predictNanos(limit) > deadline) {
                limit--; // the largest batch whose predicted completion meets the earliest deadline
            }
        }
        if (sched.lowPriorityBatchMs() > 0 && reason != Batch.CloseReason.FLUSH && latency.hasData()
                && lane.requestsAt(1) == 0 && lastTopLevelArrivalNanos != Long.MIN_VALUE
                && now - lastTopLevelArrivalNanos < TOP_LEVEL_RECENT_NANOS) {
            long budget = (long) (sched.lowPriorityBatchMs() * 1e6);
            while (limit > 1 && latency.predictNanos(limit) > budget) {
                limit--; // keep a lower-priority batch short while high-priority requests are about
            }
        }
        return limit;
    }

    /**
     * The smallest batch that keeps up with the arrival rate (with 20% headroom) under the latency
     * model: b / t(b) >= rate, i.e. b >= rate * alpha / (1 - rate * beta). 1 when nothing is
     * known yet or the device is lightly loaded; the cap when no batch size keeps up.
     */
    int batchToKeepUp() {
        double gap = meanInterArrivalNanosPerSample;
        if (gap <= 0 || !latency.hasData()) {
            return 1;
        }
        double rate = KEEP_UP_HEADROOM / gap;
        double beta = latency.betaNanos();
        if (rate * beta >= 1) {
            return sizes.cap();
        }
        double needed = Math.ceil(rate * latency.alphaNanos() / (1 - rate * beta));
        return (int) Math.max(1, Math.min(sizes.cap(), needed));
    }

    /**
     * The earliest deadline in the lane (tracked on enqueue and recomputed when one passes, so
     * it may be earlier than the true one after cuts: conservative), or the oldest request's
     * arrival plus the model's SLO.
     */
    private long sloDeadline(LaneState lane, long oldest) {
        long deadline = lane.earliestDeadlineNanos();
        if (deadline == Long.MAX_VALUE && sched.sloMs() > 0) {
            deadline = oldest + (long) (sched.sloMs() * 1e6);
        }
        return deadline;
    }
}
