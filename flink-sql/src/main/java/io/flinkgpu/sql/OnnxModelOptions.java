package io.flinkgpu.sql;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import java.time.Duration;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.description.Description;

/**
 * The options of {@code CREATE MODEL ... WITH ('provider' = 'onnx', ...)}. Any key starting with
 * {@value #PASS_THROUGH_PREFIX} is one of the library's operator options ({@code GpuInferenceOptions},
 * e.g. {@code 'inference.device.simulated.count' = '2'}) and is handed to the runtime as it is;
 * the keys this provider sets from its own options are refused there ({@link #OWNED_RUNTIME_KEYS}).
 * Defaults are the DataStream operator's.
 */
public final class OnnxModelOptions {
    private OnnxModelOptions() {}

    /** Keys with this prefix go to the library's runtime unchanged. */
    public static final String PASS_THROUGH_PREFIX = "inference.";

    /** Runtime keys set from this provider's own options: refused as pass-through keys, with the option to use. */
    public static final java.util.Map<String, String> OWNED_RUNTIME_KEYS = java.util.Map.of(
            GpuInferenceOptions.MODEL_REPOSITORY.key(), "repository",
            GpuInferenceOptions.MAX_BATCH_SIZE.key(), "max-batch-size",
            GpuInferenceOptions.MAX_QUEUE_DELAY.key(), "max-queue-delay",
            GpuInferenceOptions.DEVICE_TYPE.key(), "device");

    /** What happens to a row the model cannot take. */
    public enum OnError {
        /** Output columns are null (the default). */
        NULL,
        /** Output columns are null and the error column holds {@code CODE: message}. */
        ERROR_COLUMN,
        /** The query fails. */
        FAIL
    }

    public static final ConfigOption<String> REPOSITORY = ConfigOptions.key("repository").stringType().noDefaultValue()
            .withDescription("The model repository: <repository>/<model>/<version>/model.onnx with the model's config.json. "
                    + "It is read when the query is planned (to check the columns against the model) and on every "
                    + "TaskManager that runs the query, so it must be at the same path on both.");

    public static final ConfigOption<String> MODEL = ConfigOptions.key("model").stringType().noDefaultValue()
            .withDescription("The model's name in the repository.");

    public static final ConfigOption<String> VERSION = ConfigOptions.key("version").stringType().noDefaultValue()
            .withDescription("A version to pin; without it, the version the model's version policy serves "
                    + "(the newest by default), which follows hot reloads.");

    public static final ConfigOption<String> DEVICE = ConfigOptions.key("device").stringType()
            .defaultValue(GpuInferenceOptions.DEVICE_TYPE.defaultValue())
            .withDescription("Where the model runs: cpu, cuda, auto (CUDA when a GPU is usable, else the CPU) or "
                    + "simulated (a simulated GPU; its results are computed on the CPU and labelled simulated).");

    public static final ConfigOption<Integer> MAX_BATCH_SIZE = ConfigOptions.key("max-batch-size").intType()
            .defaultValue(GpuInferenceOptions.MAX_BATCH_SIZE.defaultValue())
            .withDescription("The most rows one inference call takes (capped by the model's max_batch_size). "
                    + "Concurrent rows of every task in the TaskManager that uses this model on the same device are "
                    + "batched together; 1 turns batching off.");

    public static final ConfigOption<Duration> MAX_QUEUE_DELAY = ConfigOptions.key("max-queue-delay").durationType()
            .defaultValue(GpuInferenceOptions.MAX_QUEUE_DELAY.defaultValue())
            .withDescription("How long a row may wait for others to fill its batch.");

    public static final ConfigOption<Integer> PRIORITY = ConfigOptions.key("priority").intType().defaultValue(0)
            .withDescription("The rows' priority level (1 is the highest; 0: the model's default level), as in the "
                    + "request protocol's 'priority' parameter.");

    public static final ConfigOption<Duration> TIMEOUT = ConfigOptions.key("timeout").durationType().noDefaultValue()
            .withDescription("How long a row may wait in the queue before it is answered with TIMEOUT (the model's "
                    + "scheduling config decides without it). ML_PREDICT's own 'timeout' runtime option, which fails "
                    + "the query, should be longer.");

    public static final ConfigOption<String> TENANT = ConfigOptions.key("tenant").stringType().defaultValue("default")
            .withDescription("The tenant the rows are served as (quotas and weights of tenants.json).");

    public static final ConfigOption<OnError> ON_ERROR = ConfigOptions.key("on-error").enumType(OnError.class)
            .defaultValue(OnError.NULL)
            .withDescription(Description.builder()
                    .text("What happens to a row the model cannot take (a null, mis-shaped or out-of-range input, a "
                            + "timeout, a model failure): NULL emits it with null outputs, ERROR_COLUMN with null "
                            + "outputs and its error in the column named by 'error-column' (which OUTPUT must declare "
                            + "as STRING), FAIL fails the query.")
                    .build());

    public static final ConfigOption<String> ERROR_COLUMN = ConfigOptions.key("error-column").stringType()
            .defaultValue("error")
            .withDescription("The OUTPUT column that carries a row's error (CODE: message) with on-error = "
                    + "ERROR_COLUMN; null for rows answered with outputs.");
}
