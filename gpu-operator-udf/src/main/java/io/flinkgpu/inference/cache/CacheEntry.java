package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.PrecisionVariant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

/**
 * One model version's place in a {@link ModelCache}: whether it is still loading, its session and
 * bytes once loaded, the model slot and device memory it holds, its open leases and when it was
 * last used. The parts of the cache share it: {@link MemoryAccounting} keeps the entries and
 * their reservations, {@link EvictionPolicy} reads their use order to pick victims.
 *
 * <p>Every field is guarded by the cache's lock, except {@link #instances} (a semaphore, taken
 * outside the lock) and {@link #done}.
 */
final class CacheEntry {
    enum State {
        LOADING,
        READY
    }

    final ModelId id;
    final ModelRepository.ResolvedModel resolved;
    /** Completed when the load ends, loaded or failed; concurrent first uses wait on it. */
    final CompletableFuture<Void> done = new CompletableFuture<>();
    /** At most {@code instance_count} batches at once on the shared session; null for no limit. */
    final Semaphore instances;
    State state = State.LOADING;
    OnnxModel model;
    byte[] bytes;
    long reservedBytes;
    /** Holds a model slot and its memory (loading or ready). */
    boolean placed;
    /** Open leases. */
    int refs;
    long lastUsedNanos;
    long useSequence;
    /** Unloaded when its last lease closes. */
    boolean retiring;
    /** The precision variant loaded instead of the full model, or null. */
    PrecisionVariant variant;

    CacheEntry(ModelRepository.ResolvedModel resolved) {
        this.id = resolved.id();
        this.resolved = resolved;
        Integer n = resolved.config().instanceCount();
        this.instances = n == null ? null : new Semaphore(n);
    }

    boolean isReady() {
        return state == State.READY;
    }

    /** Loaded and held by no lease: it may be evicted. */
    boolean isIdle() {
        return state == State.READY && refs == 0;
    }
}
