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
 * served) and {@code warmup}. {@code precision_variants} lists lower-precision files of each version
 * with their declared accuracy cost; under memory pressure the cache may load one whose cost is at
 * most {@code max_accuracy_cost} (0, the default: never) instead of evicting another model.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ModelConfig(
        @JsonProperty("name") String name,
        @JsonProperty("platform") String platform,
        @JsonProperty("max_batch_size") int maxBatchSize,
        @JsonProperty("inputs") List<TensorSpec> inputs,
        @JsonProperty("outputs") List<TensorSpec> outputs,
        @JsonProperty("dynamic_batching") BatchingConfig dynamicBatching,
        @JsonProperty("scheduling") SchedulingConfig scheduling,
        @JsonProperty("instance_count") Integer instanceCount,
        @JsonProperty("memory_bytes") Long memoryBytes,
        @JsonProperty("version_policy") VersionPolicy versionPolicy,
        @JsonProperty("warmup") WarmupSettings warmup,
        @JsonProperty("precision_variants") List<PrecisionVariant> precisionVariants,
        @JsonProperty("max_accuracy_cost") double maxAccuracyCost,
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
        dynamicBatching = dynamicBatching == null ? BatchingConfig.UNSET : dynamicBatching;
        scheduling = scheduling == null ? SchedulingConfig.DEFAULTS : scheduling;
        if (instanceCount != null && instanceCount < 1) {
            throw new IllegalArgumentException("instance_count must be at least 1");
        }
        if (memoryBytes != null && memoryBytes < 1) {
            throw new IllegalArgumentException("memory_bytes must be positive");
        }
        versionPolicy = versionPolicy == null ? VersionPolicy.ALL : versionPolicy;
        warmup = warmup == null ? WarmupSettings.DEFAULT : warmup;
        precisionVariants = precisionVariants == null ? List.of() : List.copyOf(precisionVariants);
        if (maxAccuracyCost < 0 || maxAccuracyCost > 1) {
            throw new IllegalArgumentException("max_accuracy_cost must be within 0..1");
        }
        labels = labels == null ? List.of() : List.copyOf(labels);
        metrics = metrics == null ? Map.of() : Map.copyOf(metrics);
    }

    /** The smallest-cost-first variants this config allows the cache to substitute. */
    public List<PrecisionVariant> allowedVariants() {
        return precisionVariants.stream().filter(v -> v.accuracyCost() <= maxAccuracyCost)
                .sorted(java.util.Comparator.comparingDouble(PrecisionVariant::accuracyCost)).toList();
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
