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
        preferredBatchSizes = preferredBatchSizes == null ? List.of() : List.copyOf(preferredBatchSizes);
    }
}
