package io.flinkgpu.bench.run;

import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.load.RequestClasses;
import io.flinkgpu.bench.load.RunSpec;
import io.flinkgpu.bench.load.Target;
import io.flinkgpu.bench.load.ThreadCpu;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.bench.sut.Ceiling;
import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sut.JobTopics;
import io.flinkgpu.bench.sut.KafkaRelay;
import io.flinkgpu.bench.sut.KafkaTarget;
import io.flinkgpu.bench.sut.RowsPerBatch;
import io.flinkgpu.bench.sut.RecordCodec;
import io.flinkgpu.bench.sut.SqlPredict;
import io.flinkgpu.bench.sweep.RateSweep;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import java.io.PrintStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;

/** Runs every configuration of every scenario against one embedded Kafka broker. */
public final class BenchmarkRunner {
    /** A system under test. */
    public record SutConfig(String name, String role, Deployments.Kind kind, Map<String, String> options,
            String description) {}

    /** Everything measured for one configuration of one scenario. */
    public static final class ConfigResult {
        public final SutConfig config;
        public PointResult unloaded;
        public RateSweep.Outcome sweep;
        public final Map<String, PointResult> extra = new LinkedHashMap<>();
        public String failure;

        public ConfigResult(SutConfig config) {
            this.config = config;
        }

        public double goodput() {
            return sweep == null ? 0 : sweep.goodput();
        }

        /** Every open-loop point, sweep and extra, by offered rate. */
        public List<PointResult> openPoints() {
            List<PointResult> all = new ArrayList<>();
            if (sweep != null) {
                all.addAll(sweep.points());
            }
            all.addAll(extra.values());
            all.sort((a, b) -> Double.compare(a.offered(), b.offered()));
            return all;
        }
    }

    /** Everything measured for one scenario. */
    public static final class ScenarioResult {
        public final Scenario scenario;
        public List<Ceiling.Point> ceiling = List.of();
        public Map<String, Double> codec = Map.of();
        public final Map<String, ConfigResult> configs = new LinkedHashMap<>();
        public String best;

        public ScenarioResult(Scenario scenario) {
            this.scenario = scenario;
        }
    }

    /** The passthrough configuration's name (and role). */
    public static final String PASSTHROUGH = "passthrough";
    /** The Kafka relay's name (Kafka alone, no Flink), and its role. */
    public static final String KAFKA_RELAY = "kafka-relay";
    public static final String RELAY_ROLE = "relay";
    /** The SQL configurations' names and role. */
    public static final String SQL_BATCHED = "sql-batched";
    public static final String SQL_BATCH1 = "sql-batch1";
    public static final String SQL_ROLE = "sql";

    private final BenchmarkSettings settings;
    private final Path repo;
    private final Map<String, String> userOptions;
    private final List<String> configNames;
    private final PrintStream out;
    private int runIds;
    private int topicIds;
    public PointResult kafkaEcho;

    /**
     * The warm-up before a scenario's first measurement, not measured: the job with its default
     * options, first (first scenario only) open loop at {@code openRate} for {@code openSeconds},
     * then closed-loop phases that alternate one request outstanding ({@code lowOutstanding}) and
     * {@code outstanding} requests (saturated batches), the two load shapes a sweep measures, until
     * the JIT compilers were busy for at most {@link PointResult#COMPILING_CORES} cores over both
     * phases of a round ({@code settled}) or {@link #MAX_SETTLE_PHASES} phases ran;
     * {@code lastCompilerCores} is the busier phase of the last round.
     */
    public record WarmUp(String scenario, double openRate, double openSeconds, int lowOutstanding, int outstanding,
            int phases, double seconds, double lastCompilerCores, boolean settled) {}

    /** The most closed-loop phases a warm-up runs while the JIT is still compiling (ten rounds). */
    static final int MAX_SETTLE_PHASES = 20;

    /** The requests outstanding in a warm-up's low-load phases: one at a time, as the unloaded points. */
    static final int LOW_OUTSTANDING = 1;

    /** One closed-loop phase of a warm-up: about four seconds of load, then the drain. */
    private static final RunSpec SETTLE_PHASE = new RunSpec(Duration.ofSeconds(1), Duration.ofSeconds(1),
            RunSpec.STABLE_WINDOWS, RunSpec.STABLE_WINDOWS, Duration.ofSeconds(5), 1.0);

