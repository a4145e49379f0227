package io.flinkgpu.inference.operator;

import io.flinkgpu.contract.security.Secrets;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.admission.ValidationLimits;
import java.time.Duration;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.datastream.BroadcastStream;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.OutputTag;

/**
 * The public entry point: adds dynamically batched model inference to a stream of requests.
 *
 * <pre>{@code
 * DataStream<InferenceResponse> responses = GpuInference.builder()
 *         .modelRepository("/models")
 *         .maxBatchSize(32)
 *         .maxQueueDelay(Duration.ofMillis(5))
 *         .build()
 *         .apply(requests);
 * }</pre>
 *
 * Every request is answered, with outputs or with an error response carrying its reason.
 *
 * <p>A stream of any events can be enriched instead, each coming out with its model outputs (or
 * on a failure side output with its error), see {@link #enrich(DataStream, Enrichment)}.
 */
public final class GpuInference {
    public static final String DEFAULT_UID = "gpu-inference";
    /** Uids of the plan router and of the routed requests with the default uid (those of the job). */
    public static final String DEFAULT_ROUTER_UID = "plan-router";
    public static final String DEFAULT_ROUTED_UID = "routed-requests";

    /**
     * Side output of the inference operator: requests refused as bad input, and records whose
     * handling threw, each besides its error response (see {@link RefusedRequest}). Read it with
     * {@code responses.getSideOutput(GpuInference.REFUSED)} to dead-letter them.
     */
    public static final OutputTag<RefusedRequest> REFUSED =
            new OutputTag<>("refused-requests", InferenceTypes.REFUSED) {};

    private final InferenceSettings settings;
    private final ControlPlaneSettings controlPlane;
    private final String name;
    private final String uid;
    /** The inference operator's parallelism; 0: the environment's default. */
    private final int parallelism;

    private GpuInference(InferenceSettings settings, ControlPlaneSettings controlPlane, String name, String uid,
            int parallelism) {
        this.settings = settings;
        this.controlPlane = controlPlane;
        this.name = name;
        this.uid = uid;
        this.parallelism = parallelism;
    }

    public static Builder builder() {
        return new Builder();
    }

    public InferenceSettings settings() {
        return settings;
    }

    /** How the plan router checks control records' signatures (trusted mode without verify keys). */
    public ControlPlaneSettings controlPlane() {
        return controlPlane;
    }

    /**
     * Applies inference to {@code requests} as they are partitioned (partition them by model, e.g.
     * with {@link ModelPartitioner}, so that each subtask loads only the models it serves); the
     * operator's uid stays stable across versions.
     */
    public SingleOutputStreamOperator<InferenceResponse> apply(DataStream<InferenceRequest> requests) {
        SingleOutputStreamOperator<InferenceResponse> responses = requests
                .transform(name, InferenceTypes.RESPONSE, new GpuInferenceOperatorFactory(settings))
                .uid(uid)
                .name(name);
        if (parallelism > 0) {
            responses.setParallelism(parallelism);
        }
        return responses;
    }

    /**
     * Applies inference to {@code requests} under a coordinator's control plane: {@code control}
     * carries the raw records of the control topic (JSON plans, see {@code ControlMessage}). They
     * pass one gate, {@link PlanRouter}, which keeps the newest valid plan (invalid records,
     * older epochs and, with verify keys configured, unsigned or wrongly signed records are
     * counted and ignored; see {@link ControlPlaneSettings}), routes each request to the inference subtask the plan
     * gives its model (of its replicas, the one with the fewest outstanding requests, where
     * {@code inference.routing.queue-aware} is on and they run in the router's JVM; by model hash
     * where the plan says nothing) and hands each applied plan to the
     * inference subtasks, which carry out the LOAD/UNLOAD commands addressed to them. The inference
     * operator has the same uid as with {@link #apply(DataStream)}, so its request state carries
     * over when a job adds control.
     */
    public SingleOutputStreamOperator<InferenceResponse> apply(DataStream<InferenceRequest> requests,
            DataStream<byte[]> control) {
        int p = parallelism > 0 ? parallelism : requests.getExecutionEnvironment().getParallelism();
        boolean defaultUid = uid.equals(DEFAULT_UID);
        BroadcastStream<byte[]> plans = control.broadcast(PlanRouter.PLAN_STATE);
        String queueBoard = settings.queueAwareRouting() ? uid : null; // the router and its subtasks meet on it
        TypeInformation<Tuple2<Integer, InferenceRequest>> targeted = Types.TUPLE(Types.INT, InferenceTypes.REQUEST);
        SingleOutputStreamOperator<Tuple2<Integer, InferenceRequest>> router = requests.connect(plans)
                .process(new PlanRouter(p, controlPlane, settings.device().slotWeights(), queueBoard), targeted)
                .uid(defaultUid ? DEFAULT_ROUTER_UID : uid + "-" + DEFAULT_ROUTER_UID)
                .name("Plan router");
        DataStream<InferenceRequest> routed = router
                .partitionCustom(new PlanRouter.TargetPartitioner(settings.device().slotWeights()), new PlanRouter.Target())
                .map(new PlanRouter.Unwrap(), InferenceTypes.REQUEST)
                .uid(defaultUid ? DEFAULT_ROUTED_UID : uid + "-" + DEFAULT_ROUTED_UID)
                .name("Routed requests")
                .setParallelism(p);
        return routed.connect(router.getSideOutput(PlanRouter.APPLIED_PLANS).broadcast())
                .transform(name, InferenceTypes.RESPONSE, new ControlledGpuInferenceOperatorFactory(settings, queueBoard))
                .uid(uid)
                .name(name)
                .setParallelism(p);
    }

