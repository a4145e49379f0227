package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The {@link ModelCache}'s own policy parts, driven on a virtual clock by the fleet simulator:
 * {@link MemoryAccounting} (entries, model slots, the bytes reserved on the {@link Device}),
 * {@link EvictionPolicy} (least recently used victim, unpinned first; idle timeout; the
 * {@code max_models_per_device} slot limit) and {@link CacheEntry} (state, leases, last use).
 * {@link ModelCache} itself cannot run here: it creates and warms up a real ONNX Runtime session
 * on every load and waits in real time. So this class repeats only its load sequence
 * ({@code makeRoom}: take a slot and the bytes, else evict the policy's victim, else give up)
 * and leaves every choice to the policy classes. Load time is the caller's (the device's
 * {@code LoadTimeModel}); the host tier is not modelled (every load costs the same).
 *
 * <p>It lives in the cache's package, in the simulator module, because those parts are
 * package-private in the library. Single-threaded, like the simulation.
 */
public final class SimulatedModelCache {
    /** What {@link #ensure} found or did. */
    public enum Outcome {
        /** Loaded: a batch may run now. */
        READY,
        /** A load is under way (started now or earlier); it completes when the caller says so. */
        LOADING,
        /** It does not fit and nothing may be evicted. */
        NO_ROOM
    }

    private final Device device;
    private final MemoryAccounting accounting;
    private final EvictionPolicy eviction;
    private final boolean mayEvict;
    private long loads;
    private long evictions;

    /**
     * @param mayEvict false: a model that does not fit is refused, nothing is ever evicted (Triton's
     *     default with every model loaded at start)
     */
    public SimulatedModelCache(Device device, ModelCacheSettings settings, LongSupplier clock, boolean mayEvict) {
        this.device = device;
        this.accounting = new MemoryAccounting(device);
        this.eviction = new EvictionPolicy(settings.withBackgroundEviction(false), clock, device.id(), () -> {});
        this.mayEvict = mayEvict;
    }

    public Device device() {
        return device;
    }

    /**
     * Makes sure the model is loaded or loading, evicting the policy's victims for room as
     * {@link ModelCache} does (declared {@code memory_bytes}, else the file size).
     */
    public Outcome ensure(ModelRepository.ResolvedModel model, long fileBytes) {
        CacheEntry e = accounting.get(model.id());
        if (e != null) {
            return e.isReady() ? Outcome.READY : Outcome.LOADING;
        }
        CacheEntry mine = new CacheEntry(model);
        long need = accounting.estimate(model.id(), model.config(), fileBytes);
        if (need > device.totalMemoryBytes()) {
            return Outcome.NO_ROOM;
        }
        accounting.add(mine);
        while (true) {
            if (eviction.hasSlot(accounting.placedCount()) && accounting.reserve(mine, need)) {
                loads++;
                return Outcome.LOADING;
            }
            CacheEntry victim = mayEvict ? eviction.victim(accounting.entries(), mine) : null;
            if (victim == null) {
                accounting.remove(mine.id);
                return Outcome.NO_ROOM;
            }
            evict(victim);
        }
    }

    /** The load started by {@link #ensure} completed. */
    public void loaded(ModelId id) {
        CacheEntry e = accounting.get(id);
        if (e != null && !e.isReady()) {
            e.state = CacheEntry.State.READY;
            eviction.touch(e);
        }
    }

    /** A batch of the model starts: it holds a lease, so it is not evicted meanwhile. */
    public void hold(ModelId id) {
        CacheEntry e = accounting.get(id);
        if (e != null && e.isReady()) {
            accounting.hold(e);
            eviction.touch(e);
        }
    }

    /** The batch completed: the lease closes (a retiring model leaves now). */
    public void release(ModelId id) {
        CacheEntry e = accounting.get(id);
        if (e != null && e.refs > 0) {
            accounting.letGo(e);
            eviction.touch(e);
            if (e.refs == 0 && e.retiring) {
                evict(e);
            }
        }
    }

    /** A LOAD command: pinned (never idle-evicted, evicted for room after unpinned models). */
    public void pin(ModelId id) {
        eviction.pin(id);
        CacheEntry e = accounting.get(id);
        if (e != null) {
            e.retiring = false;
        }
    }

    /** An UNLOAD command: unpinned and unloaded, at once if idle, else when its batch completes. */
    public void unload(ModelId id) {
        eviction.unpin(id);
        CacheEntry e = accounting.get(id);
        if (e == null) {
            return;
        }
        if (e.isIdle()) {
            evict(e);
        } else if (e.isReady()) {
            e.retiring = true;
        }
    }

    /** Models unused for the eviction timeout, as {@link ModelCache#evictIdle} evicts them. */
    public List<ModelId> evictIdle(long nowNanos) {
        if (!eviction.evictsIdle() || !mayEvict) {
            return List.of();
        }
        List<ModelId> out = new ArrayList<>();
        for (CacheEntry e : eviction.timedOut(accounting.entries(), nowNanos)) {
            evict(e);
            out.add(e.id);
        }
        return out;
    }

    private void evict(CacheEntry victim) {
        accounting.remove(victim.id);
        accounting.release(victim);
        evictions++;
    }

    public boolean isLoaded(ModelId id) {
        return accounting.isLoaded(id);
    }

    /** Loaded or loading. */
    public boolean holds(ModelId id) {
        return accounting.get(id) != null;
    }

    /** Models holding a slot, loading or loaded. */
    public int placedCount() {
        return accounting.placedCount();
    }

    public List<ModelId> residentModels() {
        return accounting.residentModels();
    }

    public long reservedBytes() {
        return accounting.reservedBytes();
    }

    public int maxModels() {
        return eviction.maxModels();
    }

    /** Loads started since creation. */
    public long loads() {
        return loads;
    }

    public long evictions() {
        return evictions;
    }
}