    /** Every scenario's warm-up, in run order; empty where the mode has none. */
    public final List<WarmUp> warmUps = new ArrayList<>();

    private boolean reverseOrder;

    public BenchmarkRunner(BenchmarkSettings settings, Path repo, Map<String, String> userOptions,
            List<String> configNames, PrintStream out) {
        this.settings = settings;
        this.repo = repo;
        this.userOptions = userOptions;
        this.configNames = configNames;
        this.out = out;
    }

    /**
     * Runs the configurations in reverse order (the report keeps the usual one): in side-by-side
     * runs the first configuration after the JVM warm-up measured worse whichever it was, so a
     * comparison of two configurations needs runs in both orders.
     */
    public void reverseOrder(boolean reverse) {
        this.reverseOrder = reverse;
    }

    /** The order {@code configs} run in: as listed, or reversed. */
    static List<SutConfig> runOrder(List<SutConfig> configs, boolean reversed) {
        List<SutConfig> order = new ArrayList<>(configs);
        if (reversed) {
            java.util.Collections.reverse(order);
        }
        return order;
    }

    /** The configurations to compare, in the order they are reported (and run, unless reversed). */
    public List<SutConfig> configs() {
        List<SutConfig> all = new ArrayList<>();
        all.add(new SutConfig("flink-map", "per-record", Deployments.Kind.FLINK_MAP, Map.of(),
                "MapFunction calling ONNX Runtime once per record"));
        all.add(new SutConfig("flink-async", "per-record", Deployments.Kind.FLINK_ASYNC, Map.of(),
                "Async I/O (unordered, capacity 100) calling ONNX Runtime once per record on as many threads "
                        + "as the job runs batches (inference.execution-threads, else the CPU's count: cores per slot less one)"));
        all.add(new SutConfig("job-batching-off", "batching-off", Deployments.Kind.JOB,
                Map.of("inference.batching.max-batch-size", "1"), "InferenceJob, -Dinference.batching.max-batch-size=1"));
        all.add(new SutConfig("job-batching-default", "batching", Deployments.Kind.JOB, Map.of(),
                "InferenceJob with the default batching options"));
        int i = 1;
        for (Map<String, String> candidate : settings.tuningCandidates()) {
            StringBuilder d = new StringBuilder("InferenceJob");
            candidate.forEach((k, v) -> d.append(" -D").append(k).append('=').append(v));
            all.add(new SutConfig("job-tuned-" + i++, "batching", Deployments.Kind.JOB, candidate, d.toString()));
        }
        // ML_PREDICT with the onnx model provider, the job's batching options; and the same with one row per call
        Configuration base = Configuration.fromMap(userOptions);
        String concurrent = String.valueOf(SqlPredict.concurrency(base));
        String sql = "Kafka table (key = id; tensors as BYTES of the binary format's raw bytes: value format raw for one "
                + "tensor, json (base64) for several) -> ML_PREDICT with the onnx model provider, async, "
                + "max-concurrent-operations " + concurrent + " (max-batch-size x (max-enqueued-batches + "
                + "execution-threads) of the job's options), unordered -> Kafka table; ";
        all.add(new SutConfig(SQL_BATCHED, SQL_ROLE, Deployments.Kind.SQL, Map.of(SqlPredict.MAX_CONCURRENT, concurrent,
                GpuInferenceOptions.MAX_BATCH_SIZE.key(), String.valueOf(base.get(GpuInferenceOptions.MAX_BATCH_SIZE))),
                sql + "the model's max-batch-size, max-queue-delay, device and inference.* options are the job's"));
        all.add(new SutConfig(SQL_BATCH1, SQL_ROLE, Deployments.Kind.SQL, Map.of(SqlPredict.MAX_CONCURRENT, concurrent,
                GpuInferenceOptions.MAX_BATCH_SIZE.key(), "1"), sql + "'max-batch-size' = '1' (one row per inference "
                + "call), otherwise as " + SQL_BATCHED));
        // Last, when the JVM is warmest: a floor measured cold would understate it and flatter the roofline target.
        all.add(new SutConfig(KAFKA_RELAY, RELAY_ROLE, Deployments.Kind.RELAY, Map.of(),
                "no Flink: one thread with a plain Kafka consumer and producer (the job's client properties) "
                        + "answering each request as the passthrough does (the floor Kafka sets)"));
        all.add(new SutConfig(PASSTHROUGH, "passthrough", Deployments.Kind.PASSTHROUGH, Map.of(),
                "InferenceJob's source, parser and sinks with no inference: each request answered with zeros of the "
                        + "model's declared outputs (the floor Flink and Kafka set)"));
        if (configNames.isEmpty()) {
            return all;
        }
        List<SutConfig> chosen = new ArrayList<>();
        for (SutConfig c : all) {
            if (configNames.contains(c.name())) {
                chosen.add(c);
            }
        }
        return chosen;
    }