    /**
     * Enriches each event of {@code events} with the outputs of the enrichment's model: the
     * event's inputs ({@link Enrichment.InputsFunction}) are batched and run like requests of
     * {@link #apply(DataStream)}, by the same operator engine with the same settings, and the event
     * with its successful response becomes the record the {@link Enrichment.CombineFunction} makes.
     * An event that gets an error, or for which a function of the enrichment throws or returns
     * null ({@code INTERNAL}), comes out on the side output {@link #enrichmentFailures} with the
     * event and the error; the task never fails for an event. Checkpoints hold the events not yet
     * answered, serialized as the stream's type, and a restore queues them again (at-least-once).
     *
     * <p>The operator's uid is this builder's uid followed by {@code -enrich-<model>} and its name
     * this builder's name followed by the model (override them on the result with
     * {@code uid(...)}, {@code name(...)}, as for two enrichments of one model). Enriched records
     * carry no timestamp of their event; assign timestamps downstream where event time matters.
     *
     * @throws IllegalArgumentException where the enrichment has no result type ({@link Enrichment#returns})
     * @throws org.apache.flink.api.common.InvalidProgramException where a function is not serializable
     */
    public <T, R> SingleOutputStreamOperator<R> enrich(DataStream<T> events, Enrichment<T, R> enrichment) {
        TypeInformation<R> resultType = enrichment.resultType();
        if (resultType == null) {
            throw new IllegalArgumentException(enrichment + " has no result type: set it with returns(...)");
        }
        StreamExecutionEnvironment env = events.getExecutionEnvironment();
        env.clean(enrichment.inputs());
        env.clean(enrichment.combine());
        if (enrichment.parameters() != null) {
            env.clean(enrichment.parameters());
        }
        TypeInformation<T> eventType = events.getType();
        TypeSerializer<T> eventSerializer = eventType.createSerializer(env.getConfig().getSerializerConfig());
        String operatorName = name + " (enrich " + enrichment.model() + ")";
        SingleOutputStreamOperator<R> enriched = events
                .transform(operatorName, resultType, new EnrichmentOperatorFactory<>(settings, enrichment,
                        eventSerializer, enrichmentFailures(eventType)))
                .uid(uid + "-enrich-" + enrichment.model())
                .name(operatorName);
        if (parallelism > 0) {
            enriched.setParallelism(parallelism);
        }
        return enriched;
    }

    /**
     * The failure side output of {@link #enrich} for {@code events}: read it with
     * {@code enriched.getSideOutput(GpuInference.enrichmentFailures(events))}.
     */
    public static <T> OutputTag<EnrichmentFailure<T>> enrichmentFailures(DataStream<T> events) {
        return enrichmentFailures(events.getType());
    }

    /** The failure side output of {@link #enrich} for events of {@code eventType}. */
    public static <T> OutputTag<EnrichmentFailure<T>> enrichmentFailures(TypeInformation<T> eventType) {
        return new OutputTag<>(EnrichmentFailure.TAG_ID, EnrichmentFailure.typeOf(eventType));
    }

    /** Builds a {@link GpuInference}; unset values come from {@link GpuInferenceOptions}' defaults. */
    public static final class Builder {
        private final Configuration config = new Configuration();
        /** Control-plane verify keys: key id -> secret reference. */
        private final java.util.TreeMap<String, String> verifyKeys = new java.util.TreeMap<>();
        private String name = "GPU inference";
        private String uid = DEFAULT_UID;
        private int parallelism;

        /** Starts from a Flink configuration (config.yaml, {@code -D}); later calls override it. */
        public Builder configuration(ReadableConfig flinkConfig) {
            for (var option : GpuInferenceOptions.all()) {
                copy(flinkConfig, option);
            }
            verifyKeys.putAll(Secrets.withPrefix(flinkConfig.toMap(),
                    GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX));
            return this;
        }

        private <T> void copy(ReadableConfig from, org.apache.flink.configuration.ConfigOption<T> option) {
            from.getOptional(option).ifPresent(v -> config.set(option, v));
        }

        public Builder modelRepository(String path) {
            config.set(GpuInferenceOptions.MODEL_REPOSITORY, path);
            return this;
        }

        public Builder maxBatchSize(int size) {
            config.set(GpuInferenceOptions.MAX_BATCH_SIZE, size);
            return this;
        }

        public Builder maxQueueDelay(Duration delay) {
            config.set(GpuInferenceOptions.MAX_QUEUE_DELAY, delay);
            return this;
        }

