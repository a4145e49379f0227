package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LatencyModel;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.ShapeStats;

/**
 * When one model's queued requests are cut into a batch, and how large that batch may be. This is
 * the scheduler half of the batcher; which requests fill the batch is the {@link RequestQueue}'s
 * decision.
 *
 * <p>A lane (the model's requests of one {@link BatchKey}) is ready when
 * <ol>
 *   <li>it holds a full batch (the {@link BatchSizeController}'s cap), or
 *   <li>it holds at least a preferred batch size, or
 *   <li>its oldest request waited {@code maxQueueDelay}, or, with {@link BatchSizing#SLO_AWARE} (or
 *       {@link BatchSizing#SLO_AWARE_CAPPED}):
 *       it holds the smallest batch that keeps up with the arrival rate under the latency model
 *       (one request at low load: no waiting), or filling that batch would miss the earliest
 *       queued deadline.
 * </ol>
 * A batch holds at most the cap (the max batch size when flushing), the largest preferred size
 * reached when that is why it was cut, with {@link BatchSizing#SLO_AWARE_CAPPED} no more than the
 * largest of the batch that keeps up with arrivals, the batch where batching stops paying
 * ({@link #worthwhileBatch}) and the largest batch predicted to run within a millisecond
 * ({@link #shortRunBatch}), with either SLO-aware sizing no more than is predicted to finish before
 * the earliest deadline, and with {@code low_priority_batch_ms} no more than runs in that time
 * while level-1 traffic is about and none is queued. Every
 * prediction reads the latency model of the lane's input shape.
 *
 * <p>It feeds the arrival rate of each of the model's input shapes (an exponentially weighted mean
 * gap between samples, kept in the model's {@link ShapeStats}) and keeps when a level-1 request last
 * arrived. Single-threaded, like the batcher.
 */
final class CutPolicy {
    /** SLO-aware sizing sizes batches to keep up with this multiple of the measured arrival rate. */
    static final double KEEP_UP_HEADROOM = 1.2;
    /**
     * SLO-aware sizing makes a batch no larger than where its time per sample is within this
     * fraction of the latency model's per-sample slope, unless keeping up with arrivals needs more.
     */
    static final double WORTHWHILE_SLACK = 0.1;
    /**
     * SLO-aware sizing never splits a batch predicted to run within this long: its run is below the
     * pipeline's own jitter, so a smaller one would gain a request nothing and cost the per-batch
     * work outside the run (hand-offs, emission) that the latency model does not see.
     */
    static final long SHORT_RUN_NANOS = 1_000_000;
    /** How recently a level-1 request must have arrived for {@code low_priority_batch_ms} to apply. */
    static final long TOP_LEVEL_RECENT_NANOS = 1_000_000_000L;

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

        /** The non-batch dimensions of the lane's inputs; empty for a fixed-shape model. */
        default String shapeSignature() {
            return "";
        }
    }

    private final BatchingConfig batching;
    private final SchedulingConfig sched;
    private final ShapeStats shapes;
    private final BatchSizeController sizes;
    private final int[] preferred;
    private long lastTopLevelArrivalNanos = Long.MIN_VALUE;

    /** {@code batching} must be complete ({@link BatchingConfig#isComplete()}). */
    CutPolicy(BatchingConfig batching, SchedulingConfig sched, ShapeStats shapes, BatchSizeController sizes) {
        this.batching = batching;
        this.sched = sched;
        this.shapes = shapes;
        this.sizes = sizes;
        this.preferred = batching.preferredBatchSizes().stream().mapToInt(Integer::intValue).toArray();
    }

    /** Notes a request of {@code samples} samples of input shape {@code shape} queued at {@code level}. */
    void recordArrival(String shape, int level, int samples, long now) {
        shapes.recordArrival(shape, samples, now);
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
        if (sched.batchSizing().sloAware()) {
            LatencyModel latency = shapes.forShape(lane.shapeSignature());
            int needed = batchToKeepUp(lane, latency);
            if (lane.samples() >= needed) {
                // Large enough to keep up with arrivals (at low load: one request, no waiting).
                return needed == 1 ? Batch.CloseReason.LOW_LOAD : Batch.CloseReason.KEEPS_UP;
            }
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                long slack = deadline - now - latency.predictNanos(needed);
                double fill = (needed - lane.samples()) * meanGapNanosPerSample(lane);
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
        if (sched.batchSizing().sloAware()) {
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                LatencyModel latency = shapes.forShape(lane.shapeSignature());
                wake = Math.min(wake, deadline - latency.predictNanos(batchToKeepUp(lane, latency)));
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
        LatencyModel latency = shapes.forShape(lane.shapeSignature());
        if (sched.batchSizing().sloAware() && reason != Batch.CloseReason.FLUSH && latency.hasData()) {
            if (sched.batchSizing() == BatchSizing.SLO_AWARE_CAPPED) {
                // no larger than keeps up with arrivals, than batching pays for, or than runs within
                // SHORT_RUN_NANOS, whichever is most
                limit = Math.min(limit, Math.max(batchToKeepUp(lane, latency),
                        Math.max(worthwhileBatch(latency), shortRunBatch(latency))));
            }
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
     * The smallest batch that keeps up with the arrival rate of the lane's shape (with 20%
     * headroom) under that shape's latency model: b / t(b) >= rate, i.e. b >= rate * alpha / (1 -
     * rate * beta). 1 when nothing is known yet or the device is lightly loaded; the cap when no
     * batch size keeps up. {@code latency} is the lane's shape's model, which the caller has already
     * looked up.
     */
    int batchToKeepUp(LaneState lane, LatencyModel latency) {
        double gap = meanGapNanosPerSample(lane);
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

    /** The largest batch (up to the cap) predicted to run within {@link #SHORT_RUN_NANOS}; at least 1. */
    int shortRunBatch(LatencyModel latency) {
        double beta = latency.betaNanos();
        double room = SHORT_RUN_NANOS - latency.alphaNanos();
        if (beta <= 0) {
            return room >= 0 ? sizes.cap() : 1;
        }
        return (int) Math.max(1, Math.min(sizes.cap(), Math.floor(room / beta)));
    }

    /** The mean gap between arriving samples of the lane's shape; 0 while unknown. */
    private double meanGapNanosPerSample(LaneState lane) {
        return shapes.meanGapNanosPerSample(lane.shapeSignature());
    }

    /**
     * The smallest batch whose time per sample, {@code t(b) / b = beta + alpha / b}, is within
     * {@link #WORTHWHILE_SLACK} of the per-sample slope {@code beta}: {@code b >= alpha / (slack *
     * beta)}. Past it a larger batch gains under 10% throughput but holds the thread, and every
     * request in it, for its whole run. 1 where the run time grows in proportion to the batch
     * (alpha 0, as a transformer's on a CPU: batching does not pay there); the cap where the time
     * does not grow with the batch (beta 0).
     */
    int worthwhileBatch(LatencyModel latency) {
        double alpha = latency.alphaNanos();
        double beta = latency.betaNanos();
        if (beta <= 0) {
            return sizes.cap();
        }
        double b = Math.ceil(alpha / (WORTHWHILE_SLACK * beta));
        return (int) Math.max(1, Math.min(sizes.cap(), b));
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
