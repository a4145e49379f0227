package io.flinkgpu.inference.qos;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;

/**
 * The queue policy of one priority level.
 *
 * @param timeoutAction what to do with a request whose deadline passed while queued
 * @param maxQueueSize requests this level may queue per model before new ones get QUEUE_FULL (0: unbounded)
 * @param minShare the share of executed samples this level is guaranteed while it has work
 *     queued, even under higher-priority load (0 to 1; anti-starvation)
 */
public record LevelPolicy(
        @JsonProperty("timeout_action") TimeoutAction timeoutAction,
        @JsonProperty("max_queue_size") int maxQueueSize,
        @JsonProperty("min_share") double minShare) implements Serializable {

    public static final LevelPolicy DEFAULT = new LevelPolicy(TimeoutAction.REJECT, 0, 0);

    public LevelPolicy {
        timeoutAction = timeoutAction == null ? TimeoutAction.REJECT : timeoutAction;
        if (maxQueueSize < 0) {
            throw new IllegalArgumentException("max_queue_size must be zero (unbounded) or positive");
        }
        if (minShare < 0 || minShare > 1) {
            throw new IllegalArgumentException("min_share must be within 0..1");
        }
    }
}
