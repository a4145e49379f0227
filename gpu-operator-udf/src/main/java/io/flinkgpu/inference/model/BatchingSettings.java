package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.List;

/**
 * A model's {@code dynamic_batching} block. Absent values (null) fall back to the operator's
 * configured defaults.
 */
public record BatchingSettings(
        @JsonProperty("max_queue_delay_ms") Double maxQueueDelayMs,
        @JsonProperty("preferred_batch_sizes") List<Integer> preferredBatchSizes,
        @JsonProperty("max_enqueued_batches") Integer maxEnqueuedBatches) implements Serializable {

    public static final BatchingSettings UNSET = new BatchingSettings(null, null, null);

    @JsonCreator
    public BatchingSettings {
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
        preferredBatchSizes = preferredBatchSizes == null ? List.of() : List.copyOf(preferredBatchSizes);
    }
}
