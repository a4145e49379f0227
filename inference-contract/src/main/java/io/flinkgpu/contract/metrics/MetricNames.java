package io.flinkgpu.contract.metrics;

/**
 * The inference operator's metric names, written once: the operator registers them and the
 * coordinator's collector (and dashboards, through Flink's reporters) read them. Groups nest as
 * {@code gpu_inference.<metric>}, {@code gpu_inference.model.<name>.version.<v>.<metric>},
 * {@code gpu_inference.model.<name>.version.<v>.tenant.<t>.requestsIn},
 * {@code gpu_inference.device.<id>.<metric>} and {@code gpu_inference.control.<metric>}.
 * Histograms are read over REST with Flink's suffixes ({@code _mean}, {@code _p99}, ...).
 */
public final class MetricNames {
    private MetricNames() {}

    /**
     * Every histogram (batch size, queue and inference latency) holds its last this many values, so
     * its mean and percentiles follow the latest batches, however long ago they ran, not the latest
     * seconds. A reader pricing a model from a mean batch size sees it move slowly after a load step.
     */
    public static final int HISTOGRAM_WINDOW = 1024;

    /** The operator's top-level group. */
    public static final String GROUP = "gpu_inference";
    /** Sub-group keys: {@code model <name>}, {@code version <v>}, {@code tenant <t>}, {@code device <id>}, {@code error <code>}. */
    public static final String MODEL = "model";
    public static final String VERSION = "version";
    public static final String TENANT = "tenant";
    public static final String DEVICE = "device";
    public static final String ERROR = "error";
    public static final String CONTROL = "control";

    // Operator-wide and per model (the same counters at both levels).
    public static final String REQUESTS_IN = "requestsIn";
    public static final String RESPONSES_OUT = "responsesOut";
    public static final String RECORD_FAILURES = "recordFailures";
    public static final String DEAD_LETTERS = "deadLetters";
    public static final String ISOLATED_REQUESTS = "isolatedRequests";
    public static final String ISOLATION_RUNS = "isolationRuns";
    public static final String QUEUED_REQUESTS = "queuedRequests";
    public static final String IN_FLIGHT_BATCHES = "inFlightBatches";
    /** Batches a subtask executes at once (inference.execution-threads, or the count sized from its device). */
    public static final String EXECUTION_THREADS = "executionThreads";
    /** Batches a subtask started on the core kept for the task while its execution threads were busy. */
    public static final String RESERVED_CORE_BATCHES = "reservedCoreBatches";
    public static final String LOADED_MODELS = "loadedModels";
    public static final String ERRORS = "errors";
    /** Of the job's parse operator: records decoded into requests (the rest are dead letters). */
    public static final String DECODED_REQUESTS = "decodedRequests";
    /** Of the job's parse operator: requests refused because their tenant was not proven (TENANT_MISMATCH, UNAUTHENTICATED). */
    public static final String TENANT_REFUSALS = "tenantRefusals";

    // Per model and version.
    public static final String BATCHES = "batches";
    public static final String BATCH_SIZE = "batchSize";
    public static final String QUEUE_LATENCY_US = "queueLatencyUs";
    public static final String INFERENCE_LATENCY_US = "inferenceLatencyUs";
    /**
     * A batch's run time less the time it waited for a device busy with other batches (only the
     * simulated GPU, which runs batches one after another, makes a batch wait; on CPU and CUDA
     * devices it equals inferenceLatencyUs). Rollouts compare versions by it.
     */
    public static final String SERVICE_LATENCY_US = "serviceLatencyUs";
    public static final String LATENCY_PREDICTION_ERROR_US = "latencyPredictionErrorUs";
    public static final String QUEUED_SAMPLES = "queuedSamples";
    public static final String BATCH_CAP = "batchCap";
    public static final String LATENCY_MODEL_ALPHA_US = "latencyModelAlphaUs";
    public static final String LATENCY_MODEL_BETA_US = "latencyModelBetaUs";
    /** Of a shadow version: its answers compared with the served version's answers to the same requests. */
    public static final String SHADOW_COMPARED = "shadowCompared";
    /** Of a shadow version: compared answers that differ from the served ones (outputs or outcome). */
    public static final String SHADOW_DISAGREED = "shadowDisagreed";
    /**
     * 1 while the version is loaded and ready on the subtask's device, else 0: registered as soon
     * as a load completes (before the version's first request), so the coordinator can route a
     * new replica once its load is done.
     */
    public static final String LOADED = "loaded";

    // Per device.
    public static final String MODEL_LOADS = "modelLoads";
    public static final String MODEL_SWAP_INS = "modelSwapIns";
    public static final String MODEL_EVICTIONS = "modelEvictions";
    public static final String MODEL_LOAD_FAILURES = "modelLoadFailures";
    public static final String MODEL_LOAD_LATENCY_US = "modelLoadLatencyUs";
    public static final String SWAP_IN_LATENCY_US = "swapInLatencyUs";
    public static final String MEMORY_USED_BYTES = "memoryUsedBytes";
    public static final String MEMORY_TOTAL_BYTES = "memoryTotalBytes";
    public static final String UTILIZATION = "utilization";
    public static final String TEMPERATURE_CELSIUS = "temperatureCelsius";
    public static final String POWER_WATTS = "powerWatts";
    public static final String HEALTHY = "healthy";
    public static final String MODELS_LOADED = "modelsLoaded";
    public static final String MODELS_ON_HOST = "modelsOnHost";
    public static final String HOST_CACHE_BYTES = "hostCacheBytes";

    // The control plane (plans from the coordinator), under gpu_inference.control.
    public static final String PLAN_EPOCH = "planEpoch";
    public static final String PLANS_APPLIED = "plansApplied";
    public static final String PLANS_IGNORED_STALE = "plansIgnoredStale";
    public static final String RECORDS_INVALID = "recordsInvalid";
    /** Control records refused for want of a signature where the job requires one. */
    public static final String PLANS_REFUSED_UNSIGNED = "plansRefusedUnsigned";
    /** Control records refused for an unknown key id or a signature that does not match. */
    public static final String PLANS_REFUSED_BAD_SIGNATURE = "plansRefusedBadSignature";
    public static final String COMMANDS_APPLIED = "commandsApplied";
    public static final String COMMANDS_FAILED = "commandsFailed";
    public static final String MODELS_PINNED = "modelsPinned";

    /** Flink's REST suffix of a histogram's mean. */
    public static String mean(String histogram) {
        return histogram + "_mean";
    }

    /** Flink's REST suffix of a histogram's 99th percentile. */
    public static String p99(String histogram) {
        return histogram + "_p99";
    }
}
