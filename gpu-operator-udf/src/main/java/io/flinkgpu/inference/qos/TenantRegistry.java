package io.flinkgpu.inference.qos;

import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The configured tenants, read from a JSON file:
 *
 * <pre>{@code
 * {"default": {"name": "default", "weight": 1},
 *  "tenants": [{"name": "shop", "weight": 3, "rate_limit": 500, "max_in_flight": 200,
 *               "allowed_models": ["fashion-mnist-cnn"]}]}
 * }</pre>
 *
 * A tenant that is not listed gets the {@code default} entry's limits under its own name.
 */
public final class TenantRegistry implements Serializable {
    private final Map<String, TenantConfig> tenants;
    private final TenantConfig fallback;

    public TenantRegistry(List<TenantConfig> tenants, TenantConfig fallback) {
        this.tenants = new HashMap<>();
        for (TenantConfig t : tenants) {
            if (this.tenants.put(t.name(), t) != null) {
                throw new IllegalArgumentException("tenant " + t.name() + " is listed twice");
            }
        }
        this.fallback = fallback == null ? TenantConfig.unlimited("default") : fallback;
    }

    public static TenantRegistry unlimited() {
        return new TenantRegistry(List.of(), null);
    }

    record File(@JsonProperty("default") TenantConfig fallback, @JsonProperty("tenants") List<TenantConfig> tenants) {}

    public static TenantRegistry load(Path file) {
        try {
            File f = new ObjectMapper().readValue(file.toFile(), File.class);
            return new TenantRegistry(f.tenants() == null ? List.of() : f.tenants(), f.fallback());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read tenants from " + file, e);
        }
    }

    public TenantConfig get(String tenant) {
        TenantConfig t = tenants.get(tenant);
        if (t != null) {
            return t;
        }
        return new TenantConfig(tenant, fallback.weight(), fallback.rateLimit(), fallback.burst(),
                fallback.maxInFlight(), fallback.allowedModels());
    }

    public double weight(String tenant) {
        TenantConfig t = tenants.get(tenant);
        return t != null ? t.weight() : fallback.weight();
    }
}