    public BenchmarkSettings settings() {
        return settings;
    }

    public boolean runsCeiling() {
        return configNames.isEmpty() || configNames.contains("ceiling");
    }

    public List<ScenarioResult> run(List<Scenario> scenarios) throws Exception {
        List<ScenarioResult> results = new ArrayList<>();
        // Every scenario is prepared (model exported, samples made) before the first point: a missing
        // prerequisite, such as python3-torch for the DLRM export, fails the run at once rather than
        // after the scenarios before it, and the Kafka floor can use any scenario's samples.
        for (Scenario scenario : scenarios) {
            out.println("Preparing scenario " + scenario.name() + " ...");
            try {
                scenario.prepare(repo);
            } catch (Exception e) {
                throw new IllegalStateException("scenario " + scenario.name() + " cannot run here: " + e.getMessage(), e);
            }
        }
        out.println("Starting the embedded Kafka broker ...");
        // The broker's threads (and the threads they start) run in a thread group of their own, so
        // that their CPU time is told apart from the job's and the load generator's.
        try (EmbeddedKafka kafka = ThreadCpu.inGroup(ThreadCpu.BROKER_GROUP, EmbeddedKafka::start)) {
            for (int i = 0; i < scenarios.size(); i++) {
                results.add(runScenario(kafka, scenarios.get(i), i == 0));
            }
            List<String> left = kafka.topicNames().stream().filter(t -> t.startsWith("bench-")).sorted().toList();
            if (!left.isEmpty()) {
                throw new IllegalStateException("the run left topics on the broker (its disk grows with them): " + left);
            }
        }
        return results;
    }

    /**
     * Runs the job with its default options under load and discards the result, so that the
     * configuration measured first does not pay for compiling the code every configuration shares:
     * in the first scenario open loop for {@link BenchmarkSettings#jvmWarmup()}, then, in every
     * scenario, rounds of two closed-loop phases, one request outstanding and then twice the largest
     * batch, until the JIT compilers settle over a whole round. A fixed warm-up alone left the
     * compilers busy for most of a core through the first configuration's first minute, and that
     * configuration measured worse whichever it was; phases of saturated batches alone left the
     * first configuration's unloaded and low-rate points compiling code for the other load shape.
     */
    private void warmUp(EmbeddedKafka kafka, Scenario scenario, boolean first) throws Exception {
        double rate = 2 * scenario.startRate(); // under what a cold JVM serves: a backlog would only delay the floor
        Duration open = first ? settings.jvmWarmup() : Duration.ZERO;
        int outstanding = 2 * Configuration.fromMap(userOptions).get(GpuInferenceOptions.MAX_BATCH_SIZE);
        out.printf("JVM warm-up (not measured): the job with its default options, %s, %s%d outstanding until the JIT "
                + "compilers settle ...%n", scenario.name(),
                open.isZero() ? "" : String.format("%.0f requests/s for %d s, then ", rate, open.toSeconds()), outstanding);
        SutConfig warm = new SutConfig("jvm-warm-up", "warm-up", Deployments.Kind.JOB, Map.of(), "not measured");
        withJob(kafka, scenario, scenario.modelFile(repo), warm, (target, meter) -> {
            long start = System.nanoTime();
            if (!open.isZero()) {
                RunSpec spec = new RunSpec(open, Duration.ofSeconds(1), RunSpec.STABLE_WINDOWS,
                        RunSpec.STABLE_WINDOWS, Duration.ofSeconds(5), 1.0);
                PointResult p = LoadDriver.openLoop(target, runIds++, rate, spec, scenario.sloMs(), 1L, null);
                out.println("    warm-up: " + p.line());
            }
            int phases = 0;
            double previous = Double.NaN;
            double compiler = Double.NaN;
            boolean settled = false;
            while (phases < MAX_SETTLE_PHASES && !settled) {
                int n = settleOutstanding(phases, outstanding);
                PointResult p = LoadDriver.closedLoop(target, runIds++, n, SETTLE_PHASE, scenario.sloMs(), null);
                phases++;
                previous = compiler;
                compiler = p.compilerCores();
                settled = roundSettled(phases, previous, compiler);
                out.printf("    warm-up phase %d (%d outstanding): %s; JIT compilers %.2f cores%n", phases, n, p.line(),
                        compiler);
            }
            warmUps.add(new WarmUp(scenario.name(), open.isZero() ? 0 : rate, open.toSeconds(), LOW_OUTSTANDING,
                    outstanding, phases, (System.nanoTime() - start) / 1e9, roundCores(previous, compiler),
                    settled));
        });
    }

