package io.flinkgpu.coordinator.state;

import java.util.Collections;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/** A {@link StateStore} that forgets everything when the process ends: tests and dry runs. */
public final class InMemoryStateStore extends KeyValueStateStore {
    private final TreeMap<String, byte[]> map = new TreeMap<>();

    @Override
    protected byte[] get(String key) {
        return map.get(key);
    }

    @Override
    protected void write(Map<String, byte[]> entries, boolean sync) {
        entries.forEach((k, v) -> {
            if (v == null) {
                map.remove(k);
            } else {
                map.put(k, v.clone());
            }
        });
    }

    @Override
    protected SortedMap<String, byte[]> scan(String prefix) {
        return Collections.unmodifiableSortedMap(new TreeMap<>(map.subMap(prefix, prefix + Character.MAX_VALUE)));
    }

    @Override
    public void close() {}
}
