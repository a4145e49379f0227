package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.List;

/**
 * A model's {@code warmup} block: whether a freshly loaded version runs on generated inputs
 * before it takes traffic, and at which batch sizes (default: 1, the preferred batch sizes and
 * the largest batch the operator will cut for it).
 */
public record WarmupSettings(
        @JsonProperty("enabled") Boolean enabled,
        @JsonProperty("batch_sizes") List<Integer> batchSizes) implements Serializable {

    public static final WarmupSettings DEFAULT = new WarmupSettings(true, List.of());

    @JsonCreator
    public WarmupSettings {
        enabled = enabled == null || enabled;
        batchSizes = batchSizes == null ? List.of() : List.copyOf(batchSizes);
        for (int b : batchSizes) {
            if (b < 1) {
                throw new IllegalArgumentException("warmup.batch_sizes must be positive: " + b);
            }
        }
    }
}
