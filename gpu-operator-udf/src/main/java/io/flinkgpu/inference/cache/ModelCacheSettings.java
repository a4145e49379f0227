package io.flinkgpu.inference.cache;

import java.io.Serializable;
import java.time.Duration;

/**
 * How a {@link ModelCache} manages one device's memory.
 *
 * @param maxModels models resident on the device at most ({@code max_models_per_device})
 * @param evictionTimeout a model unused this long is evicted ({@code eviction_timeout}); zero turns idle eviction off
 * @param hostMemoryBytes bytes of evicted models kept in host memory for a cheap swap-in (the second tier)
 * @param warmupWorkers threads that run warm-up batches ({@code warmup_workers}); zero turns warm-up off
 * @param loadRetryInterval how long a failed load is remembered before a request may retry it
 * @param roomWait how long a load waits for models in use to be released when nothing can be evicted yet
 * @param maxBatchSize the largest batch the operator cuts, the default largest warm-up batch
 * @param backgroundEviction whether the cache runs idle eviction on its own thread (off in tests that drive a fake clock)
 */
public record ModelCacheSettings(
        int maxModels,
        Duration evictionTimeout,
        long hostMemoryBytes,
        int warmupWorkers,
        Duration loadRetryInterval,
        Duration roomWait,
        int maxBatchSize,
        boolean backgroundEviction) implements Serializable {

    public static final int DEFAULT_MAX_MODELS = 4;
    public static final Duration DEFAULT_EVICTION_TIMEOUT = Duration.ofSeconds(300);
    public static final long DEFAULT_HOST_MEMORY_BYTES = 2L << 30;
    public static final int DEFAULT_WARMUP_WORKERS = 2;
    public static final Duration DEFAULT_LOAD_RETRY_INTERVAL = Duration.ofSeconds(10);
    public static final Duration DEFAULT_ROOM_WAIT = Duration.ofSeconds(30);

    public static final ModelCacheSettings DEFAULTS = new ModelCacheSettings(DEFAULT_MAX_MODELS,
            DEFAULT_EVICTION_TIMEOUT, DEFAULT_HOST_MEMORY_BYTES, DEFAULT_WARMUP_WORKERS, DEFAULT_LOAD_RETRY_INTERVAL,
            DEFAULT_ROOM_WAIT, Integer.MAX_VALUE, true);

    public ModelCacheSettings {
        if (maxModels < 1) {
            throw new IllegalArgumentException("max models per device must be at least 1");
        }
        if (evictionTimeout.isNegative() || loadRetryInterval.isNegative() || roomWait.isNegative()) {
            throw new IllegalArgumentException("eviction timeout, load retry interval and room wait must not be negative");
        }
        if (hostMemoryBytes < 0 || warmupWorkers < 0 || maxBatchSize < 1) {
            throw new IllegalArgumentException("host memory and warm-up workers must not be negative, max batch positive");
        }
    }

    public ModelCacheSettings withMaxModels(int n) {
        return new ModelCacheSettings(n, evictionTimeout, hostMemoryBytes, warmupWorkers, loadRetryInterval,
                roomWait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withEvictionTimeout(Duration timeout) {
        return new ModelCacheSettings(maxModels, timeout, hostMemoryBytes, warmupWorkers, loadRetryInterval,
                roomWait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withHostMemoryBytes(long bytes) {
        return new ModelCacheSettings(maxModels, evictionTimeout, bytes, warmupWorkers, loadRetryInterval,
                roomWait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withWarmupWorkers(int workers) {
        return new ModelCacheSettings(maxModels, evictionTimeout, hostMemoryBytes, workers, loadRetryInterval,
                roomWait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withLoadRetryInterval(Duration interval) {
        return new ModelCacheSettings(maxModels, evictionTimeout, hostMemoryBytes, warmupWorkers, interval,
                roomWait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withRoomWait(Duration wait) {
        return new ModelCacheSettings(maxModels, evictionTimeout, hostMemoryBytes, warmupWorkers, loadRetryInterval,
                wait, maxBatchSize, backgroundEviction);
    }

    public ModelCacheSettings withMaxBatchSize(int size) {
        return new ModelCacheSettings(maxModels, evictionTimeout, hostMemoryBytes, warmupWorkers, loadRetryInterval,
                roomWait, size, backgroundEviction);
    }

    public ModelCacheSettings withBackgroundEviction(boolean on) {
        return new ModelCacheSettings(maxModels, evictionTimeout, hostMemoryBytes, warmupWorkers, loadRetryInterval,
                roomWait, maxBatchSize, on);
    }
}
