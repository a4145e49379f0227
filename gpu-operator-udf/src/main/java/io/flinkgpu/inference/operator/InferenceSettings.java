package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceKind;
import io.flinkgpu.inference.device.DeviceSettings;
import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.admission.ValidationLimits;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TenantRegistry;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.ReadableConfig;

/** Everything an inference operator subtask needs to start, shipped with the job graph. */
public record InferenceSettings(
        String modelRepository,
        BatchingConfig batching,
        BatchSizing batchSizing,
        int executionThreads,
        Duration reservedCoreMinSampleTime,
        DeviceSettings device,
        ModelCacheSettings cache,
        Duration repositoryPollInterval,
        ValidationLimits limits,
        String tenantsFile,
        int maxIsolatedCulprits,
        boolean queueAwareRouting) implements Serializable {

    /** {@link #executionThreads} when inference.execution-threads is unset: sized from the device. */
    public static final int THREADS_FROM_DEVICE = 0;

    public InferenceSettings {
        if (executionThreads < THREADS_FROM_DEVICE) {
            throw new IllegalArgumentException("execution threads must be at least 1 (or unset), got "
                    + executionThreads);
        }
        if (reservedCoreMinSampleTime.isNegative()) {
            throw new IllegalArgumentException(GpuInferenceOptions.RESERVED_CORE_MIN_SAMPLE_TIME.key()
                    + " must not be negative, got " + reservedCoreMinSampleTime);
        }
    }

    /**
     * The batches one runtime executes at once on {@code device}: inference.execution-threads where
     * it is set; otherwise, on the CPU, {@code cores} (the cores the runtime may count on) less one
     * for the task's own threads (its mailbox, Kafka fetcher and producer), divided by the intra-op
     * threads each run takes, at least 1; on a CUDA or simulated GPU, 1 (one instance per GPU, as
     * Triton's default: while the device is busy, the next batch keeps growing in the queue instead
     * of being cut for a second thread that would only wait for the device).
     */
    public int executionThreads(DeviceKind kind, int cores) {
        if (executionThreads != THREADS_FROM_DEVICE) {
            return executionThreads;
        }
        if (kind == DeviceKind.CPU) {
            return Math.max(1, (cores - 1) / device.intraOpThreads());
        }
        return 1;
    }

    /**
     * The batches one runtime runs at once on {@code device} with {@code cores}: the {@link
     * #executionThreads(DeviceKind, int)}, and where inference.execution-threads is unset on the CPU
     * and a core is left beside them (at least the intra-op threads of a run), that core for batches
     * of at least {@link #reservedCoreMinSampleTime()} per sample while the others are busy.
     */
    public ExecutionSlots executionSlots(DeviceKind kind, int cores) {
        int threads = executionThreads(kind, cores);
        int intraOp = device.intraOpThreads();
        boolean lend = executionThreads == THREADS_FROM_DEVICE && kind == DeviceKind.CPU
                && cores - threads * intraOp >= intraOp;
        return new ExecutionSlots(threads, lend ? 1 : 0, lend ? reservedCoreMinSampleTime.toNanos() : 0);
    }

    /**
     * The cores one task slot of a TaskManager with {@code slots} slots may count on: the JVM's
     * processors divided by the slots, at least 1.
     */
    public static int coresPerSlot(int slots) {
        return Math.max(1, Runtime.getRuntime().availableProcessors() / Math.max(1, slots));
    }

    public static InferenceSettings fromConfiguration(ReadableConfig config) {
        BatchingConfig batching = new BatchingConfig(
                config.get(GpuInferenceOptions.MAX_BATCH_SIZE),
                config.get(GpuInferenceOptions.MAX_QUEUE_DELAY),
                config.get(GpuInferenceOptions.PREFERRED_BATCH_SIZES),
                config.get(GpuInferenceOptions.MAX_ENQUEUED_BATCHES));
        return new InferenceSettings(
                config.get(GpuInferenceOptions.MODEL_REPOSITORY),
                batching,
                config.get(GpuInferenceOptions.BATCH_SIZING),
                executionThreads(config),
                config.get(GpuInferenceOptions.RESERVED_CORE_MIN_SAMPLE_TIME),
                new DeviceSettings(
                        config.get(GpuInferenceOptions.DEVICE_TYPE),
                        config.get(GpuInferenceOptions.DEVICE_MEMORY).getBytes(),
                        config.get(GpuInferenceOptions.CUDA_MEMORY_FRACTION),
                        config.get(GpuInferenceOptions.INTRA_OP_THREADS),
                        config.get(GpuInferenceOptions.SIMULATED_DEVICES),
                        config.get(GpuInferenceOptions.SIMULATED_MEMORY).getBytes(),
                        config.get(GpuInferenceOptions.SIMULATED_SPEED),
                        config.get(GpuInferenceOptions.SIMULATED_MODEL_SPEEDS),
                        config.get(GpuInferenceOptions.SIMULATED_LOAD_TIME),
                        config.get(GpuInferenceOptions.DEVICE_SLOT_WEIGHTS),
                        config.get(GpuInferenceOptions.SIMULATED_MODEL_FAILURES)),
                new ModelCacheSettings(
                        config.get(GpuInferenceOptions.MAX_MODELS_PER_DEVICE),
                        config.get(GpuInferenceOptions.EVICTION_TIMEOUT),
                        config.get(GpuInferenceOptions.HOST_CACHE_MEMORY).getBytes(),
                        config.get(GpuInferenceOptions.WARMUP_WORKERS),
                        config.get(GpuInferenceOptions.LOAD_RETRY_INTERVAL),
                        config.get(GpuInferenceOptions.LOAD_ROOM_WAIT),
                        batching.maxBatchSize(),
                        true),
                config.get(GpuInferenceOptions.REPOSITORY_POLL_INTERVAL),
                new ValidationLimits(config.get(GpuInferenceOptions.MAX_TENSOR_ELEMENTS),
                        config.get(GpuInferenceOptions.MAX_REQUEST_SIZE).getBytes()),
                config.get(GpuInferenceOptions.TENANTS_FILE),
                config.get(GpuInferenceOptions.MAX_ISOLATED_CULPRITS),
                config.get(GpuInferenceOptions.QUEUE_AWARE_ROUTING));
    }

    private static int executionThreads(ReadableConfig config) {
        java.util.Optional<Integer> set = config.getOptional(GpuInferenceOptions.EXECUTION_THREADS);
        if (set.isPresent() && set.get() < 1) {
            throw new IllegalArgumentException(GpuInferenceOptions.EXECUTION_THREADS.key()
                    + " must be at least 1 (unset: sized from the device), got " + set.get());
        }
        return set.orElse(THREADS_FROM_DEVICE);
    }

    /** The tenants: the configured file, else {@code tenants.json} in the repository, else unlimited. */
    public TenantRegistry tenants() {
        Path file = tenantsFile.isEmpty() ? Path.of(modelRepository, "tenants.json") : Path.of(tenantsFile);
        if (tenantsFile.isEmpty() && !Files.isRegularFile(file)) {
            return TenantRegistry.unlimited();
        }
        return TenantRegistry.load(file);
    }

    /** The device of one subtask: the CPU, a CUDA GPU or a simulated one (see {@link DeviceSettings}). */
    public Device createDevice(int subtaskIndex) {
        return device.createDevice(subtaskIndex);
    }

    /** The device of one subtask, on one of the GPUs Flink's external-resource framework assigned. */
    public Device createDevice(int subtaskIndex, List<Integer> assignedGpus) {
        return device.createDevice(subtaskIndex, assignedGpus);
    }

    /**
     * The device of subtask {@code subtaskIndex} of {@code parallelism} (the running one: after a
     * rescale the subtask learns it at restart), under the slot weights, on one of the assigned GPUs.
     */
    public Device createDevice(int subtaskIndex, int parallelism, List<Integer> assignedGpus) {
        return device.createDevice(subtaskIndex, parallelism, assignedGpus);
    }

    /** The model cache of one subtask's device. */
    public ModelCache createCache(Device onDevice, ModelCache.Listener listener) {
        return new ModelCache(onDevice, cache, System::nanoTime, listener);
    }

    /**
     * A model's effective batching: the model's own {@code dynamic_batching} settings where it
     * has them, the operator's otherwise, and the smaller of the two max batch sizes.
     */
    public BatchingConfig batchingFor(ModelConfig model) {
        return model.dynamicBatching().resolve(Math.min(model.maxBatchSize(), batching.maxBatchSize()), batching);
    }

    /**
     * A model's effective scheduling: its own {@code scheduling} block, with the operator's batch
     * sizing where the block sets none.
     */
    public SchedulingConfig schedulingFor(ModelConfig model) {
        return model.scheduling().withBatchSizingDefault(batchSizing);
    }

    /**
     * The operator's batch limit per model ({@code batchingFor(model).maxBatchSize()}) for request
     * admission, which asks once per request: the last model's answer is kept (by identity: a
     * reloaded config is a new object), so a stream of one model resolves its batching once rather
     * than per request. Safe to call from several threads.
     */
    public java.util.function.ToIntFunction<ModelConfig> maxBatchSizeLookup() {
        record Last(ModelConfig config, int max) {}
        return new java.util.function.ToIntFunction<>() {
            private volatile Last last;

            @Override
            public int applyAsInt(ModelConfig config) {
                Last l = last;
                if (l != null && l.config() == config) {
                    return l.max();
                }
                int max = batchingFor(config).maxBatchSize();
                last = new Last(config, max);
                return max;
            }
        };
    }
}
