package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.io.Serializable;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A model's declarative configuration, read from {@code <repo>/<model>/config.json}. Modelled on
 * Triton's model configuration; unknown fields are ignored so that newer configs load.
 *
 * <p>Device-memory fields: {@code instance_count} (batches that may run at once on the model's
 * one shared session; absent: no limit), {@code memory_bytes} (device memory to account for a
 * loaded version; absent: the model file's size), {@code version_policy} (which versions are
 * served) and {@code warmup}.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ModelConfig(
        @JsonProperty("name") String name,
        @JsonProperty("platform") String platform,
        @JsonProperty("max_batch_size") int maxBatchSize,
        @JsonProperty("inputs") List<TensorSpec> inputs,
        @JsonProperty("outputs") List<TensorSpec> outputs,
        @JsonProperty("dynamic_batching") BatchingSettings dynamicBatching,
        @JsonProperty("scheduling") SchedulingConfig scheduling,
        @JsonProperty("instance_count") Integer instanceCount,
        @JsonProperty("memory_bytes") Long memoryBytes,
        @JsonProperty("version_policy") VersionPolicy versionPolicy,
        @JsonProperty("warmup") WarmupSettings warmup,
        @JsonProperty("labels") List<String> labels,
        @JsonProperty("description") String description,
        @JsonProperty("metrics") Map<String, Object> metrics) implements Serializable {

    @JsonCreator
    public ModelConfig {
        if (maxBatchSize < 1) {
            throw new IllegalArgumentException("max_batch_size must be at least 1");
        }
        if (inputs == null || inputs.isEmpty()) {
            throw new IllegalArgumentException("a model needs at least one input");
        }
        inputs = List.copyOf(inputs);
        outputs = outputs == null ? List.of() : List.copyOf(outputs);
        Set<String> names = new HashSet<>();
        for (TensorSpec spec : inputs) {
            if (!names.add(spec.name())) {
                throw new IllegalArgumentException("duplicate input name " + spec.name());
            }
        }
        dynamicBatching = dynamicBatching == null ? BatchingSettings.UNSET : dynamicBatching;
        scheduling = scheduling == null ? SchedulingConfig.DEFAULTS : scheduling;
        if (instanceCount != null && instanceCount < 1) {
            throw new IllegalArgumentException("instance_count must be at least 1");
        }
        if (memoryBytes != null && memoryBytes < 1) {
            throw new IllegalArgumentException("memory_bytes must be positive");
        }
        versionPolicy = versionPolicy == null ? VersionPolicy.ALL : versionPolicy;
        warmup = warmup == null ? WarmupSettings.DEFAULT : warmup;
        labels = labels == null ? List.of() : List.copyOf(labels);
        metrics = metrics == null ? Map.of() : Map.copyOf(metrics);
    }

    public TensorSpec input(String inputName) {
        for (TensorSpec spec : inputs) {
            if (spec.name().equals(inputName)) {
                return spec;
            }
        }
        return null;
    }
}
