package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the models of one {@link ModelCache} hold of their device: the entries loading or loaded,
 * the model slot and the device bytes each has reserved (through {@link Device#reserve}, so
 * caches sharing a device share its memory), the leases open on each, and the memory measured on
 * first loads, which later loads reserve up front instead of an estimate.
 *
 * <p>A model's memory is its config's {@code memory_bytes}, else what its first load measured,
 * else its file size. Instances of one model share one session, so its memory counts once.
 *
 * <p>Not thread-safe: the cache calls it under its lock.
 */
final class MemoryAccounting {
    private static final Logger LOG = LoggerFactory.getLogger(MemoryAccounting.class);

    private final Device device;
    private final Map<ModelId, CacheEntry> entries = new HashMap<>();
    /** Device memory measured on the first load of models whose config declares none. */
    private final Map<ModelId, Long> measured = new HashMap<>();

    MemoryAccounting(Device device) {
        this.device = device;
    }

    CacheEntry get(ModelId id) {
        return entries.get(id);
    }

    void add(CacheEntry e) {
        entries.put(e.id, e);
    }

    void remove(ModelId id) {
        entries.remove(id);
    }

    /** Whether {@code e} is still the model's entry (not evicted or replaced meanwhile). */
    boolean isCurrent(CacheEntry e) {
        return entries.get(e.id) == e;
    }

    /** Every entry, loading or loaded: a live view. */
    Collection<CacheEntry> entries() {
        return entries.values();
    }

    /** Takes a model slot and {@code need} bytes for {@code e} if the device has them free now. */
    boolean reserve(CacheEntry e, long need) {
        if (device.reserve(need)) {
            e.reservedBytes = need;
            e.placed = true;
            return true;
        }
        return false;
    }

    /** Gives the entry's bytes back to the device. */
    void release(CacheEntry e) {
        device.release(e.reservedBytes);
        e.reservedBytes = 0;
    }

    /** Entries holding a model slot, loading or loaded. */
    int placedCount() {
        int n = 0;
        for (CacheEntry c : entries.values()) {
            n += c.placed ? 1 : 0;
        }
        return n;
    }

    /** Device memory accounted to models loaded or loading. */
    long reservedBytes() {
        long sum = 0;
        for (CacheEntry e : entries.values()) {
            sum += e.reservedBytes;
        }
        return sum;
    }

    /** A new lease on a loaded entry. */
    void hold(CacheEntry e) {
        e.refs++;
    }

    /** A lease closed. */
    void letGo(CacheEntry e) {
        e.refs--;
    }

    /** Open leases on a model. */
    int references(ModelId id) {
        CacheEntry e = entries.get(id);
        return e == null ? 0 : e.refs;
    }

    /**
     * Device memory to account for a model: its declared {@code memory_bytes}, else what its first
     * load measured, else its file size.
     */
    long estimate(ModelId id, ModelConfig config, long fileBytes) {
        if (config.memoryBytes() != null) {
            return config.memoryBytes();
        }
        Long m = measured.get(id);
        return m != null ? m : Math.max(1, fileBytes);
    }

    /** A first load of the full model whose config declares no memory: what it takes is measured. */
    boolean needsMeasuring(CacheEntry e) {
        return e.resolved.config().memoryBytes() == null && e.variant == null && !measured.containsKey(e.id);
    }

    /**
     * Replaces a first load's estimate (the file size) by what the device measured the session
     * and its warm-up to take (never less than the file), and remembers it for later loads. If
     * the measured size does not fit now, the estimate stays accounted until the next load.
     *
     * @return whether the reservation changed (room may have come free)
     */
    boolean adjustToMeasured(CacheEntry e, long bytes) {
        measured.put(e.id, bytes);
        long old = e.reservedBytes;
        if (bytes == old) {
            return false;
        }
        device.release(old);
        if (device.reserve(bytes)) {
            e.reservedBytes = bytes;
            LOG.info("Measured {} on {}: {} KiB (estimated {} KiB from the file)", e.id, device.id(), bytes >> 10,
                    old >> 10);
        } else {
            device.reserve(old);
            LOG.warn("Measured {} on {}: {} KiB, more than is free now; {} KiB stay accounted until its next load",
                    e.id, device.id(), bytes >> 10, old >> 10);
        }
        return true;
    }

    /** Device memory measured on the first load of a model whose config declares none. */
    OptionalLong measuredBytes(ModelId id) {
        Long bytes = measured.get(id);
        return bytes == null ? OptionalLong.empty() : OptionalLong.of(bytes);
    }

    boolean isLoaded(ModelId id) {
        CacheEntry e = entries.get(id);
        return e != null && e.isReady();
    }

    /** The precision variant serving a loaded model, or empty for the full model. */
    Optional<String> precision(ModelId id) {
        CacheEntry e = entries.get(id);
        return e == null || e.variant == null ? Optional.empty() : Optional.of(e.variant.precision());
    }

    /** Models loaded on the device, least recently used first. */
    List<ModelId> residentModels() {
        List<CacheEntry> ready = new ArrayList<>();
        for (CacheEntry e : entries.values()) {
            if (e.isReady()) {
                ready.add(e);
            }
        }
        ready.sort(Comparator.comparingLong(e -> e.useSequence));
        List<ModelId> ids = new ArrayList<>();
        for (CacheEntry e : ready) {
            ids.add(e.id);
        }
        return ids;
    }

    /** The models holding a slot and whether each is loading or in use, for a refusal's reason. */
    String residentDescription() {
        List<String> parts = new ArrayList<>();
        for (CacheEntry c : entries.values()) {
            if (c.placed) {
                parts.add(c.id + (c.state == CacheEntry.State.LOADING ? " (loading)" : " (" + c.refs + " in use)"));
            }
        }
        return parts.toString();
    }
}
