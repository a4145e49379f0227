package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.PrecisionVariant;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The models loaded on one device, within its memory and {@code max_models_per_device}.
 *
 * <ul>
 *   <li><b>Leases.</b> {@link #acquire} returns a {@link ModelLease}; a model with an open lease
 *       (a batch executing) is never evicted. Concurrent first uses wait for one load; loads run
 *       outside the cache's lock, so models already loaded keep serving meanwhile.
 *   <li><b>Eviction.</b> A load that does not fit evicts the least recently used models that no
 *       one holds; models unused for {@code eviction_timeout} are evicted by {@link #evictIdle}
 *       (on a background thread unless turned off).
 *   <li><b>Two tiers.</b> An evicted model's bytes stay in host memory (LRU within a budget), so
 *       loading it again skips the repository read: a swap-in rather than a cold load.
 *   <li><b>Out of memory.</b> A load the device refuses for lack of memory (real or injected)
 *       evicts idle models and is retried once; if it fails again that model fails with the
 *       reason, is not retried for {@code loadRetryInterval}, and every other model keeps serving.
 *   <li><b>Warm-up.</b> A new session runs generated batches at the sizes it will see, on
 *       {@code warmup_workers} threads, before its first lease is handed out.
 * </ul>
 *
 * Instances of one model on one device share one session (sessions are thread-safe), so its
 * memory counts once; {@code instance_count} only limits how many batches run on it at once.
 *
 * <p>This class composes the parts and runs a load from end to end: {@link MemoryAccounting}
 * (entries, slots, reserved and measured bytes, leases), {@link EvictionPolicy} (which model
 * leaves, and when), {@link HostTier} (evicted models' bytes), {@link WarmUp} (warm-up and
 * measuring) and {@link SessionLoader} (session creation, config check, retry after out of
 * memory). They share this cache's lock: every part is called under it, and a load waiting for
 * room waits on it.
 */
public final class ModelCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ModelCache.class);

    private final Device device;
    private final ModelCacheSettings settings;
    private final LongSupplier clock;
    private final Listener listener;
    private final WarmUp warmUp;
    private final SessionLoader sessions;

    // Guarded by this.
    private final MemoryAccounting accounting;
    private final HostTier host;
    private final EvictionPolicy eviction;
    private final Map<ModelId, Failure> failures = new HashMap<>();
    private boolean closed;
    private long coldLoads;
    private long swapIns;
    private long evictions;
    private long failedLoads;

    /** What the cache did, for metrics; called on the thread that did it, sometimes under the cache's lock. */
    public interface Listener {
        Listener NONE = new Listener() {};

        default void loaded(ModelId id, long nanos, boolean fromHost) {}

        default void evicted(ModelId id, String reason) {}

        default void loadFailed(ModelId id, String reason) {}
    }

    /** Counts since the cache was created. */
    public record Stats(long coldLoads, long swapIns, long evictions, long failedLoads) {}

    private record Failure(String reason, long atNanos) {}

    public ModelCache(Device device) {
        this(device, ModelCacheSettings.DEFAULTS, System::nanoTime, Listener.NONE);
    }

    public ModelCache(Device device, ModelCacheSettings settings, LongSupplier clock, Listener listener) {
        this.device = device;
        this.settings = settings;
        this.clock = clock;
        this.listener = listener;
        this.accounting = new MemoryAccounting(device);
        this.host = new HostTier(settings.hostMemoryBytes());
        this.warmUp = new WarmUp(device, settings);
        this.sessions = new SessionLoader(device, warmUp, this::evictIdleFor);
        this.eviction = new EvictionPolicy(settings, clock, device.id(), this::evictIdleQuietly); // last: starts a thread
    }

    public Device device() {
        return device;
    }

    public ModelCacheSettings settings() {
        return settings;
    }

    /**
     * The model, loaded and warmed up, held until the lease is closed.
     *
     * @throws ModelLoadException if it cannot be loaded (does not fit, out of memory, corrupt,
     *     does not match its config); the reason is the message
     */
    public ModelLease acquire(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        ModelId id = resolved.id();
        while (true) {
            CacheEntry ready = null;
            CacheEntry mine = null;
            CacheEntry loading = null;
            synchronized (this) {
                if (closed) {
                    throw new ModelLoadException("the model cache of " + device.id() + " is closed");
                }
                CacheEntry e = accounting.get(id);
                if (e != null && e.isReady()) {
                    accounting.hold(e);
                    eviction.touch(e);
                    ready = e;
                } else if (e != null) {
                    loading = e;
                } else {
                    Failure f = failures.get(id);
                    if (f != null && clock.getAsLong() - f.atNanos() < settings.loadRetryInterval().toNanos()) {
                        throw new ModelLoadException(f.reason());
                    }
                    failures.remove(id);
                    mine = new CacheEntry(resolved);
                    accounting.add(mine);
                }
            }
            if (ready != null) {
                return lease(ready);
            }
            if (mine != null) {
                load(mine);
                return lease(mine);
            }
            try {
                loading.done.get();
            } catch (ExecutionException e) {
                // the loader recorded the failure; the next round reports it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ModelLoadException("interrupted while waiting for " + id + " to load on " + device.id());
            }
        }
    }

    /** Loads and warms up a model without holding it, so that it is ready before traffic moves to it. */
    public void preload(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        acquire(resolved).close();
    }

    private ModelLease lease(CacheEntry e) {
        if (e.instances != null) {
            e.instances.acquireUninterruptibly();
        }
        return new ModelLease(e.id, e.model, () -> release(e));
    }

    private void release(CacheEntry e) {
        if (e.instances != null) {
            e.instances.release();
        }
        synchronized (this) {
            accounting.letGo(e);
            eviction.touch(e);
            if (e.refs == 0 && (e.retiring || closed) && accounting.isCurrent(e)) {
                evict(e, closed ? "cache closed" : "version retired");
            }
            if (e.refs == 0) {
                roomChanged();
            }
        }
    }

    private void load(CacheEntry e) throws ModelLoadException {
        ModelId id = e.id;
        long started = System.nanoTime();
        byte[] bytes;
        synchronized (this) {
            bytes = host.take(id);
        }
        boolean fromHost = bytes != null;
        try {
            if (bytes == null) {
                bytes = ModelFiles.read(e.resolved);
            }
            long need;
            synchronized (this) {
                need = accounting.estimate(id, e.resolved.config(), bytes.length);
            }
            boolean reserved = false;
            if (!fromHost && !e.resolved.config().allowedVariants().isEmpty()) {
                synchronized (this) {
                    reserved = eviction.hasSlot(accounting.placedCount()) && accounting.reserve(e, need);
                }
                if (!reserved) {
                    byte[] variantBytes = reserveVariant(e, bytes.length);
                    if (variantBytes != null) {
                        bytes = variantBytes;
                        reserved = true;
                    }
                }
            }
            if (!reserved) {
                synchronized (this) {
                    makeRoom(e, need);
                }
            }
            boolean measure;
            synchronized (this) {
                measure = accounting.needsMeasuring(e);
            }
            OnnxModel model;
            byte[] sessionBytes = bytes;
            if (measure) {
                model = warmUp.measured(() -> sessions.createAndWarmUp(e, sessionBytes, need),
                        grown -> adjustToMeasured(e, Math.max(sessionBytes.length, grown)));
            } else {
                model = sessions.createAndWarmUp(e, sessionBytes, need);
            }
            synchronized (this) {
                if (closed) {
                    SessionLoader.closeQuietly(id, model);
                    throw new ModelLoadException("the model cache of " + device.id() + " closed while loading " + id);
                }
                e.model = model;
                e.bytes = bytes;
                e.state = CacheEntry.State.READY;
                accounting.hold(e);
                eviction.touch(e);
                if (fromHost) {
                    swapIns++;
                } else {
                    coldLoads++;
                }
                roomChanged();
            }
            long nanos = System.nanoTime() - started;
            LOG.info("{} {} on {} in {} ms ({} MiB accounted)", fromHost ? "Swapped in" : "Loaded", id, device.id(),
                    nanos / 1_000_000, e.reservedBytes >> 20);
            listener.loaded(id, nanos, fromHost);
            e.done.complete(null);
        } catch (ModelLoadException | RuntimeException x) {
            String reason = x instanceof ModelLoadException ? x.getMessage()
                    : "cannot load " + id + " on " + device.id() + ": " + x;
            synchronized (this) {
                if (accounting.isCurrent(e)) {
                    accounting.remove(id);
                }
                if (e.reservedBytes > 0) {
                    accounting.release(e);
                }
                if (!(x instanceof NoRoomException)) { // lack of room passes; a broken model does not
                    failures.put(id, new Failure(reason, clock.getAsLong()));
                }
                failedLoads++;
                roomChanged();
                if (fromHost) {
                    keepOnHost(id, bytes);
                }
            }
            LOG.warn("Model {} failed on {}: {}", id, device.id(), reason);
            listener.loadFailed(id, reason);
            e.done.complete(null);
            throw x instanceof ModelLoadException m ? m : new ModelLoadException(reason);
        }
    }

    /** See {@link MemoryAccounting#adjustToMeasured}; called holding the measuring turn. */
    private synchronized void adjustToMeasured(CacheEntry e, long bytes) {
        if (accounting.adjustToMeasured(e, bytes)) {
            roomChanged();
        }
    }

    /** Device memory measured on the first load of a model whose config declares none. */
    public synchronized OptionalLong measuredBytes(ModelId id) {
        return accounting.measuredBytes(id);
    }

    /**
     * Memory pressure: instead of evicting another model, loads the allowed precision variant with
     * the lowest declared accuracy cost that fits in the free memory now. Returns its bytes, or
     * null when none fits (then the full model evicts as usual).
     */
    private byte[] reserveVariant(CacheEntry e, long fullFileBytes) throws ModelLoadException {
        ModelConfig config = e.resolved.config();
        for (PrecisionVariant v : config.allowedVariants()) {
            byte[] bytes = ModelFiles.readVariant(e.resolved, v);
            if (bytes == null) {
                continue;
            }
            long need = config.memoryBytes() != null
                    ? Math.max(1, config.memoryBytes() * bytes.length / Math.max(1, fullFileBytes)) : bytes.length;
            synchronized (this) {
                if (eviction.hasSlot(accounting.placedCount()) && accounting.reserve(e, need)) {
                    e.variant = v;
                    LOG.info("Memory pressure on {}: loading {} as {} (declared accuracy cost {}) instead of evicting",
                            device.id(), e.id, v.precision(), v.accuracyCost());
                    return bytes;
                }
            }
        }
        return null;
    }

    /** The precision variant serving a loaded model ({@code FP16}, {@code INT8}...), or empty for the full model. */
    public synchronized Optional<String> precision(ModelId id) {
        return accounting.precision(id);
    }

    /**
     * Under the lock: reserves {@code need} bytes and a model slot for {@code e}, evicting idle
     * models as needed. When every other model is in use or loading, waits up to {@code roomWait}
     * for one to be released: a lease lasts one batch, so room usually comes soon.
     */
    private void makeRoom(CacheEntry e, long need) throws ModelLoadException {
        if (need > device.totalMemoryBytes()) {
            throw new ModelLoadException("model " + e.id + " needs " + mib(need) + " but " + device.id() + " has "
                    + mib(device.totalMemoryBytes()) + " for models in all");
        }
        long deadline = System.nanoTime() + settings.roomWait().toNanos();
        while (true) {
            boolean slot = eviction.hasSlot(accounting.placedCount());
            if (slot && accounting.reserve(e, need)) {
                return;
            }
            CacheEntry victim = eviction.victim(accounting.entries(), e);
            if (victim != null) {
                evict(victim, "to make room for " + e.id);
                continue;
            }
            long left = deadline - System.nanoTime();
            if (closed || left <= 0 || accounting.placedCount() == 0) {
                throw new NoRoomException("no room for " + e.id + " on " + device.id() + ": "
                        + (slot ? "needs " + mib(need) + ", " + mib(device.freeMemoryBytes()) + " free"
                                : eviction.maxModels() + " models per device at most")
                        + ", and every resident model is in use or loading: " + accounting.residentDescription());
            }
            try {
                TimeUnit.NANOSECONDS.timedWait(this, left);
            } catch (InterruptedException x) {
                Thread.currentThread().interrupt();
                throw new NoRoomException("interrupted while waiting for room for " + e.id + " on " + device.id());
            }
        }
    }

    /** Room may have come free: a lease closed, a load ended, a model was evicted. Under the lock. */
    private void roomChanged() {
        notifyAll();
    }

    /** A load the device refused for lack of memory: evicts idle models until {@code need} bytes are freed. */
    private synchronized List<ModelId> evictIdleFor(CacheEntry e, long need) {
        List<ModelId> evicted = new ArrayList<>();
        long freed = 0;
        for (CacheEntry victim = eviction.victim(accounting.entries(), e); victim != null && freed < need;
                victim = eviction.victim(accounting.entries(), e)) {
            freed += victim.reservedBytes;
            evicted.add(victim.id);
            evict(victim, "out of memory loading " + e.id);
        }
        return evicted;
    }

    /** Under the lock. */
    private void evict(CacheEntry victim, String reason) {
        accounting.remove(victim.id);
        SessionLoader.closeQuietly(victim.id, victim.model);
        accounting.release(victim);
        if (victim.variant == null) { // a later swap-in should get the full model back if it fits
            keepOnHost(victim.id, victim.bytes);
        }
        evictions++;
        roomChanged();
        LOG.info("Evicted {} from {} ({})", victim.id, device.id(), reason);
        listener.evicted(victim.id, reason);
    }

    /** Under the lock: keeps a model's bytes on the host tier unless the cache is closed. */
    private void keepOnHost(ModelId id, byte[] bytes) {
        if (!closed) {
            host.keep(id, bytes);
        }
    }

    /** Evicts every model unused for {@code eviction_timeout} that no one holds; returns them. */
    public synchronized List<ModelId> evictIdle() {
        if (!eviction.evictsIdle() || closed) {
            return List.of();
        }
        long now = eviction.now();
        List<ModelId> evicted = new ArrayList<>();
        for (CacheEntry e : eviction.timedOut(accounting.entries(), now)) {
            evict(e, "idle for " + Duration.ofNanos(now - e.lastUsedNanos).toSeconds() + " s");
            evicted.add(e.id);
        }
        return evicted;
    }

    private void evictIdleQuietly() {
        try {
            evictIdle();
        } catch (RuntimeException e) {
            LOG.warn("Idle eviction on {} failed", device.id(), e);
        }
    }

    /**
     * A LOAD command: loads and warms up the model now, ahead of its traffic, and keeps it loaded
     * while it is pinned (no idle eviction; evicted for room only when no unpinned model can be).
     */
    public void pin(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        synchronized (this) {
            eviction.pin(resolved.id());
            CacheEntry e = accounting.get(resolved.id());
            if (e != null) {
                e.retiring = false; // an UNLOAD still draining is overtaken
            }
        }
        preload(resolved);
    }

    /**
     * An UNLOAD command: unpins the model and unloads it from the device, at once if no batch
     * holds it, else when the last one completes. Requests that still come for it load it again.
     */
    public synchronized void unload(ModelId id) {
        eviction.unpin(id);
        retire(id);
    }

    /** Models pinned by LOAD commands. */
    public synchronized Set<ModelId> pinnedModels() {
        return eviction.pinned();
    }

    /**
     * Unloads a version that is no longer served: at once if no one holds it, else when its last
     * lease closes (it drains). Its bytes stay on the host tier for stragglers.
     */
    public synchronized void retire(ModelId id) {
        CacheEntry e = accounting.get(id);
        if (e == null) {
            return;
        }
        if (e.isIdle()) {
            evict(e, "version retired");
        } else {
            e.retiring = true;
        }
    }

    /** Models loaded on the device, least recently used first. */
    public synchronized List<ModelId> residentModels() {
        return accounting.residentModels();
    }

    /** Models whose bytes are on the host tier, oldest first. */
    public synchronized List<ModelId> hostModels() {
        return host.models();
    }

    public synchronized long hostBytes() {
        return host.bytes();
    }

    /** Device memory accounted to models loaded or loading. */
    public synchronized long reservedBytes() {
        return accounting.reservedBytes();
    }

    public synchronized int loadedCount() {
        return residentModels().size();
    }

    public synchronized boolean isLoaded(ModelId id) {
        return accounting.isLoaded(id);
    }

    /** Open leases on a model. */
    public synchronized int references(ModelId id) {
        return accounting.references(id);
    }

    /** Why the model's last load failed, while that failure is remembered. */
    public synchronized Optional<String> failure(ModelId id) {
        Failure f = failures.get(id);
        return f == null ? Optional.empty() : Optional.of(f.reason());
    }

    public synchronized Stats stats() {
        return new Stats(coldLoads, swapIns, evictions, failedLoads);
    }

    /** Closes every model no one holds now; held ones close when their lease does. */
    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            for (CacheEntry e : new ArrayList<>(accounting.entries())) {
                if (e.isIdle()) {
                    evict(e, "cache closed");
                }
            }
            host.clear();
            roomChanged();
        }
        warmUp.close();
        eviction.close();
    }

    private static String mib(long bytes) {
        return bytes >= (1 << 20) ? (bytes >> 20) + " MiB" : bytes + " bytes";
    }

    /** A model that could not be loaded; requests for it fail with MODEL_LOAD_FAILED. */
    public static class ModelLoadException extends Exception {
        private static final long serialVersionUID = 1L;

        public ModelLoadException(String message) {
            super(message);
        }
    }

    /** Every model was in use for longer than {@code roomWait}: transient, so not remembered as a failure. */
    static final class NoRoomException extends ModelLoadException {
        private static final long serialVersionUID = 1L;

        NoRoomException(String message) {
            super(message);
        }
    }
}