    /** Whether a warm-up phase whose JIT compilers were busy for {@code compilerCores} was quiet. */
    static boolean settled(double compilerCores) {
        // a JVM that does not report compilation time cannot tell: counted as quiet
        return Double.isNaN(compilerCores) || compilerCores <= PointResult.COMPILING_CORES;
    }

    /** The requests outstanding in warm-up phase {@code phase} (from 0): low load, then saturated, in turn. */
    static int settleOutstanding(int phase, int saturated) {
        return phase % 2 == 0 ? LOW_OUTSTANDING : saturated;
    }

    /**
     * Whether the warm-up ends after {@code phases} phases, the last two of which kept the compilers
     * busy for {@code previous} and {@code last} cores: only after a whole round (a low-load phase and
     * a saturated one), and only if both were quiet.
     */
    static boolean roundSettled(int phases, double previous, double last) {
        return phases >= 2 && phases % 2 == 0 && settled(previous) && settled(last);
    }

    /** The busier of a round's two phases (NaN where neither reports). */
    static double roundCores(double previous, double last) {
        if (Double.isNaN(previous)) {
            return last;
        }
        return Double.isNaN(last) ? previous : Math.max(previous, last);
    }

    private PointResult kafkaFloor(EmbeddedKafka kafka, Scenario scenario) throws Exception {
        String topic = "bench-echo-" + topicIds++;
        kafka.createTopics(1, topic);
        try (KafkaTarget echo = new KafkaTarget(kafka.bootstrapServers(), topic, topic, scenario, new BinaryCodec(),
                true)) {
            return LoadDriver.closedLoop(echo, runIds++, 1, settings.unloaded(), 1000, null);
        } finally {
            kafka.deleteTopics(topic);
        }
    }

    private ScenarioResult runScenario(EmbeddedKafka kafka, Scenario scenario, boolean first) throws Exception {
        out.printf("%n=== scenario %s: %s%n    SLO p99 <= %.0f ms%n", scenario.name(), scenario.description(),
                scenario.sloMs());
        if (!settings.jvmWarmup().isZero()) {
            warmUp(kafka, scenario, first);
        }
        if (first) {
            kafkaEcho = kafkaFloor(kafka, scenario);
            out.println("Kafka floor (produce -> consume, 1 outstanding): " + kafkaEcho.line());
        }
        ScenarioResult result = new ScenarioResult(scenario);
        Path modelFile = scenario.modelFile(repo);
        if (runsCeiling()) {
            // the device every job of this run gets (-Dinference.device.* options): a simulated GPU's
            // speed model then bounds the ceiling too
            io.flinkgpu.inference.device.Device device = io.flinkgpu.inference.operator.InferenceSettings
                    .fromConfiguration(org.apache.flink.configuration.Configuration.fromMap(userOptions))
                    .createDevice(0);
            out.println("--- ceiling: raw ONNX Runtime, 1 intra-op thread, tight loop, on " + device);
            result.ceiling = Ceiling.measure(scenario, modelFile, settings.ceilingBatches(), settings.ceilingWarmup(),
                    settings.ceilingDuration(), true, device);
            for (Ceiling.Point p : result.ceiling) {
                out.printf("    %-9s batch %3d: %10.0f samples/s  (batch p50 %.3f ms, p99 %.3f ms)%s%n", p.path(),
                        p.batch(), p.samplesPerSecond(), p.p50Ms(), p.p99Ms(), p.contended()
                                ? String.format(" CONTENDED (other processes used %.1f cores)", p.otherCores()) : "");
            }
            result.codec = Ceiling.codecCosts(scenario, settings.ceilingDuration());
            out.println("    codec cost per request (us): " + result.codec);
        }
        List<SutConfig> configs = configs();
        for (SutConfig config : configs) {
            result.configs.put(config.name(), new ConfigResult(config)); // the report keeps the usual order
        }
        for (SutConfig config : runOrder(configs, reverseOrder)) {
            ConfigResult r = result.configs.get(config.name());
            try {
                runConfig(kafka, scenario, modelFile, r, result);
            } catch (Exception e) {
                r.failure = e.toString();
                out.println("    FAILED: " + e);
                e.printStackTrace(out);
            }
        }
        // Points that need another configuration's result, for configurations that ran before it
        // (all of them with --reverse-order): each such configuration is started once more
        for (SutConfig config : runOrder(configs, reverseOrder)) {
            ConfigResult r = result.configs.get(config.name());
            Map<String, MissingPoint> missing = missingPoints(r, result, settings, scenario.requestClasses());
            if (r.failure != null || missing.isEmpty()) {
                continue;
            }
            try {
                out.printf("--- %s / %s again, for %s%n", scenario.name(), config.name(),
                        String.join(", ", missing.keySet()));
                withJob(kafka, scenario, modelFile, config, (target, meter) -> measureMissing(target, scenario, r,
                        result));
            } catch (Exception e) {
                out.println("    FAILED: " + e);
                e.printStackTrace(out);
            }
        }
        String best = null;
        for (ConfigResult r : result.configs.values()) {
            if (r.config.role().equals("batching") && (best == null
                    || r.goodput() > result.configs.get(best).goodput())) {
                best = r.config.name();
            }
        }
        result.best = best;
        if (best != null) {
            out.printf("    best batching setting: %s (goodput %.0f/s)%n", best, result.configs.get(best).goodput());
        }
        return result;
    }

