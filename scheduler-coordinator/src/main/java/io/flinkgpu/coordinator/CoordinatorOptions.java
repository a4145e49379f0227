package io.flinkgpu.coordinator;

import io.flinkgpu.contract.control.PlanSigner;
import io.flinkgpu.contract.security.Secrets;
import io.flinkgpu.coordinator.plan.PlannerSettings;
import io.flinkgpu.coordinator.realize.RescalerSettings;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ReadableConfig;

/** Every knob of the scheduler coordinator, with its default (like the autoscaler's {@code AutoScalerOptions}). */
public final class CoordinatorOptions {
    private CoordinatorOptions() {}

    // ---- collect ------------------------------------------------------------------------
    public static final ConfigOption<String> REST_URL = ConfigOptions.key("coordinator.flink.rest-url")
            .stringType()
            .defaultValue("http://localhost:8081")
            .withDescription("Base URL of the Flink cluster's REST API (JobManager).");

    public static final ConfigOption<String> JOB_ID = ConfigOptions.key("coordinator.flink.job-id")
            .stringType()
            .defaultValue("")
            .withDescription("The job to manage; empty: the running job that has an inference vertex.");

    public static final ConfigOption<String> INFERENCE_VERTEX = ConfigOptions.key("coordinator.flink.inference-vertex")
            .stringType()
            .defaultValue("GPU inference")
            .withDescription("The inference operator's vertex is the first whose name contains this.");

    public static final ConfigOption<Duration> REST_TIMEOUT = ConfigOptions.key("coordinator.flink.rest-timeout")
            .durationType()
            .defaultValue(Duration.ofSeconds(5))
            .withDescription("Timeout of one REST request.");

    public static final ConfigOption<Duration> METRICS_SETTLE = ConfigOptions.key("coordinator.flink.metrics-settle")
            .durationType()
            .defaultValue(Duration.ofMillis(300))
            .withDescription("Wait between starting Flink's REST metric fetch and reading the values, so one cycle's "
                    + "reads come from one completed fetch rather than racing it (rates would swing). Keep it above "
                    + "the time a fetch takes and below metrics.fetcher.update-interval.");

    public static final ConfigOption<Duration> INTERVAL = ConfigOptions.key("coordinator.interval")
            .durationType()
            .defaultValue(Duration.ofSeconds(5))
            .withDescription("Time between two collect -> evaluate -> plan -> realize cycles. Flink's REST API "
                    + "refreshes metrics every metrics.fetcher.update-interval (10 s by default): set that lower "
                    + "on the cluster, or decisions lag by up to that much.");

    // ---- evaluate -----------------------------------------------------------------------
    public static final ConfigOption<Duration> RATE_WINDOW = ConfigOptions.key("coordinator.rate-window")
            .durationType()
            .defaultValue(Duration.ofSeconds(5))
            .withDescription("Request rates are the growth of the operator's counters since the newest collection at "
                    + "least this old (the previous one until the coordinator has run this long). Flink's REST API "
                    + "refreshes counters every metrics.fetcher.update-interval, so a rate over one short cycle can "
                    + "read a stale counter and then twice the growth; keep this at least twice that interval. "
                    + "Scaling up follows the latest rate, so a spike over one cycle would add a replica; a longer "
                    + "window also answers a load step later (by up to the window). The default equals the default "
                    + "coordinator.interval: one cycle there, several at shorter intervals. 0: the previous collection.");

    public static final ConfigOption<MemorySize> DEFAULT_MODEL_MEMORY = ConfigOptions.key("coordinator.model.default-memory")
            .memoryType()
            .defaultValue(MemorySize.parse("256mb"))
            .withDescription("Device memory of a model instance when the catalog does not say.");

    public static final ConfigOption<Duration> DEFAULT_SLO = ConfigOptions.key("coordinator.model.default-slo")
            .durationType()
            .defaultValue(Duration.ofMillis(100))
            .withDescription("Latency objective of a model when the catalog does not say; half of it may be spent executing a batch.");

    public static final ConfigOption<Double> CPU_PER_INSTANCE = ConfigOptions.key("coordinator.model.cpu-per-instance")
            .doubleType()
            .defaultValue(0.1)
            .withDescription("Host cores one model instance uses (DRF's CPU demand).");

    public static final ConfigOption<Double> DEFAULT_WEIGHT = ConfigOptions.key("coordinator.tenant.default-weight")
            .doubleType()
            .defaultValue(1.0)
            .withDescription("DRF weight of a claimant (model) without a weight set through the admin API.");

