package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which of a model's versions are served, in Triton's notation:
 * {@code {"latest": {"num_versions": 2}}}, {@code {"all": {}}} or
 * {@code {"specific": {"versions": [1, 3]}}}. Without a policy every version is served (Triton
 * serves only the latest; we keep every version so that requests pinned to an older version
 * keep working unless the config says otherwise).
 */
public final class VersionPolicy implements Serializable {
    private static final long serialVersionUID = 1L;

    public enum Kind {
        ALL,
        LATEST,
        SPECIFIC
    }

    public static final VersionPolicy ALL = new VersionPolicy(Kind.ALL, 0, Set.of());

    private final Kind kind;
    private final int numVersions;
    private final Set<Integer> versions;

    private VersionPolicy(Kind kind, int numVersions, Set<Integer> versions) {
        this.kind = kind;
        this.numVersions = numVersions;
        this.versions = versions;
    }

    public static VersionPolicy latest(int numVersions) {
        if (numVersions < 1) {
            throw new IllegalArgumentException("version_policy.latest.num_versions must be at least 1");
        }
        return new VersionPolicy(Kind.LATEST, numVersions, Set.of());
    }

    public static VersionPolicy specific(List<Integer> versions) {
        if (versions == null || versions.isEmpty()) {
            throw new IllegalArgumentException("version_policy.specific.versions must name at least one version");
        }
        return new VersionPolicy(Kind.SPECIFIC, 0, Set.copyOf(new TreeSet<>(versions)));
    }

    @JsonCreator
    static VersionPolicy fromJson(@JsonProperty("latest") Map<String, Integer> latest,
            @JsonProperty("all") Map<String, Object> all,
            @JsonProperty("specific") Map<String, List<Integer>> specific) {
        int given = (latest != null ? 1 : 0) + (all != null ? 1 : 0) + (specific != null ? 1 : 0);
        if (given != 1) {
            throw new IllegalArgumentException("version_policy needs exactly one of latest, all, specific");
        }
        if (latest != null) {
            Integer n = latest.get("num_versions");
            return latest(n == null ? 1 : n);
        }
        if (specific != null) {
            return specific(specific.get("versions"));
        }
        return ALL;
    }

    @JsonIgnore
    public Kind kind() {
        return kind;
    }

    /** The versions this policy serves out of {@code available}, which is ordered highest first. */
    public List<String> select(List<String> availableHighestFirst) {
        switch (kind) {
            case LATEST:
                return List.copyOf(availableHighestFirst.subList(0, Math.min(numVersions, availableHighestFirst.size())));
            case SPECIFIC: {
                List<String> chosen = new ArrayList<>();
                for (String v : availableHighestFirst) {
                    if (versions.contains(Integer.parseInt(v))) {
                        chosen.add(v);
                    }
                }
                return chosen;
            }
            default:
                return List.copyOf(availableHighestFirst);
        }
    }

    @Override
    public String toString() {
        switch (kind) {
            case LATEST:
                return "latest " + numVersions;
            case SPECIFIC:
                return "versions " + new TreeSet<>(versions);
            default:
                return "all";
        }
    }
}
