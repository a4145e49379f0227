package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.model.ModelId;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The cache's second tier: the bytes of models evicted from the device, kept in host memory
 * within a budget ({@code inference.cache.host-memory}), so that loading one again is a swap-in
 * that does not read the repository. When the budget is exceeded the copies kept longest ago are
 * dropped first; a model larger than the whole budget is not kept.
 *
 * <p>Not thread-safe: the {@link ModelCache} calls it under its lock.
 */
final class HostTier {
    private final long budgetBytes;
    private final LinkedHashMap<ModelId, byte[]> copies = new LinkedHashMap<>();
    private long bytes;

    HostTier(long budgetBytes) {
        this.budgetBytes = budgetBytes;
    }

    /** Removes and returns the model's bytes, or null when they are not kept. */
    byte[] take(ModelId id) {
        byte[] modelBytes = copies.remove(id);
        if (modelBytes != null) {
            bytes -= modelBytes.length;
        }
        return modelBytes;
    }

    /** Keeps a model's bytes (replacing an older copy), dropping the oldest copies beyond the budget. */
    void keep(ModelId id, byte[] modelBytes) {
        if (modelBytes == null || modelBytes.length > budgetBytes) {
            return;
        }
        take(id);
        copies.put(id, modelBytes);
        bytes += modelBytes.length;
        var oldest = copies.entrySet().iterator();
        while (bytes > budgetBytes && oldest.hasNext()) {
            bytes -= oldest.next().getValue().length;
            oldest.remove();
        }
    }

    /** Models whose bytes are kept, oldest first. */
    List<ModelId> models() {
        return new ArrayList<>(copies.keySet());
    }

    long bytes() {
        return bytes;
    }

    void clear() {
        copies.clear();
        bytes = 0;
    }
}