    public static final ConfigOption<Integer> MAX_MODELS_PER_DEVICE = ConfigOptions.key("coordinator.device.max-models")
            .intType()
            .defaultValue(4)
            .withDescription("Models resident on one device at most (match inference.cache.max-models-per-device).");

    public static final ConfigOption<MemorySize> DEFAULT_DEVICE_MEMORY = ConfigOptions.key("coordinator.device.default-memory")
            .memoryType()
            .defaultValue(MemorySize.parse("8gb"))
            .withDescription("Memory budget of a device whose memoryTotalBytes metric is missing.");

    public static final ConfigOption<Double> CPU_PER_DEVICE = ConfigOptions.key("coordinator.device.cpu-cores")
            .doubleType()
            .defaultValue(1.0)
            .withDescription("Host cores available to the subtasks of one device (DRF's CPU capacity).");

    // ---- plan ---------------------------------------------------------------------------
    public static final ConfigOption<Double> TARGET_UTILIZATION = ConfigOptions.key("coordinator.plan.target-utilization")
            .doubleType()
            .defaultValue(0.7)
            .withDescription("Device time (0..1) a device should carry; replicas are added to stay below it.");

    public static final ConfigOption<Double> HYSTERESIS = ConfigOptions.key("coordinator.plan.hysteresis")
            .doubleType()
            .defaultValue(0.15)
            .withDescription("Relative margin: scale in below target x (1 - h), rebalance above target x (1 + h).");

    public static final ConfigOption<Double> HOT_THRESHOLD = ConfigOptions.key("coordinator.plan.hot-threshold")
            .doubleType()
            .defaultValue(0.25)
            .withDescription("Per-instance load from which a model is spread onto the least loaded device instead of packed.");

    public static final ConfigOption<Double> MOVE_PENALTY = ConfigOptions.key("coordinator.plan.move-penalty")
            .doubleType()
            .defaultValue(0.1)
            .withDescription("Device time a move must take off the busiest device to be worth a model load.");

    public static final ConfigOption<Duration> MIN_MOVE_INTERVAL = ConfigOptions.key("coordinator.plan.min-move-interval")
            .durationType()
            .defaultValue(Duration.ofMinutes(2))
            .withDescription("A model is not moved again sooner than this.");

    public static final ConfigOption<Duration> REVERSAL_WINDOW = ConfigOptions.key("coordinator.plan.reversal-window")
            .durationType()
            .defaultValue(Duration.ofMinutes(10))
            .withDescription("Window of the reversal limit.");

    public static final ConfigOption<Integer> MAX_REVERSALS = ConfigOptions.key("coordinator.plan.max-reversals")
            .intType()
            .defaultValue(1)
            .withDescription("Moves that undo an earlier move of the same model, per reversal window.");

    public static final ConfigOption<Integer> MAX_MOVES_PER_PLAN = ConfigOptions.key("coordinator.plan.max-moves")
            .intType()
            .defaultValue(2)
            .withDescription("Relocations in one plan.");

    public static final ConfigOption<Boolean> SLO_COLOCATION = ConfigOptions.key("coordinator.plan.slo-colocation")
            .booleanType()
            .defaultValue(false)
            .withDescription("Keep apart models that cannot share a device within their SLOs: two models conflict "
                    + "when one batch of each, at the batch their demand is priced at (alpha + beta b of the "
                    + "operator's latency model), does not fit the tighter of their declared SLOs (slo_ms), so a "
                    + "request that arrives while the other model's batch runs misses. New instances go to a device "
                    + "without a conflict where one fits within target x (1 + hysteresis), surplus instances leave "
                    + "a conflicting device first, and moves left in coordinator.plan.max-moves separate "
                    + "conflicting pairs. Models without an SLO or a latency model conflict with none. Off by default: in the fleet "
                    + "simulation it did not raise SLO attainment (docs/SIMULATION.md).");

    public static final ConfigOption<Duration> SCALE_IN_WINDOW = ConfigOptions.key("coordinator.plan.scale-in-window")
            .durationType()
            .defaultValue(Duration.ofSeconds(30))
            .withDescription("A model gives an instance back only if its load stayed low for this long: the scale-in "
                    + "decision uses the highest rate measured within the window (scaling up uses the latest).");

