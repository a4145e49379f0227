package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * How a model batches. The same record carries a model config's {@code dynamic_batching} block,
 * the operator's {@code inference.batching.*} defaults, and the effective settings the batcher
 * runs with, which {@link #resolve} makes from the first two.
 *
 * <p>In a model's block a value that the block does not set is null (for the preferred sizes: an
 * empty list); it falls back to the operator's default. The block never sets {@code maxBatchSize}:
 * the model's top-level {@code max_batch_size} takes its place. The batcher needs every value set
 * ({@link #isComplete()}).
 *
 * @param maxBatchSize samples per batch at most
 * @param maxQueueDelay how long the oldest queued request may wait for a batch to fill
 * @param preferredBatchSizes sizes worth dispatching at once when reached (kept ascending, each at
 *     most {@code maxBatchSize}); empty for none
 * @param maxEnqueuedBatches how many full batches may wait per model before the batcher signals
 *     backpressure
 */
public record BatchingConfig(Integer maxBatchSize, Duration maxQueueDelay, List<Integer> preferredBatchSizes,
        Integer maxEnqueuedBatches) implements Serializable {

    /**
     * The operator's batch cap where neither the option nor a model's smaller {@code max_batch_size}
     * sets one. 128 rather than 32: with no queue delay a batch only grows while the device is busy,
     * so the cap binds only under load, where a model whose samples get cheaper with the batch needs
     * the larger batches to keep up (the recommendation model's samples per second on one core still
     * rise from batch 32 to 128); docs/BENCHMARKS.md, "The default max batch size", measures both
     * caps side by side.
     */
    public static final int DEFAULT_MAX_BATCH_SIZE = 128;
    public static final Duration DEFAULT_MAX_QUEUE_DELAY = Duration.ZERO;
    public static final int DEFAULT_MAX_ENQUEUED_BATCHES = 4;

    /** The operator's defaults when none are configured. */
    public static final BatchingConfig DEFAULTS = new BatchingConfig(
            DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_QUEUE_DELAY, List.of(), DEFAULT_MAX_ENQUEUED_BATCHES);

    /** A model config without a {@code dynamic_batching} block: every value falls back. */
    public static final BatchingConfig UNSET = new BatchingConfig(null, null, List.of(), null);

    public BatchingConfig {
        if (maxBatchSize != null && maxBatchSize < 1) {
            throw new IllegalArgumentException("max batch size must be at least 1, got " + maxBatchSize);
        }
        if (maxQueueDelay != null && maxQueueDelay.isNegative()) {
            throw new IllegalArgumentException("max queue delay must be zero or positive");
        }
        if (maxEnqueuedBatches != null && maxEnqueuedBatches < 1) {
            throw new IllegalArgumentException("max enqueued batches must be at least 1, got " + maxEnqueuedBatches);
        }
        List<Integer> sorted = new ArrayList<>(preferredBatchSizes == null ? List.of() : preferredBatchSizes);
        for (Integer p : sorted) {
            if (p == null || p < 1 || (maxBatchSize != null && p > maxBatchSize)) {
                throw new IllegalArgumentException("preferred batch size " + p + " is outside 1.."
                        + (maxBatchSize == null ? "max batch size" : maxBatchSize));
            }
        }
        sorted.sort(null);
        preferredBatchSizes = List.copyOf(sorted);
    }

    /** A model config's {@code dynamic_batching} block; absent values are unset. */
    @JsonCreator
    static BatchingConfig fromModelConfig(
            @JsonProperty("max_queue_delay_ms") Double maxQueueDelayMs,
            @JsonProperty("preferred_batch_sizes") List<Integer> preferredBatchSizes,
            @JsonProperty("max_enqueued_batches") Integer maxEnqueuedBatches) {
        // Checked here, when the repository reads the config, so that a bad value skips the model
        // with a reason instead of failing the operator at its first request.
        if (maxQueueDelayMs != null && !(maxQueueDelayMs >= 0 && maxQueueDelayMs < Double.POSITIVE_INFINITY)) {
            throw new IllegalArgumentException("max_queue_delay_ms must be zero or positive, got " + maxQueueDelayMs);
        }
        if (maxEnqueuedBatches != null && maxEnqueuedBatches < 1) {
            throw new IllegalArgumentException("max_enqueued_batches must be at least 1, got " + maxEnqueuedBatches);
        }
        if (preferredBatchSizes != null && preferredBatchSizes.stream().anyMatch(p -> p == null || p < 1)) {
            throw new IllegalArgumentException("preferred_batch_sizes must be positive, got " + preferredBatchSizes);
        }
        Duration delay = maxQueueDelayMs == null ? null : Duration.ofNanos(Math.round(maxQueueDelayMs * 1_000_000));
        return new BatchingConfig(null, delay, preferredBatchSizes, maxEnqueuedBatches);
    }

    /** Whether every value is set, as the batcher needs. */
    public boolean isComplete() {
        return maxBatchSize != null && maxQueueDelay != null && maxEnqueuedBatches != null;
    }

    /**
     * The effective batching of a model whose batches hold at most {@code maxBatchSize} samples:
     * this block's values where it sets them, {@code defaults}' elsewhere; preferred sizes above
     * {@code maxBatchSize} are dropped.
     *
     * @throws IllegalArgumentException if {@code defaults} leaves a value unset
     */
    public BatchingConfig resolve(int maxBatchSize, BatchingConfig defaults) {
        if (!defaults.isComplete()) {
            throw new IllegalArgumentException("defaults must set every value, got " + defaults);
        }
        Duration delay = maxQueueDelay != null ? maxQueueDelay : defaults.maxQueueDelay;
        List<Integer> sizes = (preferredBatchSizes.isEmpty() ? defaults.preferredBatchSizes : preferredBatchSizes)
                .stream().filter(p -> p >= 1 && p <= maxBatchSize).toList();
        int enqueued = maxEnqueuedBatches != null ? maxEnqueuedBatches : defaults.maxEnqueuedBatches;
        return new BatchingConfig(maxBatchSize, delay, sizes, enqueued);
    }

    /** Queued samples per model beyond which the batcher reports backpressure. */
    public long queueCapacity() {
        return (long) maxBatchSize * maxEnqueuedBatches;
    }

    @Override
    public String toString() {
        return "BatchingConfig{max=" + maxBatchSize + ", delay="
                + (maxQueueDelay == null ? "unset" : maxQueueDelay.toMillis() + "ms") + ", preferred="
                + preferredBatchSizes + ", maxEnqueued=" + maxEnqueuedBatches + "}";
    }
}