        public Builder preferredBatchSizes(Integer... sizes) {
            config.set(GpuInferenceOptions.PREFERRED_BATCH_SIZES, java.util.List.of(sizes));
            return this;
        }

        public Builder maxEnqueuedBatches(int batches) {
            config.set(GpuInferenceOptions.MAX_ENQUEUED_BATCHES, batches);
            return this;
        }

        /** See {@link GpuInferenceOptions#QUEUE_AWARE_ROUTING} (on by default). */
        public Builder queueAwareRouting(boolean on) {
            config.set(GpuInferenceOptions.QUEUE_AWARE_ROUTING, on);
            return this;
        }

        public Builder executionThreads(int threads) {
            config.set(GpuInferenceOptions.EXECUTION_THREADS, threads);
            return this;
        }

        public Builder intraOpThreads(int threads) {
            config.set(GpuInferenceOptions.INTRA_OP_THREADS, threads);
            return this;
        }

        public Builder limits(ValidationLimits limits) {
            config.set(GpuInferenceOptions.MAX_TENSOR_ELEMENTS, limits.maxTensorElements());
            config.set(GpuInferenceOptions.MAX_REQUEST_SIZE,
                    new org.apache.flink.configuration.MemorySize(limits.maxRequestBytes()));
            return this;
        }

        /** {@code auto}, {@code cuda}, {@code cpu} or {@code simulated}. */
        public Builder deviceType(String type) {
            config.set(GpuInferenceOptions.DEVICE_TYPE, type);
            return this;
        }

        /** Runs models on {@code count} simulated GPUs of {@code memory} each with batch latency {@code speed}. */
        public Builder simulatedDevices(int count, org.apache.flink.configuration.MemorySize memory, String speed) {
            config.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
            config.set(GpuInferenceOptions.SIMULATED_DEVICES, count);
            config.set(GpuInferenceOptions.SIMULATED_MEMORY, memory);
            config.set(GpuInferenceOptions.SIMULATED_SPEED, speed);
            return this;
        }

        /**
         * Gives the GPUs slots in proportion to {@code weights}, one per GPU
         * ({@link GpuInferenceOptions#DEVICE_SLOT_WEIGHTS}); checked when the job is built.
         */
        public Builder slotWeights(Double... weights) {
            config.set(GpuInferenceOptions.DEVICE_SLOT_WEIGHTS, java.util.List.of(weights));
            return this;
        }

        public Builder maxModelsPerDevice(int models) {
            config.set(GpuInferenceOptions.MAX_MODELS_PER_DEVICE, models);
            return this;
        }

        public Builder evictionTimeout(Duration timeout) {
            config.set(GpuInferenceOptions.EVICTION_TIMEOUT, timeout);
            return this;
        }

        public Builder warmupWorkers(int workers) {
            config.set(GpuInferenceOptions.WARMUP_WORKERS, workers);
            return this;
        }

        /** Rescans the model repository this often for new versions (hot reload); zero turns it off. */
        public Builder repositoryPollInterval(Duration interval) {
            config.set(GpuInferenceOptions.REPOSITORY_POLL_INTERVAL, interval);
            return this;
        }

        /** Sets any {@link GpuInferenceOptions} option. */
        public <T> Builder option(org.apache.flink.configuration.ConfigOption<T> option, T value) {
            config.set(option, value);
            return this;
        }

        /**
         * Accepts plans signed under {@code keyId} with the key {@code secretReference} names
         * ({@code file:/path}, {@code env:NAME} or the key itself); with any key set, unsigned plans
         * are refused unless {@link #requireSignedPlans(boolean)} says otherwise.
         */
        public Builder controlVerifyKey(String keyId, String secretReference) {
            verifyKeys.put(keyId, java.util.Objects.requireNonNull(secretReference, "secret reference"));
            return this;
        }

        /** Whether unsigned control records are refused (default: iff a verify key is set). */
        public Builder requireSignedPlans(boolean require) {
            config.set(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE, require);
            return this;
        }

        public Builder tenantsFile(String path) {
            config.set(GpuInferenceOptions.TENANTS_FILE, path);
            return this;
        }

        public Builder name(String operatorName) {
            this.name = operatorName;
            return this;
        }

        public Builder uid(String operatorUid) {
            this.uid = operatorUid;
            return this;
        }

        /** The inference operator's parallelism (and the number of subtasks plans route to); default: the environment's. */
        public Builder parallelism(int operatorParallelism) {
            if (operatorParallelism < 1) {
                throw new IllegalArgumentException("parallelism must be at least 1, got " + operatorParallelism);
            }
            this.parallelism = operatorParallelism;
            return this;
        }

        public GpuInference build() {
            InferenceSettings settings = InferenceSettings.fromConfiguration(config);
            ControlPlaneSettings controlPlane = ControlPlaneSettings.of(verifyKeys,
                    config.getOptional(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE));
            return new GpuInference(settings, controlPlane, name, uid, parallelism);
        }
    }
}
