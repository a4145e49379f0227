package io.flinkgpu.inference.cache;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Readies a new session before its first lease, and measures what a first load takes.
 *
 * <ul>
 *   <li><b>Warm-up.</b> The session runs generated batches ({@link WarmupInputs}) at every batch
 *       size it will see: the config's {@code warmup.batch_sizes}, else 1, the preferred sizes
 *       and the largest batch the operator cuts for it; on {@code warmup_workers} threads (none:
 *       warm-up off). A failing warm-up is logged and the model serves without.
 *   <li><b>Measuring.</b> A first load whose config declares no memory is measured by the
 *       device's own memory in use before the session is created and after its warm-up; such
 *       loads run one at a time, so the difference is theirs. Before the first such load on a
 *       device in this JVM, a session of a one-operator model ({@code runtime-init.onnx}, y =
 *       Identity(x)) is created and run on it, and closed, so that what ONNX Runtime sets up once
 *       (its allocators, thread pools and first-run state; about 8 MiB on the CPU) is not charged
 *       to the first model measured.
 * </ul>
 */
final class WarmUp implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WarmUp.class);

    private final Device device;
    private final int operatorMaxBatch;
    /** Null when warm-up is off. */
    private final ExecutorService pool;
    /** Devices (by id) on which ONNX Runtime's one-time set-up has run in this JVM. */
    private static final java.util.Set<String> RUNTIME_READY = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /** First loads that are measured run one at a time, so the difference in memory in use is theirs. */
    private final Object measureLock = new Object();

    /** Creates a session (and warms it up) for {@link #measured}. */
    interface SessionLoad {
        OnnxModel load() throws ModelCache.ModelLoadException;
    }

    WarmUp(Device device, ModelCacheSettings settings) {
        this.device = device;
        this.operatorMaxBatch = settings.maxBatchSize();
        this.pool = settings.warmupWorkers() == 0 ? null
                : Executors.newFixedThreadPool(settings.warmupWorkers(), DaemonThreads.named("model-warmup-" + device.id()));
    }

    /** Runs the warm-up batches of {@code config} on {@code model}, if warm-up is on for both. */
    void run(ModelConfig config, OnnxModel model) {
        if (pool == null || !config.warmup().enabled()) {
            return;
        }
        List<Integer> sizes = batchSizes(config, operatorMaxBatch);
        List<Callable<Void>> runs = new ArrayList<>();
        for (int b : sizes) {
            runs.add(() -> {
                model.run(List.of(WarmupInputs.request(config, b, b)));
                return null;
            });
        }
        long started = System.nanoTime();
        try {
            List<Future<Void>> results = pool.invokeAll(runs);
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
    static List<Integer> batchSizes(ModelConfig config, int operatorMaxBatch) {
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

    /**
     * Runs {@code load}, one measured load at a time, and passes {@code grownBy} how much the
     * device's memory in use grew meanwhile, where the device can tell (still holding the
     * measuring turn, so that no other measured load runs in between).
     */
    OnnxModel measured(SessionLoad load, LongConsumer grownBy) throws ModelCache.ModelLoadException {
        synchronized (measureLock) {
            readyRuntime(device);
            OptionalLong before = device.memoryInUseBytes();
            OnnxModel model = load.load();
            OptionalLong after = device.memoryInUseBytes();
            if (before.isPresent() && after.isPresent()) {
                grownBy.accept(after.getAsLong() - before.getAsLong());
            }
            return model;
        }
    }

    /**
     * Creates, runs once and closes a session of a one-operator model on {@code device}, the first
     * time this JVM measures a load on it; a failure is logged and the measurement goes on.
     */
    static void readyRuntime(Device device) {
        if (!RUNTIME_READY.add(device.id())) {
            return;
        }
        try (java.io.InputStream in = WarmUp.class.getResourceAsStream("runtime-init.onnx")) {
            OrtEnvironment env = OrtEnvironment.getEnvironment();
            try (OrtSession session = device.createSession(env, in.readAllBytes());
                    OnnxTensor x = OnnxTensor.createTensor(env, new float[][] {{0f, 0f, 0f}});
                    OrtSession.Result y = session.run(java.util.Map.of("x", x))) {
                LOG.debug("ONNX Runtime set up on {} before the first measured load ({} output)", device.id(), y.size());
            }
        } catch (Exception | LinkageError e) {
            LOG.warn("Could not set ONNX Runtime up on {} before measuring a load ({}); the first model measured "
                    + "may be charged its set-up", device.id(), e.toString());
        }
    }

    /** Stops the warm-up threads. */
    @Override
    public void close() {
        if (pool != null) {
            pool.shutdownNow();
        }
    }
}
