package io.flinkgpu.coordinator.plan;

import com.fasterxml.jackson.annotation.JsonIgnore;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/** Which devices hold an instance of each model. Immutable, sorted, so equal placements compare equal. */
public record Placement(SortedMap<String, SortedSet<String>> devicesByModel) {
    public static final Placement EMPTY = new Placement(new TreeMap<>());

    public Placement {
        TreeMap<String, SortedSet<String>> copy = new TreeMap<>();
        if (devicesByModel != null) {
            devicesByModel.forEach((m, ds) -> {
                if (ds != null && !ds.isEmpty()) {
                    copy.put(m, java.util.Collections.unmodifiableSortedSet(new TreeSet<>(ds)));
                }
            });
        }
        devicesByModel = java.util.Collections.unmodifiableSortedMap(copy);
    }

    public static Placement of(Map<String, ? extends Set<String>> map) {
        TreeMap<String, SortedSet<String>> m = new TreeMap<>();
        map.forEach((k, v) -> m.put(k, new TreeSet<>(v)));
        return new Placement(m);
    }

    public SortedSet<String> devices(String model) {
        return devicesByModel.getOrDefault(model, new TreeSet<>());
    }

    /** The models on {@code device}. */
    public SortedSet<String> models(String device) {
        TreeSet<String> out = new TreeSet<>();
        devicesByModel.forEach((m, ds) -> {
            if (ds.contains(device)) {
                out.add(m);
            }
        });
        return out;
    }

    @JsonIgnore
    public int instanceCount() {
        return devicesByModel.values().stream().mapToInt(Set::size).sum();
    }
}
