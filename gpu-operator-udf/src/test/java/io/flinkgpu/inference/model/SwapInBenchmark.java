package io.flinkgpu.inference.model;

import io.flinkgpu.inference.device.CpuDevice;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Not a test: measures a cold load (repository read, session, warm-up) against a swap-in from
 * the host tier on the CPU device. Run with the test classpath:
 * {@code java -cp ... io.flinkgpu.inference.model.SwapInBenchmark [repo] [model] [rounds]}.
 */
public final class SwapInBenchmark {
    private SwapInBenchmark() {}

    public static void main(String[] args) throws Exception {
        Path root = Path.of(args.length > 0 ? args[0] : "../models");
        String name = args.length > 1 ? args[1] : "fashion-mnist-cnn";
        int rounds = args.length > 2 ? Integer.parseInt(args[2]) : 30;
        ModelRepository repo = ModelRepository.open(root);
        ModelRepository.ResolvedModel model = repo.resolve(name, null);
        for (int workers : new int[] {0, 2}) {
            AtomicLong now = new AtomicLong();
            List<Long> cold = new ArrayList<>();
            List<Long> swap = new ArrayList<>();
            ModelCache.Listener timer = new ModelCache.Listener() {
                @Override
                public void loaded(ModelId id, long nanos, boolean fromHost) {
                    (fromHost ? swap : cold).add(nanos);
                }
            };
            ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false)
                    .withWarmupWorkers(workers).withEvictionTimeout(Duration.ofSeconds(1)).withMaxBatchSize(32);
            for (int i = 0; i < rounds; i++) {
                try (ModelCache cache = new ModelCache(new CpuDevice("cpu:0", 1L << 30, 1), settings, now::get, timer)) {
                    cache.preload(model); // cold: from the repository
                    now.addAndGet(Duration.ofSeconds(1).toNanos());
                    cache.evictIdle();
                    cache.preload(model); // swap-in: from host memory
                }
            }
            System.out.printf("%s, warm-up workers %d: cold load median %.2f ms, swap-in median %.2f ms (%d rounds)%n",
                    model.id(), workers, median(cold), median(swap), rounds);
        }
    }

    private static double median(List<Long> nanos) {
        List<Long> sorted = new ArrayList<>(nanos.subList(nanos.size() / 5, nanos.size())); // drop JIT warm-up
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2) / 1e6;
    }
}