    public static final ConfigOption<Duration> SCALE_TO_ZERO_AFTER = ConfigOptions.key("coordinator.plan.scale-to-zero-after")
            .durationType()
            .defaultValue(Duration.ofMinutes(30))
            .withDescription("A model whose request counters (requestsIn on every inference subtask) stood still for "
                    + "this long gets no instance: its route is removed and its instances are unloaded "
                    + "(SCALE_TO_ZERO), which frees the device memory that LOAD pins. A request for it keeps the "
                    + "job's hash routing, the subtask's device cache loads it on demand, and the next cycle "
                    + "that measures the request plans an instance again, on that device where it fits; its "
                    + "idle clock then starts again, so it goes back to zero only after another whole period "
                    + "without requests. The clocks are kept in the state store and bridged across a "
                    + "coordinator restart by the counters. 0 turns scaling to zero off (every deployed model "
                    + "keeps at least one instance).");

    public static final ConfigOption<Duration> FORECAST_HORIZON = ConfigOptions.key("coordinator.forecast.horizon")
            .durationType()
            .defaultValue(Duration.ofSeconds(15))
            .withDescription("Plan for the demand this far ahead where it is rising: a per-model least-squares line "
                    + "through the measured device-seconds per second of 'coordinator.forecast.window' raises the "
                    + "demand the planner sees to its forecast when the slope's t statistic exceeds "
                    + "'coordinator.forecast.significance', so a replica is loading before a ramp reaches it. It only "
                    + "raises; the scale-in window holds the raised demand as it holds a measured one. 0 turns it off.");

    public static final ConfigOption<Duration> FORECAST_WINDOW = ConfigOptions.key("coordinator.forecast.window")
            .durationType()
            .defaultValue(Duration.ofSeconds(30))
            .withDescription("How far back the forecast's trend is fitted: a least-squares line through each model's "
                    + "measured device-seconds per second of this window. It needs at least 6 collections spanning a "
                    + "quarter of the window before it raises anything.");

    public static final ConfigOption<Double> FORECAST_SIGNIFICANCE = ConfigOptions.key("coordinator.forecast.significance")
            .doubleType()
            .defaultValue(3.0)
            .withDescription("A rise counts only if the fitted slope exceeds this many of its standard errors (its t "
                    + "statistic, from the fit's residuals); the forecast then plans for the slope's lower bound, slope - "
                    + "significance x standard error, so a slope that passes by chance on a steady noisy load "
                    + "raises the demand by next to nothing.");

    public static final ConfigOption<Double> WEIGHT_CHANGE = ConfigOptions.key("coordinator.plan.weight-change")
            .doubleType()
            .defaultValue(0.2)
            .withDescription("Publish a plan whose placement is unchanged only if a routing weight changed by more than this fraction.");

    public static final ConfigOption<Boolean> WARM_BEFORE_ROUTE = ConfigOptions.key("coordinator.plan.warm-before-route")
            .booleanType()
            .defaultValue(true)
            .withDescription("Route a model to a subtask a plan adds it to (REPLICATE, MOVE) only once the job reports "
                    + "it loaded there (the operator's per-version 'loaded' gauge): the plan that adds the instance "
                    + "sends its LOAD with the routes in force, and a later cycle adds the route. Meanwhile a moved "
                    + "model's old instance keeps serving and its UNLOAD waits for the new route. Off: routes change "
                    + "with the plan, and requests sent to a subtask still loading the model wait for the load. "
                    + "The same holds for a rollout's new version: the rollout first sends its LOAD to every "
                    + "subtask where the old version serves, and gives it its first share (or shadow "
                    + "copies) once they report it loaded.");

    public static final ConfigOption<Duration> WARM_TIMEOUT = ConfigOptions.key("coordinator.plan.warm-timeout")
            .durationType()
            .defaultValue(Duration.ofSeconds(30))
            .withDescription("With coordinator.plan.warm-before-route, how long a new instance waits for its load to "
                    + "be reported before it is routed anyway (a failed load, or a job without the 'loaded' gauge, "
                    + "does not hold the route back for ever). Set it above the slowest model's load and warm-up "
                    + "plus the metric delay (metrics.fetcher.update-interval). A rollout's new version waits as "
                    + "long at most before its first share.");

