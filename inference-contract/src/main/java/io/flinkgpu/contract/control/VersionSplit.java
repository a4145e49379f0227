package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;

/**
 * How one model's requests that do not pin a version are split between its versions during a
 * rollout: each request goes to one version, in proportion to the weights, chosen from the
 * request id (so a retried request meets the same version). Requests that name a version keep it.
 *
 * <p>In shadow mode ({@code shadow} set) requests are answered by the split as usual, and a copy of
 * a {@code shadowFraction} share of them (chosen from the id too) also goes to the shadow version;
 * the shadow's answers are compared with the served ones and discarded, never returned.
 *
 * @param reason why this split (e.g. "rollout 1 -> 2, step 2 of 4 (25%)")
 * @param shadow the version that gets copies, or null
 * @param shadowFraction the share of requests copied to {@code shadow}, in (0, 1]
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record VersionSplit(@JsonProperty(required = true) String model, List<VersionWeight> versions, String reason,
        String shadow, double shadowFraction) {
    public VersionSplit {
        versions = versions == null ? List.of() : List.copyOf(versions);
    }

    /** A split without a shadow. */
    public VersionSplit(String model, List<VersionWeight> versions, String reason) {
        this(model, versions, reason, null, 0);
    }

    /** Whether a copy of request {@code requestId} goes to the shadow version. */
    public boolean shadows(String requestId) {
        return shadow != null && unit(requestId == null ? "" : requestId + "#shadow") < shadowFraction;
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
        double point = unit(requestId) * total;
        double upTo = 0;
        for (VersionWeight w : versions) {
            upTo += w.weight();
            if (point < upTo) {
                return w.version();
            }
        }
        return versions.get(versions.size() - 1).version();
    }

    /** A point in [0, 1) fixed by {@code id}: a 64-bit mix of its hash (String.hashCode alone clusters for "req-1", "req-2"). */
    private static double unit(String id) {
        long h = id == null ? 0 : id.hashCode();
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return (h >>> 11) * 0x1.0p-53;
    }
}
