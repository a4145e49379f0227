package io.flinkgpu.inference.qos;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.List;

/**
 * One tenant's share and limits.
 *
 * @param name tenant id, as requests carry it in {@code parameters.tenant}
 * @param weight share of capacity within a priority level relative to other backlogged tenants
 * @param rateLimit requests per second per inference subtask (0: unlimited)
 * @param burst token bucket depth (0: one second's worth of {@code rateLimit})
 * @param maxInFlight requests accepted and not yet answered per subtask (0: unlimited)
 * @param allowedModels model names this tenant may use ({@code "*"} or empty: all)
 */
public record TenantConfig(
        @JsonProperty("name") String name,
        @JsonProperty("weight") double weight,
        @JsonProperty("rate_limit") double rateLimit,
        @JsonProperty("burst") double burst,
        @JsonProperty("max_in_flight") int maxInFlight,
        @JsonProperty("allowed_models") List<String> allowedModels) implements Serializable {

    @JsonCreator
    public TenantConfig {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException("a tenant needs a name");
        }
        weight = weight == 0 ? 1 : weight;
        if (weight < 0 || rateLimit < 0 || burst < 0 || maxInFlight < 0) {
            throw new IllegalArgumentException("tenant " + name + ": weight, rate_limit, burst and max_in_flight "
                    + "must not be negative");
        }
        allowedModels = allowedModels == null ? List.of() : List.copyOf(allowedModels);
    }

    public static TenantConfig unlimited(String name) {
        return new TenantConfig(name, 1, 0, 0, 0, List.of());
    }

    public boolean allows(String model) {
        return allowedModels.isEmpty() || allowedModels.contains("*") || allowedModels.contains(model);
    }
}
