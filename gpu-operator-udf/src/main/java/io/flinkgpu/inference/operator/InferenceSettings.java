package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.batching.BatchingConfig;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.model.BatchingSettings;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.validation.ValidationLimits;
import io.flinkgpu.inference.qos.TenantRegistry;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import org.apache.flink.configuration.ReadableConfig;

/** Everything an inference operator subtask needs to start, shipped with the job graph. */
public record InferenceSettings(
        String modelRepository,
        BatchingConfig batching,
        int executionThreads,
        String deviceType,
        long deviceMemoryBytes,
        int intraOpThreads,
        ValidationLimits limits,
        String tenantsFile) implements Serializable {

    public InferenceSettings {
        if (executionThreads < 1) {
            throw new IllegalArgumentException("execution threads must be at least 1");
        }
        deviceType = deviceType.toLowerCase(Locale.ROOT);
        if (!deviceType.equals("cpu")) {
            throw new IllegalArgumentException("unsupported device type '" + deviceType + "'; supported: cpu");
        }
    }

    public static InferenceSettings fromConfiguration(ReadableConfig config) {
        BatchingConfig batching = new BatchingConfig(
                config.get(GpuInferenceOptions.MAX_BATCH_SIZE),
                config.get(GpuInferenceOptions.MAX_QUEUE_DELAY),
                config.get(GpuInferenceOptions.PREFERRED_BATCH_SIZES).stream().mapToInt(Integer::intValue).toArray(),
                config.get(GpuInferenceOptions.MAX_ENQUEUED_BATCHES));
        return new InferenceSettings(
                config.get(GpuInferenceOptions.MODEL_REPOSITORY),
                batching,
                config.get(GpuInferenceOptions.EXECUTION_THREADS),
                config.get(GpuInferenceOptions.DEVICE_TYPE),
                config.get(GpuInferenceOptions.DEVICE_MEMORY).getBytes(),
                config.get(GpuInferenceOptions.INTRA_OP_THREADS),
                new ValidationLimits(config.get(GpuInferenceOptions.MAX_TENSOR_ELEMENTS),
                        config.get(GpuInferenceOptions.MAX_REQUEST_SIZE).getBytes()),
                config.get(GpuInferenceOptions.TENANTS_FILE));
    }

    /** The tenants: the configured file, else {@code tenants.json} in the repository, else unlimited. */
    public TenantRegistry tenants() {
        Path file = tenantsFile.isEmpty() ? Path.of(modelRepository, "tenants.json") : Path.of(tenantsFile);
        if (tenantsFile.isEmpty() && !Files.isRegularFile(file)) {
            return TenantRegistry.unlimited();
        }
        return TenantRegistry.load(file);
    }

    /** The device of one subtask. */
    public Device createDevice(int subtaskIndex) {
        return new CpuDevice("cpu:" + subtaskIndex, deviceMemoryBytes, intraOpThreads);
    }

    /**
     * A model's effective batching: the model's own {@code dynamic_batching} settings where it
     * has them, the operator's otherwise, and the smaller of the two max batch sizes.
     */
    public BatchingConfig batchingFor(ModelConfig model) {
        BatchingSettings own = model.dynamicBatching();
        int max = Math.min(model.maxBatchSize(), batching.maxBatchSize());
        Duration delay = own.maxQueueDelayMs() != null
                ? Duration.ofNanos(Math.round(own.maxQueueDelayMs() * 1_000_000)) : batching.maxQueueDelay();
        List<Integer> preferred = own.preferredBatchSizes();
        int[] sizes = (preferred.isEmpty() ? java.util.Arrays.stream(batching.preferredBatchSizes()).boxed().toList()
                : preferred).stream().mapToInt(Integer::intValue).filter(p -> p >= 1 && p <= max).toArray();
        int enqueued = own.maxEnqueuedBatches() != null ? own.maxEnqueuedBatches() : batching.maxEnqueuedBatches();
        return new BatchingConfig(max, delay, sizes, enqueued);
    }
}
