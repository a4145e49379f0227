package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.admission.ValidationLimits;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import java.time.Duration;
import java.util.List;
import io.flinkgpu.inference.qos.BatchSizing;
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
            .withDescription("How long the oldest queued request may wait for its batch to fill (0: dispatch as soon as an "
                    + "execution thread is free; batches still form from what queues while the device is busy), unless the "
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

    public static final ConfigOption<BatchSizing> BATCH_SIZING = ConfigOptions.key("inference.batching.batch-sizing")
            .enumType(BatchSizing.class)
            .defaultValue(BatchSizing.FIXED_DELAY)
            .withDescription("How partial batches are cut, for models whose config does not set scheduling.batch_sizing. "
                    + "FIXED_DELAY: when full, at a preferred size, or once the oldest request waited max-queue-delay "
                    + "(Triton's dynamic batcher). SLO_AWARE: by the model's latency model, fitted per input shape: cut at "
                    + "once while one request at a time keeps up with arrivals, wait only while the queue is expected "
                    + "to grow and the earliest deadline still holds. SLO_AWARE_CAPPED: SLO_AWARE, and take no more "
                    + "than keeps up with arrivals, than batching pays for (where its time per sample is within 10% of "
                    + "the latency model's per-sample slope) or than runs within 1 ms, whichever is most: on a model "
                    + "whose run time grows in proportion to the batch, one request at a time while that keeps up "
                    + "(it costs throughput where bursts need large batches). AIMD: Clipper's additive-increase, "
                    + "multiplicative-decrease batch cap against scheduling.slo_ms.");

    public static final ConfigOption<Integer> EXECUTION_THREADS = ConfigOptions.key("inference.execution-threads")
            .intType()
            .noDefaultValue()
            .withDescription("Batches executed concurrently per operator subtask (threads off the mailbox thread), "
                    + "at least 1. Unset (default): sized from the subtask's device when it opens: on the CPU, the "
                    + "TaskManager's cores per task slot less one (kept for the task's own mailbox and Kafka "
                    + "threads), divided by inference.device.intra-op-threads, at least 1 (so 1 with 2 cores per "
                    + "slot; the core kept also runs long batches while the threads are busy, see "
                    + "inference.execution-threads.reserved-core-min-sample-time); on a CUDA "
                    + "or simulated GPU, 1 (one instance per GPU: while the device is busy the next batch grows in "
                    + "the queue). The SQL runtime, shared by a TaskManager's subtasks, counts "
                    + "the TaskManager's cores. The count in use is the operator's executionThreads gauge.");

    public static final ConfigOption<Duration> RESERVED_CORE_MIN_SAMPLE_TIME = ConfigOptions
            .key("inference.execution-threads.reserved-core-min-sample-time")
            .durationType()
            .defaultValue(Duration.ofMillis(1))
            .withDescription("Where inference.execution-threads is unset on the CPU, the core kept for the task's "
                    + "own threads also runs a batch while every execution thread is busy, if the batch takes at "
                    + "least this long per sample by its model's latency model (what the batcher learns from the "
                    + "batches run; a model that has run none does not qualify). Beside such a model the task's own "
                    + "work per request, tens to hundreds of microseconds, is a small share of the core, which would "
                    + "otherwise idle while long batches (a transformer encoder's milliseconds per sequence) hold up "
                    + "the queue; fast models, whose batches cost microseconds per sample, leave it to the task. "
                    + "0 ms: any batch may take it (as execution-threads one higher). Set execution-threads to "
                    + "never lend it. The executionThreads gauge counts the threads without it.");

    public static final ConfigOption<String> DEVICE_TYPE = ConfigOptions.key("inference.device.type")
            .stringType()
            .defaultValue("auto")
            .withDescription("Where models run: 'auto' (a CUDA GPU when one is usable, else the CPU), 'cuda' "
                    + "(the CPU with a warning where there is no GPU), 'cpu', or 'simulated' "
                    + "(see inference.device.simulated.*). Subtask i uses GPU i mod the number of GPUs, unless "
                    + "inference.device.slot-weights gives GPUs different numbers of slots.");

    public static final ConfigOption<List<Double>> DEVICE_SLOT_WEIGHTS = ConfigOptions.key("inference.device.slot-weights")
            .doubleType()
            .asList()
            .defaultValues()
            .withDescription("Relative speed of each GPU, one positive number per GPU in device order, separated by "
                    + "';' (e.g. '3;1'). The inference subtasks are split over the GPUs in proportion (largest "
                    + "remainder, every GPU at least one slot once there are as many subtasks as GPUs), subtask i of "
                    + "the running parallelism on the GPU that io.flinkgpu.contract.placement.SlotLayout gives it; "
                    + "a rescale keeps subtasks on their GPUs as far as the new counts allow. The coordinator's "
                    + "coordinator.parallelism.device-weights must be the same. Empty (default) or equal weights: "
                    + "subtask i on GPU i mod the number of GPUs. With type 'simulated' there must be "
                    + "inference.device.simulated.count weights; with 'cpu' none (each subtask has its own CPU "
                    + "device). With real GPUs a count other than the GPUs a TaskManager has is logged and the "
                    + "weights are not used there.");

    public static final ConfigOption<MemorySize> DEVICE_MEMORY = ConfigOptions.key("inference.device.memory")
            .memoryType()
            .defaultValue(MemorySize.parse("2g"))
            .withDescription("Memory budget for loaded models per subtask when models run on the CPU.");

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
            .withDescription("Encoded request size at most; larger requests are rejected with TENSOR_TOO_LARGE. "
                    + "The default equals the default inference.kafka.max-record-size and Kafka's default "
                    + "max.message.bytes (1 MiB): raise them together.");

    public static final ConfigOption<Boolean> QUEUE_AWARE_ROUTING = ConfigOptions.key("inference.routing.queue-aware")
            .booleanType()
            .defaultValue(true)
            .withDescription("Under a coordinator's plan, send each request of a model to the replica with the fewest "
                    + "outstanding requests (queued or on their way, plus one per batch executing), ties "
                    + "by the plan's weighted round robin, instead of the round robin alone. The counts are shared "
                    + "inside one TaskManager: a model whose replicas run in several TaskManagers is routed by the "
                    + "weights alone, as with false.");

    public static final ConfigOption<Integer> MAX_ISOLATED_CULPRITS =
            ConfigOptions.key("inference.execution.max-isolated-culprits")
                    .intType()
                    .defaultValue(2)
                    .withDescription("When ONNX Runtime fails a batch, the batch is split and the halves retried until "
                            + "the failing requests are found, so that the other requests of the batch are still "
                            + "answered. This bounds the extra runs to about 2*log2(batch size) per culprit for this "
                            + "many culprits; requests not isolated within that budget get INFERENCE_FAILED. "
                            + "0 fails the whole batch.");

    // ---- request QoS ---------------------------------------------------------------------

    public static final ConfigOption<String> TENANTS_FILE = ConfigOptions.key("inference.qos.tenants-file")
            .stringType()
            .defaultValue("")
            .withDescription("JSON file with tenant weights, rate limits, in-flight limits and allowed models. "
                    + "Empty: <model repository>/tenants.json if it exists, else every tenant unlimited with weight 1.");

    // ---- devices, model repository and model cache -------------------------------------------

    public static final ConfigOption<Double> CUDA_MEMORY_FRACTION = ConfigOptions.key("inference.device.cuda.memory-fraction")
            .doubleType()
            .defaultValue(0.9)
            .withDescription("Share of each GPU's memory that loaded models may use; the rest is left to the CUDA "
                    + "context and activations.");

    public static final ConfigOption<Integer> SIMULATED_DEVICES = ConfigOptions.key("inference.device.simulated.count")
            .intType()
            .defaultValue(1)
            .withDescription("Simulated GPUs per TaskManager (device type 'simulated'); subtask i uses sim:(i mod count) "
                    + "and subtasks on one simulated GPU share its memory.");

    public static final ConfigOption<MemorySize> SIMULATED_MEMORY = ConfigOptions.key("inference.device.simulated.memory")
            .memoryType()
            .defaultValue(MemorySize.parse("8g"))
            .withDescription("Memory of each simulated GPU, accounted in 2 MiB pages.");

    public static final ConfigOption<String> SIMULATED_SPEED = ConfigOptions.key("inference.device.simulated.speed")
            .stringType()
            .defaultValue("cpu*1")
            .withDescription("Batch latency of a simulated GPU: 'A+B*b' (A ms per batch plus B ms per sample) or "
                    + "'cpu*F' (F times the measured CPU time). Models run for real on the CPU; the batch then "
                    + "waits out the rest of the modelled time.");

    public static final ConfigOption<List<String>> SIMULATED_MODEL_SPEEDS =
            ConfigOptions.key("inference.device.simulated.model-speeds")
                    .stringType()
                    .asList()
                    .defaultValues()
                    .withDescription("Per-model speeds overriding inference.device.simulated.speed, as "
                            + "'model=A+B*b' or 'model:version=A+B*b' entries separated by ';' (also 'cpu*F'); a "
                            + "versioned entry wins over the model's, so one version can run slower than another.");

    public static final ConfigOption<List<String>> SIMULATED_MODEL_FAILURES =
            ConfigOptions.key("inference.device.simulated.model-failures")
                    .stringType()
                    .asList()
                    .defaultValues()
                    .withDescription("Shares of batches a simulated GPU fails on purpose, as 'model=S' or "
                            + "'model:version=S' entries separated by ';', S in [0, 1] (a versioned entry wins): a "
                            + "bad model version without a second network. A batch fails when a hash of model, "
                            + "version and its first request id falls below S, so the same request fails again when "
                            + "its batch is retried and batch isolation narrows the failure to it; its request is "
                            + "answered INFERENCE_FAILED with a message naming the simulated failure, the job goes on. "
                            + "Checked at configuration: a malformed entry or a share outside [0, 1] is refused.");

    public static final ConfigOption<String> SIMULATED_LOAD_TIME = ConfigOptions.key("inference.device.simulated.load-time")
            .stringType()
            .defaultValue(io.flinkgpu.inference.device.LoadTimeModel.DEFAULT_SPEC)
            .withDescription("Time a simulated GPU takes to put a model on the device, cold load or swap-in from the "
                    + "host tier: 'A+B*mib' (A ms plus B ms per MiB of model). The default stands for ONNX Runtime's "
                    + "CUDA session set-up plus a copy from pageable host memory at about 2 GB/s; '0' turns it off.");

    public static final ConfigOption<Integer> MAX_MODELS_PER_DEVICE = ConfigOptions.key("inference.cache.max-models-per-device")
            .intType()
            .defaultValue(ModelCacheSettings.DEFAULT_MAX_MODELS)
            .withDescription("Model versions loaded on one device at most (max_models_per_device); loading one more "
                    + "evicts the least recently used one that no batch is using.");

    public static final ConfigOption<Duration> EVICTION_TIMEOUT = ConfigOptions.key("inference.cache.eviction-timeout")
            .durationType()
            .defaultValue(ModelCacheSettings.DEFAULT_EVICTION_TIMEOUT)
            .withDescription("A model unused this long is evicted from its device (eviction_timeout); 0 turns idle "
                    + "eviction off.");

    public static final ConfigOption<MemorySize> HOST_CACHE_MEMORY = ConfigOptions.key("inference.cache.host-memory")
            .memoryType()
            .defaultValue(new MemorySize(ModelCacheSettings.DEFAULT_HOST_MEMORY_BYTES))
            .withDescription("Host memory for the bytes of models evicted from the device, so that loading them again "
                    + "is a swap-in rather than a read from the repository.");

    public static final ConfigOption<Integer> WARMUP_WORKERS = ConfigOptions.key("inference.cache.warmup-workers")
            .intType()
            .defaultValue(ModelCacheSettings.DEFAULT_WARMUP_WORKERS)
            .withDescription("Threads that run a newly loaded model on generated inputs at the batch sizes it will "
                    + "see before it takes traffic (warmup_workers); 0 turns warm-up off.");

    public static final ConfigOption<Duration> LOAD_RETRY_INTERVAL = ConfigOptions.key("inference.cache.load-retry-interval")
            .durationType()
            .defaultValue(ModelCacheSettings.DEFAULT_LOAD_RETRY_INTERVAL)
            .withDescription("How long a model that failed to load (corrupt, out of memory) answers "
                    + "MODEL_LOAD_FAILED at once before a request tries to load it again.");

    public static final ConfigOption<Duration> LOAD_ROOM_WAIT = ConfigOptions.key("inference.cache.room-wait")
            .durationType()
            .defaultValue(ModelCacheSettings.DEFAULT_ROOM_WAIT)
            .withDescription("How long a load waits for batches on other models to finish when every loaded model is "
                    + "in use and nothing can be evicted yet.");

    public static final ConfigOption<Duration> REPOSITORY_POLL_INTERVAL =
            ConfigOptions.key("inference.model-repository.poll-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(10))
                    .withDescription("How often the repository is rescanned for new, changed and removed model versions "
                            + "(hot reload: a new default version is loaded and warmed up before traffic moves to it); "
                            + "0 turns hot reload off.");

    // ---- control plane ---------------------------------------------------------------------

    /** Prefix of the verify keys: {@code inference.control.verify-keys.<key-id>: <secret reference>}. */
    public static final String CONTROL_VERIFY_KEYS_PREFIX = "inference.control.verify-keys.";

    /** Stands for every {@code inference.control.verify-keys.<key-id>} key (read by prefix, not by this key). */
    public static final ConfigOption<String> CONTROL_VERIFY_KEYS =
            ConfigOptions.key(CONTROL_VERIFY_KEYS_PREFIX + "<key-id>")
                    .stringType()
                    .noDefaultValue()
                    .withDescription("A key that signs the coordinator's plans on the control topic, under key id "
                            + "<key-id> (1 to 64 of A-Z a-z 0-9 . _ -), as a secret reference: 'file:/path' (the "
                            + "file's content), 'env:NAME' (an environment variable) or the key itself (at least "
                            + "16 bytes). Set several to rotate keys. With at least one set, a plan is applied only "
                            + "if it is signed under one of them (see inference.control.require-signature); "
                            + "refused records are counted in plansRefusedUnsigned and plansRefusedBadSignature. "
                            + "References are resolved when the job is built and again when each plan router "
                            + "subtask starts; with file: or env: the key itself is not in the job graph.");

    public static final ConfigOption<Boolean> CONTROL_REQUIRE_SIGNATURE =
            ConfigOptions.key("inference.control.require-signature")
                    .booleanType()
                    .noDefaultValue()
                    .withDescription("Whether control records without a signature (bare plans) are refused. "
                            + "Default: true iff an inference.control.verify-keys.<key-id> is set. False with keys "
                            + "set still verifies signed plans (a bad signature or an unknown key id is refused) "
                            + "but applies bare ones, for a migration in which the jobs get the keys before the "
                            + "coordinator signs. True without any key is a configuration error.");

    /**
     * Every option of this class that a Flink configuration sets by its key, in declaration order:
     * all but {@link #CONTROL_VERIFY_KEYS}, which stands for keys read by prefix. The builder's
     * {@code configuration(...)} copies these, so a new option reaches the job without a list to keep.
     */
    public static java.util.List<ConfigOption<?>> all() {
        java.util.List<ConfigOption<?>> options = new java.util.ArrayList<>();
        for (java.lang.reflect.Field f : GpuInferenceOptions.class.getFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType())) {
                try {
                    ConfigOption<?> option = (ConfigOption<?>) f.get(null);
                    if (option != CONTROL_VERIFY_KEYS) {
                        options.add(option);
                    }
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return options;
    }
}
