package io.flinkgpu.bench.cache;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.LoadTimeModel;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A model's cold load from the repository against its swap-in from the host tier, each measured
 * in a fresh cache on a fresh device (the CPU, or a simulated GPU with its load-time model).
 */
final class ColdVsSwapIn {
    /** Medians in milliseconds, and the memory the first load measured. */
    record LoadTimes(double coldMs, double swapMs, long measuredBytes) {}

    private ColdVsSwapIn() {}

    /** {@code rounds} cold load / swap-in pairs on {@code deviceKind} ("cpu" or "simulated"). */
    static LoadTimes measure(ModelRepository.ResolvedModel model, String deviceKind, int rounds, int maxBatch,
            String loadTime) throws Exception {
        List<Long> cold = new ArrayList<>();
        List<Long> swap = new ArrayList<>();
        AtomicLong now = new AtomicLong();
        ModelCache.Listener timer = new ModelCache.Listener() {
            @Override
            public void loaded(ModelId id, long nanos, boolean fromHost) {
                (fromHost ? swap : cold).add(nanos);
            }
        };
        ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false).withWarmupWorkers(2)
                .withEvictionTimeout(Duration.ofSeconds(1)).withMaxBatchSize(maxBatch);
        long measured = 0;
        for (int i = 0; i < rounds; i++) {
            Device device = deviceKind.equals("cpu") ? new CpuDevice("cpu:0", 16L << 30, 1)
                    : new SimulatedDevice("sim:0", 16L << 30, SpeedModel.CPU_SPEED, Map.of(),
                            LoadTimeModel.parse(loadTime), 1);
            try (ModelCache cache = new ModelCache(device, settings, now::get, timer)) {
                cache.preload(model); // cold: from the repository
                measured = cache.measuredBytes(model.id()).orElse(cache.reservedBytes());
                now.addAndGet(Duration.ofSeconds(1).toNanos());
                cache.evictIdle();
                cache.preload(model); // swap-in: from host memory
            }
        }
        return new LoadTimes(median(cold), median(swap), measured);
    }

    /** The median after dropping the first fifth (JIT warm-up), in milliseconds. */
    private static double median(List<Long> nanos) {
        List<Long> sorted = new ArrayList<>(nanos.subList(nanos.size() / 5, nanos.size()));
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2) / 1e6;
    }
}