    private void runConfig(EmbeddedKafka kafka, Scenario scenario, Path modelFile, ConfigResult r,
            ScenarioResult scenarioResult) throws Exception {
        SutConfig config = r.config;
        out.printf("--- %s / %s: %s%n", scenario.name(), config.name(), config.description());
        withJob(kafka, scenario, modelFile, config, (target, meter) -> {
            r.unloaded = LoadDriver.closedLoop(target, runIds++, 1, settings.unloaded(), scenario.sloMs(), null);
            out.println("    unloaded (closed loop): " + r.unloaded.line());
            RateSweep.PointRunner runner = rate -> point(target, meter, scenario, config, rate);
            r.sweep = RateSweep.run(settings.plan(scenario.startRate()), runner);
            out.printf("    goodput %.0f/s%n", r.goodput());
            if (r.goodput() > 0 && config.role().equals("batching")) {
                double low = 0.1 * r.goodput();
                r.extra.put("at_10pct_of_capacity", point(target, null, scenario, config, low,
                        lowLoadSpec(settings, scenario.requestClasses(), low)));
                r.extra.put("at_80pct_of_capacity", point(target, null, scenario, config, 0.8 * r.goodput()));
            }
            measureMissing(target, scenario, r, scenarioResult);
        });
    }

    /** Measures on {@code target} (running {@code r}'s configuration) the points {@link #missingPoints} names. */
    private void measureMissing(Target target, Scenario scenario, ConfigResult r, ScenarioResult scenarioResult)
            throws Exception {
        for (Map.Entry<String, MissingPoint> e : missingPoints(r, scenarioResult, settings,
                scenario.requestClasses()).entrySet()) {
            r.extra.put(e.getKey(), point(target, null, scenario, r.config, e.getValue().rate(), e.getValue().spec()));
        }
    }

    /** A point still to measure: its offered rate and run spec. */
    record MissingPoint(double rate, RunSpec spec) {}

    static final String AT_PER_RECORD = "at_per_record_goodput";
    static final String AT_LOW_LOAD_OF = "at_low_load_of_";

