package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.model.ModelId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Which models leave a device, and when. It decides; the {@link ModelCache} evicts.
 *
 * <ul>
 *   <li><b>For room.</b> A load that does not fit evicts the least recently used model that no
 *       lease holds; pinned models only when no unpinned one can go.
 *   <li><b>Idle.</b> A model unused for {@code eviction_timeout} that no lease holds is evicted,
 *       least recently used first; pinned models never are. The check runs on a background
 *       thread every tenth of the timeout (1 to 30 s) unless turned off or the timeout is zero.
 *   <li><b>Slots.</b> At most {@code max_models_per_device} models are placed (loading or loaded).
 *   <li><b>Pinning.</b> A LOAD command pins a model, an UNLOAD unpins it.
 * </ul>
 *
 * It keeps each entry's last use (time and order) for these choices. Not thread-safe: the cache
 * calls it under its lock.
 */
final class EvictionPolicy implements AutoCloseable {
    private final int maxModels;
    private final Duration evictionTimeout;
    private final LongSupplier clock;
    /** Pinned by a LOAD command: never evicted for being idle, and evicted for room only after unpinned ones. */
    private final Set<ModelId> pinned = new HashSet<>();
    private long useSequence;
    private final ScheduledExecutorService idleThread;

    /**
     * @param evictIdle run on a daemon thread every tenth of the eviction timeout (1 to 30 s)
     *     until {@link #close}, if the settings ask for background eviction and the timeout is not zero
     */
    EvictionPolicy(ModelCacheSettings settings, LongSupplier clock, String deviceId, Runnable evictIdle) {
        this.maxModels = settings.maxModels();
        this.evictionTimeout = settings.evictionTimeout();
        this.clock = clock;
        if (settings.backgroundEviction() && !evictionTimeout.isZero()) {
            long period = Math.max(1000, Math.min(30_000, evictionTimeout.toMillis() / 10));
            idleThread = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named("model-eviction-" + deviceId));
            idleThread.scheduleWithFixedDelay(evictIdle, period, period, TimeUnit.MILLISECONDS);
        } else {
            idleThread = null;
        }
    }

    long now() {
        return clock.getAsLong();
    }

    /** Records a use of the entry: a lease taken or closed, a load completed. */
    void touch(CacheEntry e) {
        e.lastUsedNanos = clock.getAsLong();
        e.useSequence = ++useSequence;
    }

    int maxModels() {
        return maxModels;
    }

    /** Whether another model may be placed while {@code placed} are. */
    boolean hasSlot(int placed) {
        return placed < maxModels;
    }

    /** The eviction victim for room: the least recently used model no one holds, unpinned ones first; or null. */
    CacheEntry victim(Collection<CacheEntry> entries, CacheEntry except) {
        CacheEntry lru = null;
        for (CacheEntry c : entries) {
            if (c != except && c.isIdle() && (lru == null || before(c, lru))) {
                lru = c;
            }
        }
        return lru;
    }

    private boolean before(CacheEntry a, CacheEntry b) {
        boolean pa = pinned.contains(a.id);
        boolean pb = pinned.contains(b.id);
        return pa != pb ? !pa : a.useSequence < b.useSequence;
    }

    /** Whether models are evicted for being idle at all (the timeout is not zero). */
    boolean evictsIdle() {
        return !evictionTimeout.isZero();
    }

    /** The unpinned models no one holds that were last used {@code eviction_timeout} or more before {@code now}, least recently used first. */
    List<CacheEntry> timedOut(Collection<CacheEntry> entries, long now) {
        long timeout = evictionTimeout.toNanos();
        List<CacheEntry> idle = new ArrayList<>();
        for (CacheEntry e : entries) {
            if (e.isIdle() && now - e.lastUsedNanos >= timeout && !pinned.contains(e.id)) {
                idle.add(e);
            }
        }
        idle.sort(Comparator.comparingLong(e -> e.useSequence));
        return idle;
    }

    void pin(ModelId id) {
        pinned.add(id);
    }

    void unpin(ModelId id) {
        pinned.remove(id);
    }

    Set<ModelId> pinned() {
        return Set.copyOf(pinned);
    }

    /** Stops the idle-eviction thread. */
    @Override
    public void close() {
        if (idleThread != null) {
            idleThread.shutdownNow();
        }
    }
}
