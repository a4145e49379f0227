package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.ModelId;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * Windowed dynamic batching, in the manner of Triton's dynamic batcher and TensorFlow Serving's
 * batching library: requests queue per {@link BatchKey} (model version and input shapes), and a
 * batch is cut when an executor asks for one ({@link #poll()}) and some queue is ready:
 *
 * <ol>
 *   <li>it holds at least {@code maxBatchSize} samples (a full batch), or
 *   <li>it holds at least a preferred batch size (the largest such size is cut), or
 *   <li>its oldest request has waited {@code maxQueueDelay}.
 * </ol>
 *
 * Cutting on demand rather than eagerly means that while every executor is busy, queues keep
 * growing towards full batches, so batch size adapts to load by itself. Among ready queues the
 * one whose oldest request is oldest goes first. A model is backpressured when it has
 * {@code maxEnqueuedBatches} full batches' worth of samples queued.
 *
 * <p>Plain Java, single-threaded (the caller serialises access), clock injected.
 */
public final class DynamicBatcher<T> {
    private final Function<ModelId, BatchingConfig> configs;
    private final Ticker ticker;
    private final Map<BatchKey, Lane<T>> lanes = new LinkedHashMap<>();
    private final Map<ModelId, long[]> queuedSamplesByModel = new HashMap<>();
    private final Map<ModelId, BatchingConfig> configCache = new HashMap<>();
    private int queuedRequests;

    public DynamicBatcher(Function<ModelId, BatchingConfig> configs, Ticker ticker) {
        this.configs = configs;
        this.ticker = ticker;
    }

    private static final class Lane<T> {
        final BatchKey key;
        final BatchingConfig config;
        final ArrayDeque<Batch.Queued<T>> queue = new ArrayDeque<>();
        int samples;

        Lane(BatchKey key, BatchingConfig config) {
            this.key = key;
            this.config = config;
        }

        long oldestNanos() {
            return queue.peekFirst().enqueuedNanos();
        }
    }

    public BatchingConfig config(ModelId model) {
        return configCache.computeIfAbsent(model, configs);
    }

    /**
     * Queues an item of {@code samples} samples.
     *
     * @throws IllegalArgumentException if it has more samples than the model's max batch size
     */
    public void add(BatchKey key, T item, int samples) {
        add(key, item, samples, ticker.nanos());
    }

    /** Queues an item as if it had been enqueued at {@code enqueuedNanos} (used on restore). */
    public void add(BatchKey key, T item, int samples, long enqueuedNanos) {
        BatchingConfig config = config(key.model());
        if (samples < 1 || samples > config.maxBatchSize()) {
            throw new IllegalArgumentException(
                    "an item of " + samples + " samples does not fit batches of " + config.maxBatchSize());
        }
        Lane<T> lane = lanes.computeIfAbsent(key, k -> new Lane<>(k, config));
        lane.queue.addLast(new Batch.Queued<>(item, samples, enqueuedNanos));
        lane.samples += samples;
        queuedSamplesByModel.computeIfAbsent(key.model(), m -> new long[1])[0] += samples;
        queuedRequests++;
    }

    /** Cuts the most urgent ready batch, or returns null if no queue is ready yet. */
    public Batch<T> poll() {
        long now = ticker.nanos();
        Lane<T> best = null;
        Batch.CloseReason bestReason = null;
        for (Lane<T> lane : lanes.values()) {
            Batch.CloseReason reason = readiness(lane, now);
            if (reason != null && (best == null || lane.oldestNanos() < best.oldestNanos())) {
                best = lane;
                bestReason = reason;
            }
        }
        return best == null ? null : cut(best, bestReason, now);
    }

    /** Cuts every queue into batches regardless of readiness (end of input, draining). */
    public List<Batch<T>> flush() {
        long now = ticker.nanos();
        List<Batch<T>> batches = new ArrayList<>();
        for (Lane<T> lane : new ArrayList<>(lanes.values())) {
            while (!lane.queue.isEmpty()) {
                batches.add(cut(lane, Batch.CloseReason.FLUSH, now));
            }
        }
        return batches;
    }

    /**
     * The earliest time at which a queue that is not yet ready becomes ready by waiting, or empty
     * when nothing is queued. A queue that is already ready reports "now".
     */
    public OptionalLong nextReadyNanos() {
        long now = ticker.nanos();
        long earliest = Long.MAX_VALUE;
        for (Lane<T> lane : lanes.values()) {
            if (readiness(lane, now) != null) {
                return OptionalLong.of(now);
            }
            earliest = Math.min(earliest, lane.oldestNanos() + lane.config.maxQueueDelay().toNanos());
        }
        return earliest == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(earliest);
    }

    /** Whether the model has {@code maxEnqueuedBatches} full batches' worth of samples queued. */
    public boolean isBackpressured(ModelId model) {
        return queuedSamples(model) >= config(model).queueCapacity();
    }

    /** Whether any model is backpressured. */
    public boolean isBackpressured() {
        for (Map.Entry<ModelId, long[]> e : queuedSamplesByModel.entrySet()) {
            if (e.getValue()[0] >= config(e.getKey()).queueCapacity()) {
                return true;
            }
        }
        return false;
    }

    public long queuedSamples(ModelId model) {
        long[] n = queuedSamplesByModel.get(model);
        return n == null ? 0 : n[0];
    }

    public int queuedRequests() {
        return queuedRequests;
    }

    public boolean isEmpty() {
        return queuedRequests == 0;
    }

    /** Every queued item, queue by queue in arrival order (for checkpoints). */
    public List<Batch.Queued<T>> queued() {
        List<Batch.Queued<T>> all = new ArrayList<>(queuedRequests);
        for (Lane<T> lane : lanes.values()) {
            all.addAll(lane.queue);
        }
        return all;
    }

    private Batch.CloseReason readiness(Lane<T> lane, long now) {
        BatchingConfig c = lane.config;
        if (lane.samples >= c.maxBatchSize()) {
            return Batch.CloseReason.MAX_SIZE;
        }
        int[] preferred = c.preferredBatchSizes();
        if (preferred.length > 0 && lane.samples >= preferred[0]) {
            return Batch.CloseReason.PREFERRED_SIZE;
        }
        if (now - lane.oldestNanos() >= c.maxQueueDelay().toNanos()) {
            return Batch.CloseReason.QUEUE_DELAY;
        }
        return null;
    }

    private Batch<T> cut(Lane<T> lane, Batch.CloseReason reason, long now) {
        int limit = lane.config.maxBatchSize();
        if (reason == Batch.CloseReason.PREFERRED_SIZE) {
            for (int p : lane.config.preferredBatchSizes()) {
                if (p <= lane.samples) {
                    limit = p; // ascending: ends on the largest preferred size reached
                }
            }
        }
        List<Batch.Queued<T>> entries = new ArrayList<>();
        int samples = 0;
        for (Iterator<Batch.Queued<T>> it = lane.queue.iterator(); it.hasNext(); ) {
            Batch.Queued<T> q = it.next();
            if (samples + q.samples() > limit && !entries.isEmpty()) {
                break;
            }
            entries.add(q);
            samples += q.samples();
            it.remove();
        }
        lane.samples -= samples;
        queuedSamplesByModel.get(lane.key.model())[0] -= samples;
        queuedRequests -= entries.size();
        if (lane.queue.isEmpty()) {
            lanes.remove(lane.key);
        }
        return new Batch<>(lane.key, entries, samples, reason, now);
    }
}