    public static final ConfigOption<Duration> WARM_CHECK_INTERVAL =
            ConfigOptions.key("coordinator.plan.warm-check-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(1))
                    .withDescription("With coordinator.plan.warm-before-route, while a new instance's route is held "
                            + "for its load, the next cycle runs this long after the last one instead of "
                            + "coordinator.interval, so the instance is routed soon after the job reports it loaded. "
                            + "No effect at or above coordinator.interval. The job's metrics must be as fresh "
                            + "(metrics.fetcher.update-interval) for the earlier cycle to see the load.");

    // ---- realize ------------------------------------------------------------------------
    public static final ConfigOption<String> PARALLELISM_MODE = ConfigOptions.key("coordinator.parallelism.mode")
            .stringType()
            .defaultValue("off")
            .withDescription("How the planner's inference parallelism (slots per device) is applied: 'off' (decisions "
                    + "are logged, nothing changes), 'adaptive' (the adaptive scheduler's resource requirements), "
                    + "'savepoint' (stop-with-savepoint and resubmit coordinator.parallelism.jar-id), or 'auto' "
                    + "(adaptive, falling back to savepoint where the cluster refuses it).");

    public static final ConfigOption<Integer> MAX_SLOTS_PER_DEVICE = ConfigOptions.key("coordinator.parallelism.max-slots-per-device")
            .intType()
            .defaultValue(4)
            .withDescription("Inference subtasks per device at most (with coordinator.parallelism.device-weights: on "
                    + "the fullest device, the others having their share).");

    public static final ConfigOption<Integer> DEVICE_COUNT = ConfigOptions.key("coordinator.parallelism.device-count")
            .intType()
            .defaultValue(0)
            .withDescription("GPUs the job can use (0: the devices its subtasks report). With more GPUs than "
                    + "subtasks, the planner asks for a slot on every GPU.");

    public static final ConfigOption<java.util.List<Double>> DEVICE_WEIGHTS =
            ConfigOptions.key("coordinator.parallelism.device-weights")
                    .doubleType()
                    .asList()
                    .defaultValues()
                    .withDescription("Relative speed of each device, one positive number per device in device order, "
                            + "';'-separated (e.g. '3;1'): the same as the job's inference.device.slot-weights. The "
                            + "planner then gives devices slots in proportion (the job's layout, "
                            + "io.flinkgpu.contract.placement.SlotLayout) and steps the parallelism by levels of the "
                            + "fullest device; a job whose subtasks are laid out otherwise gets a HOLD saying so. "
                            + "Empty (default): equal weights, subtask i on device i mod devices.");

    public static final ConfigOption<Double> BUSY_HIGH = ConfigOptions.key("coordinator.parallelism.busy-threshold")
            .doubleType()
            .defaultValue(0.8)
            .withDescription("A device's subtasks busier than this (Flink's busyTimeMsPerSecond / 1000), or that the "
                    + "forecast rate would make so, while the device itself is under the target utilisation get more "
                    + "slots: as many as their measured rate over their busy time says the demand needs at "
                    + "'coordinator.parallelism.target-busy' (one more per device where no rate is measured; with "
                    + "device weights: the level that gives them those). Slots are given back, straight down to the "
                    + "lowest level that still carries the demand, only where every device's busiest subtask would "
                    + "stay below this less the hysteresis ('coordinator.plan.hysteresis').");

    public static final ConfigOption<Double> TARGET_BUSY = ConfigOptions.key("coordinator.parallelism.target-busy")
            .doubleType()
            .noDefaultValue()
            .withDescription("The busy time (0..1) a device's inference subtasks are sized for when slots are added: "
                    + "required slots = ceil(demand rate / (true rate per slot x this)), the true rate per slot being "
                    + "the measured requests per second over the subtasks' busy time. Must lie between "
                    + "'coordinator.parallelism.busy-threshold' x (1 - 'coordinator.plan.hysteresis') and the "
                    + "threshold, so that a sized level is neither given back nor grown again while the demand holds. "
                    + "Unset: the middle of that band, busy-threshold x (1 - hysteresis / 2) (0.74 at the defaults).");

    public static final ConfigOption<Duration> MIN_RESCALE_INTERVAL = ConfigOptions.key("coordinator.parallelism.min-interval")
            .durationType()
            .defaultValue(Duration.ofMinutes(5))
            .withDescription("Between two parallelism changes (each restarts the job from a checkpoint or savepoint).");

    public static final ConfigOption<String> JAR_ID = ConfigOptions.key("coordinator.parallelism.jar-id")
            .stringType()
            .defaultValue("")
            .withDescription("The uploaded job jar (POST /jars/upload) that mode 'savepoint' resubmits.");

    public static final ConfigOption<java.util.List<String>> PROGRAM_ARGS = ConfigOptions.key("coordinator.parallelism.program-args")
            .stringType()
            .asList()
            .defaultValues()
            .withDescription("Program arguments of the resubmitted job, ';'-separated; '--inference.parallelism N' "
                    + "is added (or replaced) with the new parallelism.");

    public static final ConfigOption<String> SAVEPOINT_DIR = ConfigOptions.key("coordinator.parallelism.savepoint-dir")
            .stringType()
            .defaultValue("")
            .withDescription("Target directory of the stop-with-savepoint (empty: the cluster's "
                    + "execution.checkpointing.savepoint-dir).");

    public static final ConfigOption<String> BOOTSTRAP_SERVERS = ConfigOptions.key("coordinator.kafka.bootstrap-servers")
            .stringType()
            .defaultValue("localhost:9092")
            .withDescription("Kafka brokers of the control topic.");

    public static final ConfigOption<String> CONTROL_TOPIC = ConfigOptions.key("coordinator.kafka.control-topic")
            .stringType()
            .defaultValue("inference-control")
            .withDescription("Topic the plans are published to (the job's inference.kafka.control-topic).");

    /**
     * Not read as one value: each {@code coordinator.kafka.properties.<kafka key>} is one client
     * property ({@link #kafkaClientProperties}).
     */
    public static final ConfigOption<Map<String, String>> KAFKA_PROPERTIES = ConfigOptions.key("coordinator.kafka.properties")
            .mapType()
            .noDefaultValue()
            .withDescription("Prefix, one key per Kafka client property: every coordinator.kafka.properties.<name>: "
                    + "<value> is passed to the coordinator's Kafka producer of the control topic, e.g. "
                    + "coordinator.kafka.properties.security.protocol: SASL_SSL, ...sasl.mechanism, ...sasl.jaas.config. "
                    + "Secrets stay out of the configuration with Kafka's config providers (...config.providers: "
                    + "file,env and ...config.providers.file.class / ...config.providers.env.class, then "
                    + "${file:/path/to/file.properties:key} or ${env:NAME} in a value). A prefixed value overrides the "
                    + "producer's tuning defaults (client.id, linger.ms, timeouts); refused at start: "
                    + "bootstrap.servers (use coordinator.kafka.bootstrap-servers), acks and enable.idempotence (plans "
                    + "are written idempotently to all in-sync replicas), transactional.id and the serializers.");

    public static final ConfigOption<String> SIGNING_KEY_ID = ConfigOptions.key("coordinator.control.signing-key-id")
            .stringType()
            .noDefaultValue()
            .withDescription("Key id the plans on the control topic are signed under (1 to 64 of A-Z a-z 0-9 . _ -; "
                    + "the job's inference.control.verify-keys.<key-id>). Set together with "
                    + "coordinator.control.signing-key; without both, plans are published unsigned.");

    public static final ConfigOption<String> SIGNING_KEY = ConfigOptions.key("coordinator.control.signing-key")
            .stringType()
            .noDefaultValue()
            .withDescription("The HMAC-SHA256 key that signs plans, as a secret reference: 'file:/path' (the file's "
                    + "content), 'env:NAME' (an environment variable) or the key itself (at least 16 bytes). "
                    + "Never logged.");

    // ---- state --------------------------------------------------------------------------
    public static final ConfigOption<String> STATE_DIR = ConfigOptions.key("coordinator.state.dir")
            .stringType()
            .defaultValue("coordinator-state")
            .withDescription("RocksDB directory of the coordinator's state.");

    // ---- admin --------------------------------------------------------------------------
    public static final ConfigOption<Integer> ADMIN_PORT = ConfigOptions.key("coordinator.admin.port")
            .intType()
            .defaultValue(8090)
            .withDescription("Port of the admin REST API and /metrics (0: any free port, -1: off).");

    public static final ConfigOption<String> ADMIN_BIND = ConfigOptions.key("coordinator.admin.bind-address")
            .stringType()
            .defaultValue("127.0.0.1")
            .withDescription("Address the admin API listens on.");

    public static final ConfigOption<String> ADMIN_TOKEN = ConfigOptions.key("coordinator.admin.token")
            .stringType()
            .noDefaultValue()
            .withDescription("Admin token of the admin API (Authorization: Bearer <token>): every method of /api/... "
                    + "and /metrics. A secret reference: 'file:/path' (the file's content), 'env:NAME' (an "
                    + "environment variable) or the token itself. Required when the API is on.");

    public static final ConfigOption<String> ADMIN_READ_TOKEN = ConfigOptions.key("coordinator.admin.read-token")
            .stringType()
            .noDefaultValue()
            .withDescription("Read-only token of the admin API: GET requests and /metrics (other methods: 403). "
                    + "A secret reference like coordinator.admin.token, and different from it. Unset: only the "
                    + "admin token is accepted.");

    public static final ConfigOption<Boolean> ADMIN_METRICS_OPEN = ConfigOptions.key("coordinator.admin.metrics.open")
            .booleanType()
            .defaultValue(false)
            .withDescription("Serve /metrics without a token. Its Prometheus text names models and tenants (labels), "
                    + "so this exposes them to anyone who reaches the port; by default /metrics needs the read or "
                    + "the admin token.");

    public static final ConfigOption<String> ADMIN_TLS_KEYSTORE = ConfigOptions.key("coordinator.admin.tls.keystore")
            .stringType()
            .noDefaultValue()
            .withDescription("PKCS12 keystore with the admin API's private key and certificate chain; when set, the "
                    + "API and /metrics are served over HTTPS only (TLSv1.3 and TLSv1.2). Needs "
                    + "coordinator.admin.tls.keystore-password.");

    public static final ConfigOption<String> ADMIN_TLS_KEYSTORE_PASSWORD = ConfigOptions.key("coordinator.admin.tls.keystore-password")
            .stringType()
            .noDefaultValue()
            .withDescription("Password of coordinator.admin.tls.keystore, a secret reference ('file:/path', "
                    + "'env:NAME' or the password itself).");

    public static final ConfigOption<String> ADMIN_TLS_KEY_PASSWORD = ConfigOptions.key("coordinator.admin.tls.key-password")
            .stringType()
            .noDefaultValue()
            .withDescription("Password of the private key in coordinator.admin.tls.keystore, a secret reference; "
                    + "unset: the keystore's password (as keytool writes PKCS12 files).");

    // ---- gray releases (rollout.RolloutEngine) -------------------------------------------
    public static final ConfigOption<java.util.List<Double>> ROLLOUT_STEPS = ConfigOptions.key("coordinator.rollout.steps")
            .doubleType()
            .asList()
            .defaultValues(5.0, 25.0, 50.0, 100.0)
            .withDescription("The new version's share of a model's traffic at each canary step, in percent, "
                    + "ascending, the last 100 (reaching it ends the rollout), e.g. '5;25;50;100'. A rollout "
                    + "started through the admin API may give its own.");

    public static final ConfigOption<Duration> ROLLOUT_MIN_DWELL = ConfigOptions.key("coordinator.rollout.min-dwell")
            .durationType()
            .defaultValue(Duration.ofMinutes(2))
            .withDescription("How long a rollout step (or the shadow phase) lasts at least before the new version "
                    + "is compared with the old one.");

    public static final ConfigOption<Long> ROLLOUT_MIN_SAMPLES = ConfigOptions.key("coordinator.rollout.min-samples")
            .longType()
            .defaultValue(200L)
            .withDescription("Answers each version must have given within a rollout step before the step is judged.");

    public static final ConfigOption<Double> ROLLOUT_SIGNIFICANCE = ConfigOptions.key("coordinator.rollout.significance")
            .doubleType()
            .defaultValue(0.01)
            .withDescription("Level of the one-sided two-proportion z-test on error rates: the new version is worse "
                    + "when the p-value of 'its error rate is above the old one's' is below this. In (0, 0.5).");

    public static final ConfigOption<Double> ROLLOUT_LATENCY_TOLERANCE = ConfigOptions.key(
            "coordinator.rollout.latency-tolerance")
            .doubleType()
            .defaultValue(0.2)
            .withDescription("The new version is worse when its batch latency exceeds the old version's times "
                    + "(1 + this): its batch time at a common batch size (the smaller of the versions' mean batch "
                    + "sizes) by the versions' latency fits (latencyModelAlphaUs + latencyModelBetaUs x b), or "
                    + "its p99 batch service time (serviceLatencyUs_p99, else inferenceLatencyUs_p99; the highest "
                    + "over the subtasks), the latter not compared where its batches are on average the larger.");

    public static final ConfigOption<Long> ROLLOUT_LATENCY_MIN_BATCHES = ConfigOptions.key(
            "coordinator.rollout.latency-min-batches")
            .longType()
            .defaultValue(200L)
            .withDescription("Batches each version must have run within a rollout step before their batch "
                    + "latencies are compared (batch times at a common size and p99s alike; until then the step waits, "
                    + "for at most coordinator.rollout.latency-max-wait): the first batch of a freshly loaded "
                    + "version includes the load, and among fewer than about 200 batches one slow batch is the p99.");

    public static final ConfigOption<Duration> ROLLOUT_LATENCY_MAX_WAIT = ConfigOptions.key(
            "coordinator.rollout.latency-max-wait")
            .durationType()
            .defaultValue(Duration.ofMinutes(10))
            .withDescription("How long a rollout step may last (from its start) waiting for both versions to run "
                    + "coordinator.rollout.latency-min-batches batches once its dwell and samples are complete: until "
                    + "then a new version that is not worse by error rate is not promoted, as its latency is not yet "
                    + "judged (error rates are compared at every collection, so a failing version is rolled back "
                    + "without waiting). Past it the step is judged on error rates alone, and the decision says so. "
                    + "0: no wait.");

    public static final ConfigOption<Double> ROLLOUT_LATENCY_GUARD = ConfigOptions.key(
            "coordinator.rollout.latency-guard")
            .doubleType()
            .defaultValue(5.0)
            .withDescription("A rollout step that is not judged yet (before its min-dwell and min-samples, or while "
                    + "it waits for latency-min-batches) is rolled back at once when the new version's batch time at "
                    + "a common batch size by the versions' latency fits exceeds the old version's times this factor, "
                    + "once both ran coordinator.rollout.latency-guard-batches batches in the step: a version that "
                    + "slow holds up the old version's requests on the execution threads they share for the whole "
                    + "dwell otherwise. 0: no guard; else above 1.");

    public static final ConfigOption<Long> ROLLOUT_LATENCY_GUARD_BATCHES = ConfigOptions.key(
            "coordinator.rollout.latency-guard-batches")
            .longType()
            .defaultValue(10L)
            .withDescription("Batches each version must have run within a rollout step before "
                    + "coordinator.rollout.latency-guard compares their latency fits (Theil-Sen fits, robust to a "
                    + "slow first batch among them).");

    public static final ConfigOption<Double> ROLLOUT_EARLY_SIGNIFICANCE = ConfigOptions.key(
            "coordinator.rollout.early-significance")
            .doubleType()
            .defaultValue(1e-4)
            .withDescription("Before a rollout step's min-dwell and min-samples are complete, the new version is "
                    + "rolled back at once when the exact one-sided test of 'its error rate is above the old one's' "
                    + "on the step's counts (Fisher's) gives a p-value below this: far stricter than "
                    + "coordinator.rollout.significance, as an early look of a group-sequential test is, so that the "
                    + "early looks hardly add false rollbacks. 0: no early look; else at most "
                    + "coordinator.rollout.significance.");

    public static final ConfigOption<Double> ROLLOUT_SHADOW_FRACTION = ConfigOptions.key(
            "coordinator.rollout.shadow-fraction")
            .doubleType()
            .defaultValue(0.1)
            .withDescription("In shadow mode, the share of a model's requests copied to the new version (its answers "
                    + "are counted and discarded), in (0, 1]. A rollout may give its own.");

    public static final ConfigOption<io.flinkgpu.coordinator.rollout.Rollout.AfterShadow> ROLLOUT_AFTER_SHADOW =
            ConfigOptions.key("coordinator.rollout.after-shadow")
                    .enumType(io.flinkgpu.coordinator.rollout.Rollout.AfterShadow.class)
                    .defaultValue(io.flinkgpu.coordinator.rollout.Rollout.AfterShadow.CANARY)
                    .withDescription("What a passed shadow phase leads to: CANARY (the canary steps follow) or FINISH "
                            + "(the rollout is done and the new version serves 100%). A rollout may say its own.");

    /**
     * The rollout engine's settings ({@code coordinator.rollout.*}); steps from percent to fractions.
     * With {@code coordinator.plan.warm-before-route} a rollout first warms its new version where
     * the old one is loaded, for at most {@code coordinator.plan.warm-timeout}.
     */
    public static io.flinkgpu.coordinator.rollout.RolloutSettings rolloutSettings(ReadableConfig c) {
        return new io.flinkgpu.coordinator.rollout.RolloutSettings(c.get(ROLLOUT_MIN_DWELL), c.get(ROLLOUT_MIN_SAMPLES),
                c.get(ROLLOUT_SIGNIFICANCE), c.get(ROLLOUT_LATENCY_TOLERANCE), c.get(ROLLOUT_LATENCY_MIN_BATCHES),
                c.get(ROLLOUT_LATENCY_MAX_WAIT), c.get(ROLLOUT_LATENCY_GUARD), c.get(ROLLOUT_LATENCY_GUARD_BATCHES),
                c.get(ROLLOUT_EARLY_SIGNIFICANCE),
                c.get(ROLLOUT_STEPS).stream().map(p -> p / 100).toList(), c.get(ROLLOUT_SHADOW_FRACTION),
                c.get(ROLLOUT_AFTER_SHADOW), c.get(WARM_BEFORE_ROUTE) ? c.get(WARM_TIMEOUT) : Duration.ZERO);
    }

    public static PlannerSettings plannerSettings(ReadableConfig c) {
        return new PlannerSettings(c.get(TARGET_UTILIZATION), c.get(HYSTERESIS), c.get(HOT_THRESHOLD),
                c.get(MOVE_PENALTY), c.get(MIN_MOVE_INTERVAL).toMillis(), c.get(REVERSAL_WINDOW).toMillis(),
                c.get(MAX_REVERSALS), c.get(MAX_MOVES_PER_PLAN), c.get(SLO_COLOCATION));
    }

    /** What {@code coordinator.parallelism.mode} asks for, with the REST endpoint and the resubmission's jar. */
    public static RescalerSettings rescalerSettings(ReadableConfig c) {
        return new RescalerSettings(c.get(PARALLELISM_MODE), c.get(REST_URL), c.get(REST_TIMEOUT), c.get(JAR_ID),
                c.get(PROGRAM_ARGS), c.get(SAVEPOINT_DIR));
    }

    /**
     * The pass-through Kafka client properties: every {@code coordinator.kafka.properties.<key>},
     * the prefix removed ({@link io.flinkgpu.coordinator.realize.KafkaPlanRealizer} refuses the keys
     * it sets itself).
     */
    public static Map<String, String> kafkaClientProperties(ReadableConfig c) {
        return io.flinkgpu.contract.security.PassThroughProperties.read(c.toMap(), KAFKA_PROPERTIES.key(), Map.of());
    }

    /**
     * The signer of {@link #SIGNING_KEY_ID} and {@link #SIGNING_KEY} (the key resolved now), or empty
     * where neither is set. Throws {@link IllegalArgumentException} for one without the other, an
     * unusable key id or key, or a reference that cannot be read (the message names the option,
     * never the key).
     */
    public static Optional<PlanSigner> planSigner(ReadableConfig c) {
        Optional<String> keyId = c.getOptional(SIGNING_KEY_ID);
        Optional<String> key = c.getOptional(SIGNING_KEY);
        if (keyId.isEmpty() && key.isEmpty()) {
            return Optional.empty();
        }
        if (keyId.isEmpty() || key.isEmpty()) {
            throw new IllegalArgumentException("set both " + SIGNING_KEY_ID.key() + " and " + SIGNING_KEY.key()
                    + " (plans are signed under the key id), or neither");
        }
        try {
            return Optional.of(new PlanSigner(keyId.get(),
                    Secrets.resolve(key.get()).getBytes(StandardCharsets.UTF_8)));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(SIGNING_KEY.key() + " / " + SIGNING_KEY_ID.key() + ": " + e.getMessage());
        }
    }

    /** An option's description as plain text. */
    public static String describe(ConfigOption<?> option) {
        return new org.apache.flink.configuration.description.HtmlFormatter().format(option.description())
                .replace("&#39;", "'").replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">")
                .replace("&amp;", "&");
    }

    /** All options, for --help and docs. */
    public static Map<String, ConfigOption<?>> all() {
        Map<String, ConfigOption<?>> out = new java.util.LinkedHashMap<>();
        for (java.lang.reflect.Field f : CoordinatorOptions.class.getFields()) {
            if (ConfigOption.class.isAssignableFrom(f.getType())) {
                try {
                    ConfigOption<?> o = (ConfigOption<?>) f.get(null);
                    out.put(o.key(), o);
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return out;
    }
}
