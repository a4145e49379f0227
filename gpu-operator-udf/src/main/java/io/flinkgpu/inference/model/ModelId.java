package io.flinkgpu.inference.model;

import java.io.Serializable;
import java.util.Objects;

/** A model name and a resolved version: the unit that batches, loads and is measured. */
public record ModelId(String name, String version) implements Serializable, Comparable<ModelId> {
    public ModelId {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(version, "version");
    }

    @Override
    public int compareTo(ModelId o) {
        int c = name.compareTo(o.name);
        return c != 0 ? c : version.compareTo(o.version);
    }

    @Override
    public String toString() {
        return name + ":" + version;
    }
}
