package io.flinkgpu.inference.model;

import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceOutOfMemoryException;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.protocol.DataType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
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
 */
public final class ModelCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ModelCache.class);

    private final Device device;
    private final ModelCacheSettings settings;
    private final LongSupplier clock;
    private final Listener listener;
    private final ExecutorService warmupPool;
    private final ScheduledExecutorService evictionThread;

    // Guarded by this.
    private final Map<ModelId, Entry> entries = new HashMap<>();
    private final Map<ModelId, Failure> failures = new HashMap<>();
    private final LinkedHashMap<ModelId, byte[]> host = new LinkedHashMap<>();
    /** Device memory measured on the first load of models whose config declares none. */
    private final Map<ModelId, Long> measured = new HashMap<>();
    /** Pinned by a LOAD command: never evicted for being idle, and evicted for room only after unpinned ones. */
    private final java.util.Set<ModelId> pinned = new java.util.HashSet<>();
    /** First loads that are measured run one at a time, so the difference in memory in use is theirs. */
    private final Object measureLock = new Object();
    private long hostBytes;
    private long useSequence;
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

    private enum State {
        LOADING,
        READY
    }

    private record Failure(String reason, long atNanos) {}

    private static final class Entry {
        final ModelId id;
        final ModelRepository.ResolvedModel resolved;
        final CompletableFuture<Void> done = new CompletableFuture<>();
        final Semaphore instances;
        State state = State.LOADING;
        OnnxModel model;
        byte[] bytes;
        long reservedBytes;
        boolean placed; // holds a model slot and its memory (loading or ready)
        int refs;
        long lastUsedNanos;
        long useSequence;
        boolean retiring;
        /** The precision variant loaded instead of the full model, or null. */
        PrecisionVariant variant;

        Entry(ModelRepository.ResolvedModel resolved) {
            this.id = resolved.id();
            this.resolved = resolved;
            Integer n = resolved.config().instanceCount();
            this.instances = n == null ? null : new Semaphore(n);
        }
    }

    public ModelCache(Device device) {
        this(device, ModelCacheSettings.DEFAULTS, System::nanoTime, Listener.NONE);
    }

    public ModelCache(Device device, ModelCacheSettings settings, LongSupplier clock, Listener listener) {
        this.device = device;
        this.settings = settings;
        this.clock = clock;
        this.listener = listener;
        this.warmupPool = settings.warmupWorkers() == 0 ? null
                : Executors.newFixedThreadPool(settings.warmupWorkers(), daemon("model-warmup-" + device.id()));
        Duration timeout = settings.evictionTimeout();
        if (settings.backgroundEviction() && !timeout.isZero()) {
            long period = Math.max(1000, Math.min(30_000, timeout.toMillis() / 10));
            evictionThread = Executors.newSingleThreadScheduledExecutor(daemon("model-eviction-" + device.id()));
            evictionThread.scheduleWithFixedDelay(this::evictIdleQuietly, period, period, TimeUnit.MILLISECONDS);
        } else {
            evictionThread = null;
        }
    }

    private static ThreadFactory daemon(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
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
            Entry ready = null;
            Entry mine = null;
            Entry loading = null;
            synchronized (this) {
                if (closed) {
                    throw new ModelLoadException("the model cache of " + device.id() + " is closed");
                }
                Entry e = entries.get(id);
                if (e != null && e.state == State.READY) {
                    e.refs++;
                    touch(e);
                    ready = e;
                } else if (e != null) {
                    loading = e;
                } else {
                    Failure f = failures.get(id);
                    if (f != null && clock.getAsLong() - f.atNanos() < settings.loadRetryInterval().toNanos()) {
                        throw new ModelLoadException(f.reason());
                    }
                    failures.remove(id);
                    mine = new Entry(resolved);
                    entries.put(id, mine);
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

    private ModelLease lease(Entry e) {
        if (e.instances != null) {
            e.instances.acquireUninterruptibly();
        }
        return new ModelLease(e.id, e.model, () -> release(e));
    }

    private void release(Entry e) {
        if (e.instances != null) {
            e.instances.release();
        }
        synchronized (this) {
            e.refs--;
            touch(e);
            if (e.refs == 0 && (e.retiring || closed) && entries.get(e.id) == e) {
                evict(e, closed ? "cache closed" : "version retired");
            }
            if (e.refs == 0) {
                roomChanged();
            }
        }
    }

    private void touch(Entry e) {
        e.lastUsedNanos = clock.getAsLong();
        e.useSequence = ++useSequence;
    }

    private void load(Entry e) throws ModelLoadException {
        ModelId id = e.id;
        long started = System.nanoTime();
        byte[] bytes;
        synchronized (this) {
            bytes = host.remove(id);
            if (bytes != null) {
                hostBytes -= bytes.length;
            }
        }
        boolean fromHost = bytes != null;
        try {
            if (bytes == null) {
                bytes = read(e.resolved);
            }
            long need;
            synchronized (this) {
                need = memoryEstimate(id, e.resolved.config(), bytes.length);
            }
            boolean reserved = false;
            if (!fromHost && !e.resolved.config().allowedVariants().isEmpty()) {
                synchronized (this) {
                    reserved = placedCount() < settings.maxModels() && reserve(e, need);
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
                measure = e.resolved.config().memoryBytes() == null && e.variant == null && !measured.containsKey(id);
            }
            OnnxModel model;
            if (measure) {
                synchronized (measureLock) {
                    java.util.OptionalLong before = device.memoryInUseBytes();
                    model = createAndWarmUp(e, bytes, need);
                    java.util.OptionalLong after = device.memoryInUseBytes();
                    if (before.isPresent() && after.isPresent()) {
                        adjustToMeasured(e, Math.max(bytes.length, after.getAsLong() - before.getAsLong()));
                    }
                }
            } else {
                model = createAndWarmUp(e, bytes, need);
            }
            synchronized (this) {
                if (closed) {
                    closeQuietly(id, model);
                    throw new ModelLoadException("the model cache of " + device.id() + " closed while loading " + id);
                }
                e.model = model;
                e.bytes = bytes;
                e.state = State.READY;
                e.refs++;
                touch(e);
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
                if (entries.get(id) == e) {
                    entries.remove(id);
                }
                if (e.reservedBytes > 0) {
                    device.release(e.reservedBytes);
                    e.reservedBytes = 0;
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

    /** A session on the device, checked against its config and warmed up; closed again if either fails. */
    private OnnxModel createAndWarmUp(Entry e, byte[] bytes, long need) throws ModelLoadException {
        OnnxModel model = createSession(e, bytes, need);
        try {
            List<String> problems = mismatches(e.resolved.config(), model);
            if (!problems.isEmpty()) {
                throw new ModelLoadException("model " + e.id + " does not match its config: " + problems);
            }
            warmUp(e.resolved.config(), model);
        } catch (ModelLoadException | RuntimeException x) {
            closeQuietly(e.id, model);
            throw x;
        }
        return model;
    }

    /**
     * Replaces a first load's estimate (the file size) by what the device measured the session
     * and its warm-up to take (never less than the file), and remembers it for later loads. If
     * the measured size does not fit now, the estimate stays accounted until the next load.
     */
    private synchronized void adjustToMeasured(Entry e, long bytes) {
        measured.put(e.id, bytes);
        long old = e.reservedBytes;
        if (bytes == old) {
            return;
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
        roomChanged();
    }

    /** Device memory measured on the first load of a model whose config declares none. */
    public synchronized java.util.OptionalLong measuredBytes(ModelId id) {
        Long bytes = measured.get(id);
        return bytes == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(bytes);
    }

    private static byte[] read(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        try {
            return Files.readAllBytes(resolved.file());
        } catch (IOException e) {
            throw new ModelLoadException("cannot read " + resolved.file() + " for " + resolved.id() + ": " + e);
        }
    }

    /** Under the lock: takes a slot and {@code need} bytes for {@code e} if they are free now. */
    private boolean reserve(Entry e, long need) {
        if (device.reserve(need)) {
            e.reservedBytes = need;
            e.placed = true;
            return true;
        }
        return false;
    }

    /**
     * Memory pressure: instead of evicting another model, loads the allowed precision variant with
     * the lowest declared accuracy cost that fits in the free memory now. Returns its bytes, or
     * null when none fits (then the full model evicts as usual).
     */
    private byte[] reserveVariant(Entry e, long fullFileBytes) throws ModelLoadException {
        ModelConfig config = e.resolved.config();
        for (PrecisionVariant v : config.allowedVariants()) {
            Path file = e.resolved.file().resolveSibling(v.file());
            if (!Files.isRegularFile(file)) {
                LOG.warn("Precision variant {} of {} is declared but {} is missing", v.precision(), e.id, file);
                continue;
            }
            byte[] bytes;
            try {
                Path real = file.toRealPath();
                if (!real.getParent().equals(e.resolved.file().toRealPath().getParent())) {
                    throw new ModelLoadException(file + " resolves outside the version directory of " + e.id);
                }
                bytes = Files.readAllBytes(real);
            } catch (IOException x) {
                throw new ModelLoadException("cannot read precision variant " + file + " of " + e.id + ": " + x);
            }
            long need = config.memoryBytes() != null
                    ? Math.max(1, config.memoryBytes() * bytes.length / Math.max(1, fullFileBytes)) : bytes.length;
            synchronized (this) {
                if (placedCount() < settings.maxModels() && reserve(e, need)) {
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
        Entry e = entries.get(id);
        return e == null || e.variant == null ? Optional.empty() : Optional.of(e.variant.precision());
    }

    /**
     * Device memory to account for a model: its declared {@code memory_bytes}, else what its first
     * load measured, else its file size. Under the lock.
     */
    private long memoryEstimate(ModelId id, ModelConfig config, long fileBytes) {
        if (config.memoryBytes() != null) {
            return config.memoryBytes();
        }
        Long m = measured.get(id);
        return m != null ? m : Math.max(1, fileBytes);
    }

    /**
     * Under the lock: reserves {@code need} bytes and a model slot for {@code e}, evicting idle
     * models as needed. When every other model is in use or loading, waits up to {@code roomWait}
     * for one to be released: a lease lasts one batch, so room usually comes soon.
     */
    private void makeRoom(Entry e, long need) throws ModelLoadException {
        if (need > device.totalMemoryBytes()) {
            throw new ModelLoadException("model " + e.id + " needs " + mib(need) + " but " + device.id() + " has "
                    + mib(device.totalMemoryBytes()) + " for models in all");
        }
        long deadline = System.nanoTime() + settings.roomWait().toNanos();
        while (true) {
            boolean slot = placedCount() < settings.maxModels();
            if (slot && device.reserve(need)) {
                e.reservedBytes = need;
                e.placed = true;
                return;
            }
            Entry victim = leastRecentlyUsedIdle(e);
            if (victim != null) {
                evict(victim, "to make room for " + e.id);
                continue;
            }
            long left = deadline - System.nanoTime();
            if (closed || left <= 0 || placedCount() == 0) {
                throw new NoRoomException("no room for " + e.id + " on " + device.id() + ": "
                        + (slot ? "needs " + mib(need) + ", " + mib(device.freeMemoryBytes()) + " free"
                                : settings.maxModels() + " models per device at most")
                        + ", and every resident model is in use or loading: " + residentDescription());
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

    private int placedCount() {
        int n = 0;
        for (Entry c : entries.values()) {
            n += c.placed ? 1 : 0;
        }
        return n;
    }

    /** The eviction victim: the least recently used model no one holds, unpinned ones first. */
    private Entry leastRecentlyUsedIdle(Entry except) {
        Entry lru = null;
        for (Entry c : entries.values()) {
            if (c != except && c.state == State.READY && c.refs == 0 && (lru == null || before(c, lru))) {
                lru = c;
            }
        }
        return lru;
    }

    private boolean before(Entry a, Entry b) {
        boolean pa = pinned.contains(a.id);
        boolean pb = pinned.contains(b.id);
        return pa != pb ? !pa : a.useSequence < b.useSequence;
    }

    private String residentDescription() {
        List<String> parts = new ArrayList<>();
        for (Entry c : entries.values()) {
            if (c.placed) {
                parts.add(c.id + (c.state == State.LOADING ? " (loading)" : " (" + c.refs + " in use)"));
            }
        }
        return parts.toString();
    }

    private OnnxModel createSession(Entry e, byte[] bytes, long need) throws ModelLoadException {
        try {
            return OnnxModel.load(e.id, bytes, device);
        } catch (Exception | LinkageError first) {
            if (!DeviceOutOfMemoryException.isOutOfMemory(first)) {
                throw new ModelLoadException("cannot load " + e.id + " on " + device.id() + ": " + first.getMessage());
            }
            List<ModelId> evicted = new ArrayList<>();
            synchronized (this) {
                long freed = 0;
                for (Entry victim = leastRecentlyUsedIdle(e); victim != null && freed < need;
                        victim = leastRecentlyUsedIdle(e)) {
                    freed += victim.reservedBytes;
                    evicted.add(victim.id);
                    evict(victim, "out of memory loading " + e.id);
                }
            }
            LOG.warn("Out of memory loading {} on {} ({}); evicted {} and retrying once", e.id, device.id(),
                    first.getMessage(), evicted);
            try {
                return OnnxModel.load(e.id, bytes, device);
            } catch (Exception | LinkageError second) {
                throw new ModelLoadException((DeviceOutOfMemoryException.isOutOfMemory(second) ? "out of memory"
                        : "failed") + " loading " + e.id + " on " + device.id() + " after evicting " + evicted
                        + " and retrying: " + second.getMessage());
            }
        }
    }

    private void warmUp(ModelConfig config, OnnxModel model) {
        if (warmupPool == null || !config.warmup().enabled()) {
            return;
        }
        List<Integer> sizes = warmupBatchSizes(config, settings.maxBatchSize());
        List<Callable<Void>> runs = new ArrayList<>();
        for (int b : sizes) {
            runs.add(() -> {
                model.run(List.of(WarmupInputs.request(config, b, b)));
                return null;
            });
        }
        long started = System.nanoTime();
        try {
            List<Future<Void>> results = warmupPool.invokeAll(runs);
            for (int i = 0; i < results.size(); i++) {
                try {
                    results.get(i).get();
                } catch (ExecutionException x) {
                    LOG.warn("Warm-up of {} at batch size {} failed ({}); it serves without", model.id(), sizes.get(i),
                            x.getCause() == null ? x : x.getCause().getMessage());
                }
            }
        } catch (InterruptedException x) {
            Thread.currentThread().interrupt();
            return;
        }
        LOG.debug("Warmed up {} at batch sizes {} in {} ms", model.id(), sizes, (System.nanoTime() - started) / 1_000_000);
    }

    /** The config's warm-up sizes, else 1, the preferred sizes and the largest batch it will see. */
    static List<Integer> warmupBatchSizes(ModelConfig config, int operatorMaxBatch) {
        int max = Math.min(config.maxBatchSize(), operatorMaxBatch);
        TreeSet<Integer> sizes = new TreeSet<>();
        if (!config.warmup().batchSizes().isEmpty()) {
            sizes.addAll(config.warmup().batchSizes());
        } else {
            sizes.add(1);
            sizes.addAll(config.dynamicBatching().preferredBatchSizes());
            sizes.add(max);
        }
        sizes.removeIf(b -> b < 1 || b > max);
        return List.copyOf(sizes);
    }

    /** Under the lock. */
    private void evict(Entry victim, String reason) {
        entries.remove(victim.id);
        closeQuietly(victim.id, victim.model);
        device.release(victim.reservedBytes);
        victim.reservedBytes = 0;
        if (victim.variant == null) { // a later swap-in should get the full model back if it fits
            keepOnHost(victim.id, victim.bytes);
        }
        evictions++;
        roomChanged();
        LOG.info("Evicted {} from {} ({})", victim.id, device.id(), reason);
        listener.evicted(victim.id, reason);
    }

    /** Under the lock: keeps a model's bytes in host memory, dropping the oldest copies beyond the budget. */
    private void keepOnHost(ModelId id, byte[] bytes) {
        if (closed || bytes == null || bytes.length > settings.hostMemoryBytes()) {
            return;
        }
        byte[] previous = host.remove(id);
        if (previous != null) {
            hostBytes -= previous.length;
        }
        host.put(id, bytes);
        hostBytes += bytes.length;
        var oldest = host.entrySet().iterator();
        while (hostBytes > settings.hostMemoryBytes() && oldest.hasNext()) {
            hostBytes -= oldest.next().getValue().length;
            oldest.remove();
        }
    }

    private static void closeQuietly(ModelId id, OnnxModel model) {
        if (model == null) {
            return;
        }
        try {
            model.close();
        } catch (Exception e) {
            LOG.warn("Closing {} failed", id, e);
        }
    }

    /** Evicts every model unused for {@code eviction_timeout} that no one holds; returns them. */
    public synchronized List<ModelId> evictIdle() {
        long timeout = settings.evictionTimeout().toNanos();
        if (timeout == 0 || closed) {
            return List.of();
        }
        long now = clock.getAsLong();
        List<Entry> idle = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.state == State.READY && e.refs == 0 && now - e.lastUsedNanos >= timeout && !pinned.contains(e.id)) {
                idle.add(e);
            }
        }
        idle.sort(Comparator.comparingLong(e -> e.useSequence));
        List<ModelId> evicted = new ArrayList<>();
        for (Entry e : idle) {
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
            pinned.add(resolved.id());
            Entry e = entries.get(resolved.id());
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
        pinned.remove(id);
        retire(id);
    }

    /** Models pinned by LOAD commands. */
    public synchronized java.util.Set<ModelId> pinnedModels() {
        return java.util.Set.copyOf(pinned);
    }

    /**
     * Unloads a version that is no longer served: at once if no one holds it, else when its last
     * lease closes (it drains). Its bytes stay on the host tier for stragglers.
     */
    public synchronized void retire(ModelId id) {
        Entry e = entries.get(id);
        if (e == null) {
            return;
        }
        if (e.state == State.READY && e.refs == 0) {
            evict(e, "version retired");
        } else {
            e.retiring = true;
        }
    }

    /** Models loaded on the device, least recently used first. */
    public synchronized List<ModelId> residentModels() {
        List<Entry> ready = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.state == State.READY) {
                ready.add(e);
            }
        }
        ready.sort(Comparator.comparingLong(e -> e.useSequence));
        List<ModelId> ids = new ArrayList<>();
        for (Entry e : ready) {
            ids.add(e.id);
        }
        return ids;
    }

    /** Models whose bytes are on the host tier, oldest first. */
    public synchronized List<ModelId> hostModels() {
        return new ArrayList<>(host.keySet());
    }

    public synchronized long hostBytes() {
        return hostBytes;
    }

    /** Device memory accounted to models loaded or loading. */
    public synchronized long reservedBytes() {
        long sum = 0;
        for (Entry e : entries.values()) {
            sum += e.reservedBytes;
        }
        return sum;
    }

    public synchronized int loadedCount() {
        return residentModels().size();
    }

    public synchronized boolean isLoaded(ModelId id) {
        Entry e = entries.get(id);
        return e != null && e.state == State.READY;
    }

    /** Open leases on a model. */
    public synchronized int references(ModelId id) {
        Entry e = entries.get(id);
        return e == null ? 0 : e.refs;
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
            for (Entry e : new ArrayList<>(entries.values())) {
                if (e.state == State.READY && e.refs == 0) {
                    evict(e, "cache closed");
                }
            }
            host.clear();
            hostBytes = 0;
            roomChanged();
        }
        if (warmupPool != null) {
            warmupPool.shutdownNow();
        }
        if (evictionThread != null) {
            evictionThread.shutdownNow();
        }
    }

    private static List<String> mismatches(ModelConfig config, OnnxModel model) {
        List<String> problems = new ArrayList<>();
        for (TensorSpec spec : config.inputs()) {
            DataType actual = model.inputTypes().get(spec.name());
            if (actual == null) {
                problems.add("input " + spec.name() + " is not in the model");
            } else if (actual != spec.datatype()) {
                problems.add("input " + spec.name() + " is " + actual + " in the model, " + spec.datatype() + " in the config");
            }
        }
        for (String name : model.inputTypes().keySet()) {
            if (config.input(name) == null) {
                problems.add("model input " + name + " is not in the config");
            }
        }
        return problems;
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