    /**
     * The points of {@code r} that depend on other configurations' results and are not measured
     * yet, by name, with the rate and run spec of each: a batching configuration's point at the best
     * per-record baseline's goodput, and the passthrough's point at each batching configuration's
     * low-load rate, as long as that point (the low-load target's floor; NLP's rates lie below the
     * passthrough's sweep) unless a point of the passthrough's already has that rate and length (a
     * sweep point, or the point of another configuration with the same low-load rate). A
     * configuration that runs before the ones it depends on (every one with {@code --reverse-order})
     * has them missing after its own run. {@code classes}: the scenario's request classes, which set
     * how long a low-load point is.
     */
    static Map<String, MissingPoint> missingPoints(ConfigResult r, ScenarioResult scenarioResult,
            BenchmarkSettings settings, RequestClasses classes) {
        Map<String, MissingPoint> missing = new LinkedHashMap<>();
        double perRecord = perRecordGoodput(scenarioResult);
        if (r.goodput() > 0 && r.config.role().equals("batching") && perRecord > 0
                && !r.extra.containsKey(AT_PER_RECORD)) {
            missing.put(AT_PER_RECORD, new MissingPoint(perRecord, settings.point()));
        }
        if (floor(r.config.role()) && r.sweep != null) {
            List<Double> missingRates = new ArrayList<>();
            for (ConfigResult other : scenarioResult.configs.values()) {
                PointResult low = other.extra.get("at_10pct_of_capacity");
                String name = AT_LOW_LOAD_OF + other.config.name();
                if (low == null || r.extra.containsKey(name)) {
                    continue;
                }
                // the spec of a low-load point depends on its rate only, so the passthrough's point for
                // another configuration at the same rate (measured, or about to be) serves this one too
                RunSpec spec = lowLoadSpec(settings, classes, low.offered());
                boolean sameRate = offeredAt(r.extra.values(), low.offered()) || missingRates.contains(low.offered());
                if (!sameRate && !sweptAt(r.sweep.points(), low.offered(), spec, settings.point())) {
                    missing.put(name, new MissingPoint(low.offered(), spec));
                    missingRates.add(low.offered());
                }
            }
        }
        return missing;
    }

    /** Whether configurations of {@code role} are floors (no inference), measured at each batching configuration's low-load rate. */
    static boolean floor(String role) {
        return role.equals("passthrough") || role.equals(RELAY_ROLE);
    }

    /** The best per-record baseline's goodput in {@code s} (0 where none ran or none passed). */
    static double perRecordGoodput(ScenarioResult s) {
        double baseline = 0;
        for (ConfigResult other : s.configs.values()) {
            if (other.config.role().equals("per-record")) {
                baseline = Math.max(baseline, other.goodput());
            }
        }
        return baseline;
    }

    /**
     * Whether {@code points} hold an open-loop point offered at {@code rate} (within 0.1%) measured
     * with {@code sweepSpec}, which is {@code spec}: a point at that rate and of that length would
     * be measured twice (the low-load target's floor takes the sweep's point on a tie).
     */
    static boolean sweptAt(List<PointResult> points, double rate, RunSpec spec, RunSpec sweepSpec) {
        return spec.equals(sweepSpec) && offeredAt(points, rate);
    }

    /** Whether {@code points} hold an open-loop point offered at {@code rate} (within 0.1%). */
    static boolean offeredAt(java.util.Collection<PointResult> points, double rate) {
        for (PointResult p : points) {
            if ("open".equals(p.mode()) && Math.abs(p.offered() / rate - 1) < 1e-3) {
                return true;
            }
        }
        return false;
    }

    /**
     * The run spec of the 10%-of-capacity point at {@code rate}: the mode's point, with windows
     * long enough to hold {@link BenchmarkSettings#lowLoadClassRequests()} of every class, and ~10%
     * more for the spread of a Poisson count.
     */
    static RunSpec lowLoadSpec(BenchmarkSettings settings, RequestClasses classes, double rate) {
        long requests = classes.requestsFor(settings.lowLoadClassRequests(), 1_000_000);
        return settings.point().covering(rate, (long) Math.ceil(requests * 1.1));
    }

    /** What runs against a started configuration: its target, and for SQL the meter of rows per batch (else null). */
    @FunctionalInterface
    private interface JobBody {
        void run(Target target, RowsPerBatch meter) throws Exception;
    }

