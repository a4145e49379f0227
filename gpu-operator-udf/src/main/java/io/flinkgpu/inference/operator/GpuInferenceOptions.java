package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.batching.BatchingConfig;
import io.flinkgpu.inference.validation.ValidationLimits;
import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;

/** Every knob of the inference operator, settable in Flink's config.yaml or with {@code -D}. */
public final class GpuInferenceOptions {
    private GpuInferenceOptions() {}

    public static final ConfigOption<String> MODEL_REPOSITORY = ConfigOptions.key("inference.model-repository")
            .stringType()
            .defaultValue("models")
            .withDescription("Path of the model repository (<repo>/<model>/<version>/model.onnx plus "
                    + "<repo>/<model>/config.json), readable by every TaskManager.");

    public static final ConfigOption<Integer> MAX_BATCH_SIZE = ConfigOptions.key("inference.batching.max-batch-size")
            .intType()
            .defaultValue(BatchingConfig.DEFAULT_MAX_BATCH_SIZE)
            .withDescription("Largest batch in samples; a model's own max_batch_size caps it further. "
                    + "1 turns batching off.");

    public static final ConfigOption<Duration> MAX_QUEUE_DELAY = ConfigOptions.key("inference.batching.max-queue-delay")
            .durationType()
            .defaultValue(BatchingConfig.DEFAULT_MAX_QUEUE_DELAY)
            .withDescription("How long the oldest queued request may wait for its batch to fill, unless the "
                    + "model's config sets dynamic_batching.max_queue_delay_ms.");

    public static final ConfigOption<List<Integer>> PREFERRED_BATCH_SIZES =
            ConfigOptions.key("inference.batching.preferred-batch-sizes")
                    .intType()
                    .asList()
                    .defaultValues()
                    .withDescription("Batch sizes dispatched as soon as they are reached, unless the model's "
                            + "config sets dynamic_batching.preferred_batch_sizes.");

    public static final ConfigOption<Integer> MAX_ENQUEUED_BATCHES =
            ConfigOptions.key("inference.batching.max-enqueued-batches")
                    .intType()
                    .defaultValue(BatchingConfig.DEFAULT_MAX_ENQUEUED_BATCHES)
                    .withDescription("Full batches that may wait per model before the operator stops taking "
                            + "input (backpressure).");

    public static final ConfigOption<Integer> EXECUTION_THREADS = ConfigOptions.key("inference.execution-threads")
            .intType()
            .defaultValue(1)
            .withDescription("Batches executed concurrently per operator subtask (threads off the mailbox thread).");

    public static final ConfigOption<String> DEVICE_TYPE = ConfigOptions.key("inference.device.type")
            .stringType()
            .defaultValue("cpu")
            .withDescription("Where models run. Only 'cpu' is available in this version.");

    public static final ConfigOption<MemorySize> DEVICE_MEMORY = ConfigOptions.key("inference.device.memory")
            .memoryType()
            .defaultValue(MemorySize.parse("2g"))
            .withDescription("Memory budget for loaded models per subtask's device.");

    public static final ConfigOption<Integer> INTRA_OP_THREADS = ConfigOptions.key("inference.device.intra-op-threads")
            .intType()
            .defaultValue(1)
            .withDescription("ONNX Runtime intra-op threads per session.");

    public static final ConfigOption<Long> MAX_TENSOR_ELEMENTS = ConfigOptions.key("inference.validation.max-tensor-elements")
            .longType()
            .defaultValue(ValidationLimits.DEFAULT_MAX_TENSOR_ELEMENTS)
            .withDescription("Elements per input tensor at most; larger requests are rejected with TENSOR_TOO_LARGE.");

    public static final ConfigOption<MemorySize> MAX_REQUEST_SIZE = ConfigOptions.key("inference.validation.max-request-size")
            .memoryType()
            .defaultValue(new MemorySize(ValidationLimits.DEFAULT_MAX_REQUEST_BYTES))
            .withDescription("Encoded request size at most; larger requests are rejected with TENSOR_TOO_LARGE.");

    // ---- request QoS ---------------------------------------------------------------------

    public static final ConfigOption<String> TENANTS_FILE = ConfigOptions.key("inference.qos.tenants-file")
            .stringType()
            .defaultValue("")
            .withDescription("JSON file with tenant weights, rate limits, in-flight limits and allowed models. "
                    + "Empty: <model repository>/tenants.json if it exists, else every tenant unlimited with weight 1.");
}
