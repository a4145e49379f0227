package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LatencyModel;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.ShapeStats;
import io.flinkgpu.inference.qos.TimeoutAction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * Windowed dynamic batching with QoS levels, deadlines and tenant fairness.
 *
 * <p>Requests queue per {@link BatchKey} (model version and input shapes), and within it per
 * level and per tenant. A batch is cut when an executor asks for one ({@link #poll()}) and some
 * queue is ready: it holds a full or a preferred-size batch, its oldest request waited the
 * maximum queue delay, or, with SLO-aware sizing ({@link BatchSizing#sloAware}), it holds a batch
 * that keeps up with the arrival rate or waiting longer would miss a deadline. Cutting on demand
 * rather than eagerly means that while every executor is busy, queues keep growing towards full
 * batches, so batch size adapts to load by itself. Of the ready queues the one with the highest queued level
 * is cut first; among queues whose requests carry deadlines, one whose earliest deadline can still
 * be met before one whose cannot, and of those that can, the one with the least slack (earliest
 * deadline less now and the predicted run time of its batch), so that a tight-SLO model sharing the
 * device with a loose-SLO one is not served behind the other's older requests, and a queue that is
 * late anyway does not make the others late; otherwise the one with the oldest request.
 *
 * <p>A batch takes level 1 first, then 2, and so on, then requests demoted by a {@link
 * TimeoutAction#DELAY} policy. So a request that arrives while work of a lower level is queued
 * overtakes it: the lower level's "forming batch" is split, its rest waits for the next cut.
 * A batch already executing is never interrupted. Within a level, tenants share by weighted
 * deficit round robin; queued requests age one level up per {@code aging_ms}, and a level below
 * its {@code min_share} of recent samples is served first.
 *
 * <p>The batcher coordinates three parts: the {@link RequestQueue} (levels, tenants, deficit
 * round robin, aging and expiry: which requests a batch takes), per model a {@link CutPolicy}
 * (when a batch is cut and how large) and a {@link BatchSizeController} (the AIMD cap), and it
 * keeps each model's {@link ShapeStats}: a latency model per input shape of a variable-size model and
 * one over all, fed by {@link #recordBatch}, and an arrival rate per shape.
 *
 * <p><b>Admission.</b> {@link #offer} refuses a request when its tenant's queue at its level for
 * the model is full ({@code max_queue_size}) or when its shape's latency model predicts that even running it alone,
 * now, would miss its deadline. Queued requests whose deadline passes are rejected ({@link
 * #takeExpired()}) or demoted, by their level's policy.
 *
 * <p>A model is backpressured when it has {@code maxEnqueuedBatches} full batches' worth of
 * samples queued. Plain Java, single-threaded (the caller serialises access), clock injected;
 * the per-model reads ({@link #queuedSamples}, {@link #batchCap}, and of {@link #latencyModel}
 * only its {@link LatencyModel#published} fit) may come from another thread.
 */
public final class DynamicBatcher<T> {
    /**
     * Scheduling attributes of one request, as admission decided them: {@code level} 1 is the
     * highest, 0 stands for the model's default level.
     */
    public record Request(int level, String tenant, long deadlineNanos) {
        /** The model's default level, the default tenant, no deadline. */
        public static final Request DEFAULT = new Request(0, "default", Long.MAX_VALUE);
    }

    /** Outcome of {@link #offer}. */
    public enum Admission {
        ACCEPTED,
        QUEUE_FULL,
        DEADLINE_INFEASIBLE,
        /** More samples than the model's batches hold: admission should have refused it. */
        TOO_LARGE
    }

    private final Function<ModelId, BatchingConfig> configs;
    private final Function<ModelId, SchedulingConfig> scheduling;
    private final Ticker ticker;
    private final RequestQueue<T> queue;
    // Concurrent: the operator's metric gauges read per-model state from the metric reporter's
    // thread, and a HashMap written by the mailbox thread meanwhile threw ConcurrentModificationException.
    private final Map<ModelId, ModelState> models = new ConcurrentHashMap<>();

    /** Every model at the default scheduling, every tenant of weight 1. */
    public DynamicBatcher(Function<ModelId, BatchingConfig> configs, Ticker ticker) {
        this(configs, m -> SchedulingConfig.DEFAULTS, t -> 1.0, ticker);
    }

    /**
     * @param configs each model's effective batching, every value set ({@link BatchingConfig#isComplete()});
     *     asked once per model, before {@code scheduling}
     * @param scheduling each model's scheduling, asked once per model
     * @param tenantWeights each tenant's deficit-round-robin weight
     */
    public DynamicBatcher(Function<ModelId, BatchingConfig> configs, Function<ModelId, SchedulingConfig> scheduling,
            ToDoubleFunction<String> tenantWeights, Ticker ticker) {
        this.configs = configs;
        this.scheduling = scheduling;
        this.ticker = ticker;
        this.queue = new RequestQueue<>(tenantWeights);
    }

    /** Per-model state that outlives lanes: the model's policies, its per-shape stats and its queue counts. */
    private static final class ModelState {
        final BatchingConfig batching;
        final ShapeStats shapes = new ShapeStats();
        final BatchSizeController sizes;
        final CutPolicy cuts;
        final RequestQueue.ModelQueue queue;

        ModelState(ModelId id, BatchingConfig batching, SchedulingConfig sched) {
            if (!batching.isComplete()) {
                throw new IllegalArgumentException("the batching of " + id + " leaves values unset: " + batching);
            }
            this.batching = batching;
            sizes = new BatchSizeController(batching.maxBatchSize(), sched);
            cuts = new CutPolicy(batching, sched, shapes, sizes);
            queue = new RequestQueue.ModelQueue(sched);
        }
    }

    private ModelState model(ModelId id) {
        return models.computeIfAbsent(id, m -> {
            BatchingConfig batching = configs.apply(m);
            return new ModelState(m, batching, scheduling.apply(m));
        });
    }

    private ModelState model(RequestQueue.Lane<T> lane) {
        return models.get(lane.key().model());
    }

    public BatchingConfig config(ModelId model) {
        return model(model).batching;
    }

    /**
     * Queues an item of {@code samples} samples with default scheduling attributes.
     *
     * @throws IllegalArgumentException if it has more samples than the model's max batch size
     */
    public void add(BatchKey key, T item, int samples) {
        add(key, item, samples, ticker.nanos());
    }

    /** Queues an item as if it had been enqueued at {@code enqueuedNanos} (used on restore). */
    public void add(BatchKey key, T item, int samples, long enqueuedNanos) {
        enqueue(key, item, samples, Request.DEFAULT, enqueuedNanos);
    }

    /** Admits and queues an item, or says why not. */
    public Admission offer(BatchKey key, T item, int samples, Request request) {
        long now = ticker.nanos();
        ModelState m = model(key.model());
        if (samples < 1 || samples > m.batching.maxBatchSize()) {
            return Admission.TOO_LARGE;
        }
        if (m.queue.isFull(m.queue.levelOf(request), request.tenant())) {
            return Admission.QUEUE_FULL;
        }
        if (request.deadlineNanos() != Long.MAX_VALUE
                && (request.deadlineNanos() <= now
                        || infeasible(m.shapes.forShape(key.shapeSignature()), samples, now, request.deadlineNanos()))) {
            return Admission.DEADLINE_INFEASIBLE;
        }
        enqueue(key, item, samples, request, now);
        return Admission.ACCEPTED;
    }

    private static boolean infeasible(LatencyModel latency, int samples, long now, long deadlineNanos) {
        return latency.hasData() && now + latency.predictNanos(samples) > deadlineNanos;
    }

    private void enqueue(BatchKey key, T item, int samples, Request request, long now) {
        ModelState m = model(key.model());
        if (samples < 1 || samples > m.batching.maxBatchSize()) {
            throw new IllegalArgumentException(
                    "an item of " + samples + " samples does not fit batches of " + m.batching.maxBatchSize());
        }
        int level = m.queue.levelOf(request);
        queue.add(key, m.queue, item, samples, level, request.tenant(), request.deadlineNanos(), now);
        m.cuts.recordArrival(key.shapeSignature(), level, samples, now);
    }

    /** Cuts the most urgent ready batch, or returns null if no queue is ready yet. */
    public Batch<T> poll() {
        return poll(0);
    }

    /**
     * As {@link #poll()}, among the queues whose batch, as it would be cut now, takes at least
     * {@code minSampleNanos} per sample by their latency model (a queue whose model has no data yet
     * takes no time); 0: every queue.
     */
    public Batch<T> poll(long minSampleNanos) {
        long now = ticker.nanos();
        queue.expireAndAge(now);
        RequestQueue.Lane<T> best = null;
        Batch.CloseReason bestReason = null;
        long bestRun = 0;
        for (RequestQueue.Lane<T> lane : queue.lanes()) {
            // one prediction per lane at most, only where the threshold or a deadline asks for it (-1: none yet)
            long predicted = minSampleNanos > 0 ? predictedRunNanos(lane) : -1;
            if (predicted >= 0 && !runsAtLeast(lane, predicted, minSampleNanos)) {
                continue;
            }
            Batch.CloseReason reason = model(lane).cuts.readiness(lane, now);
            if (reason == null) {
                continue;
            }
            // the predicted run only orders lanes with deadlines
            long run = lane.earliestDeadlineNanos() == Long.MAX_VALUE ? 0
                    : predicted >= 0 ? predicted : predictedRunNanos(lane);
            if (best == null || lane.moreUrgentThan(best, run, bestRun, now)) {
                best = lane;
                bestReason = reason;
                bestRun = run;
            }
        }
        return best == null ? null : cut(best, bestReason, now);
    }

    /**
     * Whether the lane's batch (what it holds now, at most its cap) takes at least {@code minSampleNanos}
     * per sample by its latency model; always where that is 0, never before the model has data.
     */
    private boolean runsAtLeast(RequestQueue.Lane<T> lane, long minSampleNanos) {
        return minSampleNanos <= 0 || runsAtLeast(lane, predictedRunNanos(lane), minSampleNanos);
    }

    /** As {@link #runsAtLeast(RequestQueue.Lane, long)} with the lane's {@link #predictedRunNanos} given. */
    private boolean runsAtLeast(RequestQueue.Lane<T> lane, long predictedRunNanos, long minSampleNanos) {
        return predictedRunNanos > 0
                && predictedRunNanos >= minSampleNanos * Math.max(1, Math.min(lane.samples(), model(lane).sizes.cap()));
    }

    /** The lane's latency model's run time of the batch it holds now (at most its cap), 0 before the model has data. */
    private long predictedRunNanos(RequestQueue.Lane<T> lane) {
        ModelState m = model(lane);
        LatencyModel latency = m.shapes.forShape(lane.key().shapeSignature());
        return latency.hasData() ? latency.predictNanos(Math.max(1, Math.min(lane.samples(), m.sizes.cap()))) : 0;
    }

    /** Cuts every queue into batches regardless of readiness (end of input, draining). */
    public List<Batch<T>> flush() {
        long now = ticker.nanos();
        queue.expireAndAge(now);
        List<Batch<T>> batches = new ArrayList<>();
        for (RequestQueue.Lane<T> lane : new ArrayList<>(queue.lanes())) {
            while (lane.requests() > 0) {
                batches.add(cut(lane, Batch.CloseReason.FLUSH, now));
            }
        }
        return batches;
    }

    private Batch<T> cut(RequestQueue.Lane<T> lane, Batch.CloseReason reason, long now) {
        int limit = model(lane).cuts.limit(lane, reason, now);
        List<Batch.Queued<T>> entries = new ArrayList<>();
        int samples = queue.take(lane, limit, entries);
        return new Batch<>(lane.key(), entries, samples, reason, now);
    }

    /** Requests whose deadline passed while queued under a REJECT policy, since the last call. */
    public List<Batch.Queued<T>> takeExpired() {
        return queue.takeExpired();
    }

    /**
     * Demotes or drops (handing them to {@link #takeExpired()}) the queued requests whose deadline
     * passed, and ages the rest, without cutting a batch: what {@link #poll()} does first, for a
     * caller with no execution thread free to run one.
     */
    public void expire() {
        queue.expireAndAge(ticker.nanos());
    }

    /** The earliest deadline of a queued request, or empty when no queued request has one. */
    public OptionalLong nextDeadlineNanos() {
        long earliest = Long.MAX_VALUE;
        for (RequestQueue.Lane<T> lane : queue.lanes()) {
            earliest = Math.min(earliest, lane.earliestDeadlineNanos());
        }
        return earliest == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(earliest);
    }

    /**
     * The earliest time at which a queue becomes ready by waiting or a queued deadline passes, or
     * empty when nothing is queued. A queue that is already ready reports "now".
     */
    public OptionalLong nextReadyNanos() {
        return nextReadyNanos(0);
    }

    /**
     * As {@link #nextReadyNanos()} for the queues {@link #poll(long)} would cut with
     * {@code minSampleNanos}; the others count only with their queued deadlines.
     */
    public OptionalLong nextReadyNanos(long minSampleNanos) {
        long now = ticker.nanos();
        long earliest = Long.MAX_VALUE;
        for (RequestQueue.Lane<T> lane : queue.lanes()) {
            if (!runsAtLeast(lane, minSampleNanos)) {
                earliest = Math.min(earliest, lane.earliestDeadlineNanos());
                continue;
            }
            CutPolicy cuts = model(lane).cuts;
            if (cuts.readiness(lane, now) != null) {
                return OptionalLong.of(now);
            }
            earliest = Math.min(earliest, Math.min(cuts.wakeNanos(lane), lane.earliestDeadlineNanos()));
        }
        return earliest == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(earliest);
    }

    /** Feeds a completed batch's run time to its shape's and the model's latency models and to the AIMD controller. */
    public void recordBatch(BatchKey key, int samples, long elapsedNanos) {
        ModelState m = model(key.model());
        m.shapes.record(key.shapeSignature(), samples, elapsedNanos);
        m.sizes.record(elapsedNanos);
    }

    /** Feeds a completed batch of a fixed-shape model (or of no shape in particular) to its models. */
    public void recordBatch(ModelId id, int samples, long elapsedNanos) {
        recordBatch(new BatchKey(id, ""), samples, elapsedNanos);
    }

    /** The model's latency model over all its batches, whatever their shape. */
    public LatencyModel latencyModel(ModelId id) {
        return model(id).shapes.overall();
    }

    /** The latency model of the key's shape (the model-wide one until that shape has run). */
    public LatencyModel latencyModel(BatchKey key) {
        return model(key.model()).shapes.forShape(key.shapeSignature());
    }

    /** The current batch size cap: the AIMD cap, or the max batch size. */
    public int batchCap(ModelId id) {
        return model(id).sizes.cap();
    }

    /** Whether the model has {@code maxEnqueuedBatches} full batches' worth of samples queued. */
    public boolean isBackpressured(ModelId model) {
        return queuedSamples(model) >= config(model).queueCapacity();
    }

    /** Whether any model is backpressured. */
    public boolean isBackpressured() {
        for (ModelState m : models.values()) {
            if (m.queue.queuedSamples() >= m.batching.queueCapacity()) {
                return true;
            }
        }
        return false;
    }

    public long queuedSamples(ModelId model) {
        ModelState m = models.get(model);
        return m == null ? 0 : m.queue.queuedSamples();
    }

    /** Requests queued for the model at a level. */
    public int queuedRequests(ModelId model, int level) {
        ModelState m = models.get(model);
        return m == null ? 0 : m.queue.queuedRequests(level);
    }

    public int queuedRequests() {
        return queue.queuedRequests();
    }

    public boolean isEmpty() {
        return queue.queuedRequests() == 0;
    }

    /** Every queued item, queue by queue (for checkpoints). */
    public List<Batch.Queued<T>> queued() {
        return queue.queued();
    }
}
