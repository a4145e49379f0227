package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * How one model's requests that do not pin a version are split between its versions during a
 * rollout: each request goes to one version, in proportion to the weights, chosen from the
 * request id (so a retried request meets the same version). Requests that name a version keep it.
 *
 * @param reason why this split (e.g. "rollout 1 -> 2, step 2 of 4 (25%)")
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record VersionSplit(@JsonProperty(required = true) String model, List<VersionWeight> versions, String reason) {
    public VersionSplit {
        versions = versions == null ? List.of() : List.copyOf(versions);
    }

    /** One version's share of a split. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    public record VersionWeight(@JsonProperty(required = true) String version,
            @JsonProperty(required = true) double weight) {}

    /**
     * The version a request with id {@code requestId} is served by: the weights laid end to end on
     * [0, 1), the request's place on that line fixed by a hash of its id.
     */
    public String choose(String requestId) {
        double total = 0;
        for (VersionWeight w : versions) {
            total += w.weight();
        }
        // A 64-bit mix of the id's hash (String.hashCode alone clusters for ids like "req-1", "req-2").
        long h = requestId == null ? 0 : requestId.hashCode();
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        double point = ((h >>> 11) * 0x1.0p-53) * total;
        double upTo = 0;
        for (VersionWeight w : versions) {
            upTo += w.weight();
            if (point < upTo) {
                return w.version();
            }
        }
        return versions.get(versions.size() - 1).version();
    }
}