    /**
     * Starts {@code config} on topics of its own (a Flink job, or the Kafka relay), waits until it
     * answers, runs {@code body}, stops it and deletes its topics.
     */
    private void withJob(EmbeddedKafka kafka, Scenario scenario, Path modelFile, SutConfig config, JobBody body)
            throws Exception {
        int n = topicIds++;
        JobTopics topics = new JobTopics("bench-requests-" + n, "bench-responses-" + n, "bench-dead-letter-" + n,
                "bench-" + n);
        kafka.createTopics(1, topics.requests(), topics.responses(), topics.deadLetter());
        Configuration c = topics.jobConfiguration(kafka.bootstrapServers(), "earliest", repo);
        c.set(InferenceJobOptions.RESPONSES_FORMAT, WireFormat.BINARY);
        c.set(RestOptions.BIND_PORT, "0");
        c = Deployments.with(c, userOptions);
        c = Deployments.with(c, config.options());
        boolean sql = config.kind() == Deployments.Kind.SQL;
        // the SQL tables' rows carry the binary format's tensor bytes (key = id); the job's records are the binary wire format
        RecordCodec codec = sql ? SqlPredict.codec(c, scenario.model()) : RecordCodec.of(new BinaryCodec());
        AutoCloseable running;
        if (config.kind() == Deployments.Kind.RELAY) {
            running = KafkaRelay.start(c);
        } else {
            JobClient job = Deployments.start(config.kind(), c, scenario.model(), modelFile.toString(),
                    "bench " + scenario.name() + " " + config.name());
            running = () -> cancelAndAwait(job);
        }
        RowsPerBatch meter = null;
        try (KafkaTarget kafkaTarget = new KafkaTarget(kafka.bootstrapServers(), topics.requests(),
                topics.responses(), scenario, codec, false)) {
            if (!kafkaTarget.awaitReady(runIds++, Duration.ofSeconds(90))) {
                throw new IllegalStateException("the job did not answer within 90 s");
            }
            Target target = kafkaTarget;
            if (sql) {
                meter = RowsPerBatch.attach(kafkaTarget, SqlPredict.runtimeSettings(c, scenario.model()));
                if (!meter.attached()) {
                    out.println("    the query's shared runtime was not found: no mean batch size for its points");
                }
                target = meter;
            }
            body.run(target, meter);
        } finally {
            try {
                running.close();
                if (meter != null) {
                    meter.close();
                }
            } finally {
                // nothing reads a finished configuration's topics again; a full run writes tens of GB
                kafka.deleteTopics(topics.requests(), topics.responses(), topics.deadLetter());
            }
        }
    }

    /**
     * Cancels {@code job} and waits until it has stopped: a Kafka writer still closing after the
     * cancel call returned would otherwise meet its topic deleted under it.
     */
    private static void cancelAndAwait(JobClient job) throws InterruptedException {
        try {
            job.cancel().get(60, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // the job may have failed already; its status says whether it stopped
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            try {
                if (job.getJobStatus().get(10, TimeUnit.SECONDS).isGloballyTerminalState()) {
                    return;
                }
            } catch (ExecutionException | TimeoutException | IllegalStateException e) {
                return; // the job's MiniCluster has shut down, or no longer knows the job: it has stopped
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("job " + job.getJobID() + " did not stop within 60 s of its cancel");
    }

    /** Points measured so far per scenario, configuration and rate: a retry draws another schedule. */
    private final Map<String, Integer> attempts = new HashMap<>();

    /**
     * The arrival schedule's seed of a point: the same for the same scenario, configuration, rate
     * and attempt in every run, different for a retry at the same rate (the sweep retries a failed
     * rate once, and the same Poisson sample again would repeat a short sample's verdict instead of
     * measuring again).
     */
    static long seed(String scenario, String config, double rate, int attempt) {
        return (scenario + config).hashCode() * 31L + Math.round(rate) + 1_000_003L * attempt;
    }

    /** One open-loop point; {@code batches}, if not null, gives its mean batch size (rows per batch). */
    private PointResult point(Target target, RowsPerBatch batches, Scenario scenario, SutConfig config, double rate)
            throws Exception {
        return point(target, batches, scenario, config, rate, settings.point());
    }

    private PointResult point(Target target, RowsPerBatch batches, Scenario scenario, SutConfig config, double rate,
            RunSpec spec) throws Exception {
        int run = runIds++;
        out.printf("    %s: rate %.0f/s ...%n", config.name(), rate);
        long[] mark = batches == null ? null : batches.mark();
        int attempt = attempts.merge(scenario.name() + "/" + config.name() + "@" + rate, 1, Integer::sum) - 1;
        PointResult p = LoadDriver.openLoop(target, run, rate, spec, scenario.sloMs(),
                seed(scenario.name(), config.name(), rate, attempt), null);
        if (batches != null) {
            p = p.withMeanBatch(batches.since(mark));
        }
        out.println("      " + p.line());
        return p;
    }
}
