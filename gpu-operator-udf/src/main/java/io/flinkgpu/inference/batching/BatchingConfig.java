package io.flinkgpu.inference.batching;

import java.io.Serializable;
import java.time.Duration;
import java.util.Arrays;

/**
 * How one model batches.
 *
 * @param maxBatchSize samples per batch at most
 * @param maxQueueDelay how long the oldest queued request may wait for a batch to fill
 * @param preferredBatchSizes sizes worth dispatching at once when reached (ascending, each at most
 *     {@code maxBatchSize}); empty for none
 * @param maxEnqueuedBatches how many full batches may wait per model before the batcher signals
 *     backpressure
 */
public record BatchingConfig(int maxBatchSize, Duration maxQueueDelay, int[] preferredBatchSizes,
        int maxEnqueuedBatches) implements Serializable {

    public static final int DEFAULT_MAX_BATCH_SIZE = 32;
    public static final Duration DEFAULT_MAX_QUEUE_DELAY = Duration.ZERO;
    public static final int DEFAULT_MAX_ENQUEUED_BATCHES = 4;

    public static final BatchingConfig DEFAULTS = new BatchingConfig(
            DEFAULT_MAX_BATCH_SIZE, DEFAULT_MAX_QUEUE_DELAY, new int[0], DEFAULT_MAX_ENQUEUED_BATCHES);

    public BatchingConfig {
        if (maxBatchSize < 1) {
            throw new IllegalArgumentException("max batch size must be at least 1, got " + maxBatchSize);
        }
        if (maxQueueDelay == null || maxQueueDelay.isNegative()) {
            throw new IllegalArgumentException("max queue delay must be zero or positive");
        }
        if (maxEnqueuedBatches < 1) {
            throw new IllegalArgumentException("max enqueued batches must be at least 1, got " + maxEnqueuedBatches);
        }
        preferredBatchSizes = preferredBatchSizes == null ? new int[0] : preferredBatchSizes.clone();
        Arrays.sort(preferredBatchSizes);
        for (int p : preferredBatchSizes) {
            if (p < 1 || p > maxBatchSize) {
                throw new IllegalArgumentException("preferred batch size " + p + " is outside 1.." + maxBatchSize);
            }
        }
    }

    public BatchingConfig withMaxBatchSize(int size) {
        int[] preferred = Arrays.stream(preferredBatchSizes).filter(p -> p <= size).toArray();
        return new BatchingConfig(size, maxQueueDelay, preferred, maxEnqueuedBatches);
    }

    /** Queued samples per model beyond which the batcher reports backpressure. */
    public long queueCapacity() {
        return (long) maxBatchSize * maxEnqueuedBatches;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof BatchingConfig c && c.maxBatchSize == maxBatchSize && c.maxQueueDelay.equals(maxQueueDelay)
                && Arrays.equals(c.preferredBatchSizes, preferredBatchSizes) && c.maxEnqueuedBatches == maxEnqueuedBatches;
    }

    @Override
    public int hashCode() {
        return 31 * (31 * (31 * maxBatchSize + maxQueueDelay.hashCode()) + Arrays.hashCode(preferredBatchSizes))
                + maxEnqueuedBatches;
    }

    @Override
    public String toString() {
        return "BatchingConfig{max=" + maxBatchSize + ", delay=" + maxQueueDelay.toMillis() + "ms, preferred="
                + Arrays.toString(preferredBatchSizes) + ", maxEnqueued=" + maxEnqueuedBatches + "}";
    }
}
