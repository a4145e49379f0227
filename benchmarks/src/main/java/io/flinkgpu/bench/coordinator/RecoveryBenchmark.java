package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.SummaryTargets;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.evaluate.ModelDemand;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.MoveRecord;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.inference.operator.ModelPartitioner;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The scheduler coordinator's recovery from a load step, through the real path (in-process Kafka
 * broker, the Kafka job on a local Flink cluster with two simulated GPUs at parallelism 2, the
 * coordinator as a thread: REST collector, DRF planner, Kafka control topic, RocksDB state).
 *
 * <p>Two models (the shipped Fashion-MNIST CNN and a copy under another name, in a scratch
 * repository under {@code benchmarks/target/}) get open-loop Poisson traffic; each hashes to its own
 * subtask and so to its own device. Phase 1: steady load that one device carries within the SLO.
 * At t0 the first model's rate doubles, more than its device can carry. Phase 2 runs on at that
 * rate. Side by side, with the same traffic:
 *
 * <ul>
 *   <li><b>coordinator</b>: the job reads {@code inference.kafka.control-topic} and the coordinator
 *       runs a cycle every {@code --cycle-ms}, its collector built as {@code CoordinatorMain} builds it;
 *   <li><b>coordinator-no-settle</b>: the same with {@code coordinator.flink.metrics-settle} = 0, its
 *       collector before that option (reads race Flink's asynchronous REST metric fetch);
 *   <li><b>static</b>: the same job (same topology, control topic configured) with nothing
 *       published on it, so routing stays the default model hash: every model on one device.
 * </ul>
 *
 * Measured from the load generator: end-to-end latency (intended send time to response consumed)
 * per 1-second window of intended send time, p99 per window; the time from t0 to the first
 * published plan that adds an instance of (or moves) the stepped model; the time until the p99 is
 * back within the SLO for {@code --recovery-windows} consecutive windows; the coordinator's
 * REPLICATE/MOVE decisions; requests sent but never answered. Writes {@code recovery.json},
 * {@code recovery.md} and {@code recovery-p99.png} to {@code --out} and records the targets of
 * scenario "coordinator" in {@code --summary}. Numbers only come from the run.
 */
@Command(name = "recovery-benchmark", mixinStandardHelpOptions = true,
        description = "Coordinator vs static placement after a load step on one model")
public final class RecoveryBenchmark implements Callable<Integer> {
    static final String SOURCE_MODEL = "fashion-mnist-cnn";
    static final String STEPPED = "fashion-mnist-cnn";
    /** A copy of the same network under a name that hashes to the other subtask (see {@link ModelPartitioner}). */
    static final String STEADY = "fashion-mnist-cnn-b";
    static final long[] SHAPE = {1, 1, 28, 28};
    static final int PARALLELISM = 2;
    /** The coordinator as shipped. */
    static final String COORDINATOR = "coordinator";
    /** The coordinator with {@code coordinator.flink.metrics-settle} = 0: its collector before that option existed. */
    static final String NO_SETTLE = "coordinator-no-settle";
    static final String STATIC = "static";

    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/coordinator");

    @Option(names = "--summary", description = "Also record the targets in this summary.json (default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing recovery.json in --summary")
    boolean summaryOnly;

    @Option(names = "--configs", split = ",", description = "Configurations to run, in order (default: ${DEFAULT-VALUE})")
    List<String> configs = new ArrayList<>(List.of(COORDINATOR, NO_SETTLE, STATIC));

    @Option(names = "--before-seconds", description = "Phase 1 (steady load) in seconds (default: ${DEFAULT-VALUE})")
    int beforeSeconds = 20;

    @Option(names = "--after-seconds", description = "Phase 2 (after the step) in seconds (default: ${DEFAULT-VALUE})")
    int afterSeconds = 60;

    @Option(names = "--drain-seconds", description = "Longest wait for outstanding responses after phase 2 (default: ${DEFAULT-VALUE})")
    int drainSeconds = 60;

    @Option(names = "--rate", description = "Phase-1 rate of the stepped model, requests/s (default: ${DEFAULT-VALUE})")
    double rate = 130;

    @Option(names = "--step", description = "Rate factor of the stepped model at t0 (default: ${DEFAULT-VALUE})")
    double step = 2.0;

    @Option(names = "--steady-rate", description = "Rate of the second model, requests/s; 0: one model only (default: ${DEFAULT-VALUE})")
    double steadyRate = 30;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample (default: ${DEFAULT-VALUE})")
    String speed = "1+4*b";

    @Option(names = "--slo-ms", description = "End-to-end p99 objective per window (default: ${DEFAULT-VALUE})")
    double sloMs = 150;

    @Option(names = "--target-utilization", description = "coordinator.plan.target-utilization (coordinator default "
            + "0.7): the steady phase, whose estimated load is about 0.6-0.65 device-s/s here, must sit clearly below it, "
            + "or the noise of one cycle's rate sample alone adds and removes replicas (default: ${DEFAULT-VALUE})")
    double targetUtilization = 0.8;

    @Option(names = "--cycle-ms", description = "Time between coordinator cycles (default: ${DEFAULT-VALUE})")
    long cycleMs = 1500;

    @Option(names = "--metrics-fetch-ms", description = "Flink REST metric fetcher interval, metrics.fetcher.update-interval (default: ${DEFAULT-VALUE})")
    long fetchMs = 500;

    @Option(names = "--metrics-settle-ms", description = "coordinator.flink.metrics-settle of the coordinator "
            + "configuration; below --metrics-fetch-ms (default: the coordinator's default, ${DEFAULT-VALUE})")
    long settleMs = CoordinatorOptions.METRICS_SETTLE.defaultValue().toMillis();

    @Option(names = "--recovery-windows", description = "Consecutive 1-s windows within the SLO that count as recovered (default: ${DEFAULT-VALUE})")
    int recoveryWindows = 5;

    @Option(names = "--plot", negatable = true, description = "Write recovery-p99.png (default: ${DEFAULT-VALUE})")
    boolean plot = true;

    private final ObjectMapper json = new ObjectMapper();
    private FashionMnist images;
    private EmbeddedKafka kafka;
    private Path repository;

    public static void main(String[] args) {
        System.exit(new CommandLine(new RecoveryBenchmark()).execute(args));
    }

    // ------------------------------------------------------------------------------------------
    // one run

    /** One answered (or not) request: intended send time relative to t0, latency, model index. */
    record Sample(long intendedNanosFromT0, long latencyMicros, int model, boolean error) {}

    /** What one cycle of the control loop saw and did. */
    record Cycle(double atSecondsFromT0, double collectMillis, boolean published, long epoch, String skipped, double steppedRate,
            double steppedLoad, String steppedTargets, double[] steppedRequestsIn, String reason) {}

    /** Everything one configuration measured. */
    static final class Run {
        final String name;
        final boolean coordinator;
        final List<Sample> samples = new ArrayList<>();
        final List<long[]> unanswered = new ArrayList<>(); // {intendedNanosFromT0, model}
        final List<Cycle> cycles = new ArrayList<>();
        final long[] sent = new long[2];
        long errors;
        long preStepEpoch;
        String preStepTargets = "";
        double decisionSeconds = Double.NaN;
        long decisionEpoch;
        String decisionReason;
        double routingFollowedSeconds = Double.NaN;
        List<Decision> decisionsAfterStep = List.of();
        List<Decision> decisionsBeforeStep = List.of();
        List<MoveRecord> movesAfterStep = List.of();
        int plansAfterStep;
        int plansBeforeStep;
        double loadAverageStart;
        double loadAverageEnd;

        Run(String name, boolean coordinator) {
            this.name = name;
            this.coordinator = coordinator;
        }
    }

    @Override
    public Integer call() throws Exception {
        Files.createDirectories(out);
        if (summaryOnly) {
            recordTargets((ObjectNode) json.readTree(out.resolve("recovery.json").toFile()));
            return 0;
        }
        Path root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        repository = writeRepository(root);
        ObjectNode result = json.createObjectNode();
        result.put("started", Instant.now().toString());
        result.put("command", command());
        result.put("machine", machine());
        List<Run> runs = new ArrayList<>();
        try (EmbeddedKafka broker = EmbeddedKafka.start()) {
            kafka = broker;
            for (String c : configs) {
                if (!List.of(COORDINATOR, NO_SETTLE, STATIC).contains(c)) {
                    throw new CommandLine.ParameterException(new CommandLine(this), "unknown configuration " + c
                            + "; use " + COORDINATOR + ", " + NO_SETTLE + " and/or " + STATIC);
                }
                System.out.println("=== " + c + " ===");
                runs.add(run(c, !c.equals(STATIC), c.equals(NO_SETTLE) ? 0 : settleMs));
            }
        }
        result.put("finished", Instant.now().toString());
        report(result, runs);
        return 0;
    }

    /** A scratch repository with the shipped CNN and, unless one model only, a copy under another name. */
    private Path writeRepository(Path root) throws IOException {
        Path repo = root.resolve("benchmarks/target/recovery-repo");
        deleteRecursively(repo);
        Path source = root.resolve("models").resolve(SOURCE_MODEL);
        for (String name : steadyRate > 0 ? List.of(STEPPED, STEADY) : List.of(STEPPED)) {
            Path dir = repo.resolve(name);
            Files.createDirectories(dir.resolve("1"));
            try (Stream<Path> files = Files.list(source.resolve("1"))) {
                for (Path f : files.toList()) {
                    Files.copy(f, dir.resolve("1").resolve(f.getFileName()));
                }
            }
            ObjectNode config = (ObjectNode) json.readTree(source.resolve("config.json").toFile());
            config.put("name", name);
            Files.writeString(dir.resolve("config.json"), config.toPrettyString());
        }
        return repo;
    }

    private Run run(String name, boolean withCoordinator, long settle) throws Exception {
        Run run = new Run(name, withCoordinator);
        run.loadAverageStart = loadAverage();
        String prefix = "recovery-" + name + "-" + Long.toString(System.currentTimeMillis(), 36);
        String requests = prefix + "-requests";
        String responses = prefix + "-responses";
        String control = prefix + "-control";
        kafka.createTopics(PARALLELISM, requests);
        kafka.createTopics(1, responses, prefix + "-dead-letter", control);

        int restPort = freePort();
        Configuration conf = new Configuration();
        conf.set(InferenceJobOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
        conf.set(InferenceJobOptions.REQUESTS_TOPIC, requests);
        conf.set(InferenceJobOptions.RESPONSES_TOPIC, responses);
        conf.set(InferenceJobOptions.DEAD_LETTER_TOPIC, prefix + "-dead-letter");
        conf.set(InferenceJobOptions.CONTROL_TOPIC, control);
        conf.set(InferenceJobOptions.GROUP_ID, prefix);
        conf.set(InferenceJobOptions.STARTING_OFFSETS, "latest");
        conf.set(InferenceJobOptions.REQUESTS_FORMAT, WireFormat.BINARY);
        conf.set(InferenceJobOptions.PARALLELISM, PARALLELISM);
        conf.set(GpuInferenceOptions.MODEL_REPOSITORY, repository.toString());
        conf.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        conf.set(GpuInferenceOptions.SIMULATED_DEVICES, PARALLELISM);
        conf.set(GpuInferenceOptions.SIMULATED_SPEED, speed);
        conf.set(GpuInferenceOptions.WARMUP_WORKERS, 1);
        // the REST API must serve fresh metrics, or the coordinator decides on numbers up to 10 s old
        conf.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(fetchMs));
        conf.set(RestOptions.ADDRESS, "localhost");
        conf.set(RestOptions.BIND_ADDRESS, "localhost");
        conf.set(RestOptions.BIND_PORT, String.valueOf(restPort));
        conf.set(RestOptions.PORT, restPort);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(conf);
        env.setParallelism(PARALLELISM);
        InferenceJob.build(env, conf);
        JobClient job = env.executeAsync("recovery-" + name);
        String rest = "http://localhost:" + restPort;
        // as CoordinatorMain builds it, with coordinator.flink.metrics-settle
        MetricCollector collector = new MetricCollector(rest, job.getJobID().toString(), "GPU inference",
                Duration.ofSeconds(5), Clock.systemUTC(), Duration.ofMillis(settle));
        Path stateDir = FashionMnist.findRoot().resolve("benchmarks/target/recovery-state").resolve(prefix);
        Files.createDirectories(stateDir);
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(responses)) {
            warmUp(requests, consumer);
            if (withCoordinator) {
                Configuration c = new Configuration();
                c.set(CoordinatorOptions.REST_URL, rest);
                c.set(CoordinatorOptions.JOB_ID, job.getJobID().toString());
                c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
                c.set(CoordinatorOptions.CONTROL_TOPIC, control);
                c.set(CoordinatorOptions.INTERVAL, Duration.ofMillis(cycleMs));
                c.set(CoordinatorOptions.DEFAULT_SLO, Duration.ofMillis((long) sloMs));
                c.set(CoordinatorOptions.TARGET_UTILIZATION, targetUtilization);
                c.set(CoordinatorOptions.METRICS_SETTLE, Duration.ofMillis(settle));
                try (StateStore store = RocksDbStateStore.open(stateDir);
                        KafkaPlanRealizer realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), control,
                                Duration.ofSeconds(20))) {
                    Coordinator coordinator = new Coordinator(c, collector, realizer, store, new CoordinatorMetrics(),
                            Clock.systemUTC());
                    measure(run, requests, consumer, coordinator, collector);
                }
            } else {
                measure(run, requests, consumer, null, collector);
            }
        } finally {
            job.cancel().get(60, TimeUnit.SECONDS);
            deleteRecursively(stateDir);
        }
        run.loadAverageEnd = loadAverage();
        return run;
    }

    /** Sends requests of every model until each has 20 answers, so that measurement starts on loaded, warm models. */
    private void warmUp(String topic, KafkaConsumer<byte[], byte[]> consumer) throws Exception {
        List<String> models = models();
        int[] answered = new int[models.size()];
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
            for (int i = 0; System.nanoTime() < deadline; i++) {
                if (minOf(answered) >= 20) {
                    return;
                }
                int m = i % models.size();
                producer.send(new ProducerRecord<>(topic, request("warmup-" + i, models.get(m), i)));
                producer.flush();
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(50))) {
                    InferenceResponse response = WireFormat.AUTO.decodeResponse(r.value());
                    int at = models.indexOf(response.modelName());
                    if (at >= 0 && !response.isError()) {
                        answered[at]++;
                    }
                }
            }
        }
        throw new IllegalStateException("the job did not answer within 180 s of warm-up");
    }

    private static int minOf(int[] a) {
        int min = Integer.MAX_VALUE;
        for (int x : a) {
            min = Math.min(min, x);
        }
        return min;
    }

    private List<String> models() {
        return steadyRate > 0 ? List.of(STEPPED, STEADY) : List.of(STEPPED);
    }

    private void measure(Run run, String topic, KafkaConsumer<byte[], byte[]> consumer, Coordinator coordinator,
            MetricCollector collector) throws Exception {
        List<String> models = models();
        Map<String, long[]> pending = new ConcurrentHashMap<>();
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        long t0 = start + TimeUnit.SECONDS.toNanos(beforeSeconds);
        long end = t0 + TimeUnit.SECONDS.toNanos(afterSeconds);
        long t0WallMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(t0 - System.nanoTime());

        List<Thread> senders = new ArrayList<>();
        for (int m = 0; m < models.size(); m++) {
            int model = m;
            String name = models.get(m);
            double base = m == 0 ? rate : steadyRate;
            double factor = m == 0 ? step : 1;
            Thread sender = new Thread(() -> {
                Random random = new Random(42 + model); // same arrivals in every configuration
                try (KafkaProducer<byte[], byte[]> producer = producer()) {
                    long next = start;
                    for (int i = 0; next < end; i++) {
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            TimeUnit.NANOSECONDS.sleep(wait);
                        }
                        String id = (model == 0 ? "s-" : "b-") + i;
                        pending.put(id, new long[] {next - t0, model});
                        producer.send(new ProducerRecord<>(topic, request(id, name, i)));
                        synchronized (run) {
                            run.sent[model]++;
                        }
                        double r = next >= t0 ? base * factor : base;
                        next += (long) (-Math.log(1 - random.nextDouble()) / r * 1e9);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "sender-" + name);
            senders.add(sender);
        }

        ControlLoop loop = new ControlLoop(run, coordinator, collector, start, t0, end);
        Thread control = new Thread(loop, "control-loop");
        control.start();
        senders.forEach(Thread::start);

        long drainUntil = end + TimeUnit.SECONDS.toNanos(drainSeconds);
        while (System.nanoTime() < drainUntil) {
            for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(20))) {
                long now = System.nanoTime();
                InferenceResponse response;
                try {
                    response = WireFormat.AUTO.decodeResponse(r.value());
                } catch (Exception e) {
                    continue;
                }
                long[] at = pending.remove(response.id());
                if (at == null) {
                    continue; // warm-up, or a duplicate
                }
                long intendedAbs = t0 + at[0];
                run.samples.add(new Sample(at[0], (now - intendedAbs) / 1000, (int) at[1], response.isError()));
                if (response.isError()) {
                    run.errors++;
                }
            }
            if (System.nanoTime() > end && pending.isEmpty() && senders.stream().noneMatch(Thread::isAlive)) {
                break;
            }
        }
        for (Thread s : senders) {
            s.join();
        }
        loop.stop = true;
        control.join();
        pending.values().forEach(v -> run.unanswered.add(v.clone()));

        if (coordinator != null) {
            List<Decision> all = coordinator.store().recentDecisions(10_000);
            run.decisionsAfterStep = all.stream().filter(d -> d.atMillis() >= t0WallMillis).toList();
            run.decisionsBeforeStep = all.stream().filter(d -> d.atMillis() < t0WallMillis).toList();
            run.movesAfterStep = coordinator.store().moves().stream().filter(mv -> mv.atMillis() >= t0WallMillis)
                    .toList();
        }
        System.out.printf(Locale.ROOT, "%s: sent %s, answered %d (%d errors), unanswered %d, decision %.2f s%n",
                run.name, java.util.Arrays.toString(run.sent), run.samples.size(), run.errors, run.unanswered.size(),
                run.decisionSeconds);
    }

    /**
     * Every {@code --cycle-ms} from the start of phase 1 to the end of phase 2: a coordinator cycle
     * (coordinator), or only the same REST collection (static), to see where the stepped model is served.
     */
    private final class ControlLoop implements Runnable {
        final Run run;
        final Coordinator coordinator;
        final MetricSource collector;
        final long start;
        final long t0;
        final long end;
        volatile boolean stop;
        /** The stepped model's subtasks in the plan in force (before any plan: its hash subtask). */
        private Set<Integer> inForce = Set.of(ModelPartitioner.hash(STEPPED, PARALLELISM));
        private Set<Integer> decided;
        private double[] atDecision;

        ControlLoop(Run run, Coordinator coordinator, MetricSource collector, long start, long t0, long end) {
            this.run = run;
            this.coordinator = coordinator;
            this.collector = collector;
            this.start = start;
            this.t0 = t0;
            this.end = end;
        }

        private boolean sleepUntil(long nanos) {
            long wait = nanos - System.nanoTime();
            if (wait > 0) {
                try {
                    TimeUnit.NANOSECONDS.sleep(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return true;
        }

        @Override
        public void run() {
            long next = start;
            while (!stop && next < end) {
                if (!sleepUntil(next)) {
                    return;
                }
                next += TimeUnit.MILLISECONDS.toNanos(cycleMs);
                try {
                    cycle();
                } catch (Exception e) {
                    System.out.println("control loop: " + e);
                }
            }
        }

        private void cycle() throws Exception {
            boolean published = false;
            long epoch = 0;
            String skipped = null;
            double rate = Double.NaN;
            double load = Double.NaN;
            String targets = "";
            String reason = null;
            MetricSnapshot snapshot;
            long began = System.nanoTime();
            if (coordinator != null) {
                Coordinator.CycleResult r = coordinator.runOnce(false);
                long now = System.nanoTime();
                snapshot = coordinator.lastSnapshot();
                published = r.published();
                skipped = r.skipped();
                if (r.demand() != null && r.demand().models().get(STEPPED) != null) {
                    ModelDemand d = r.demand().models().get(STEPPED);
                    rate = d.ratePerSecond();
                    load = d.deviceSecondsPerSecond();
                }
                if (r.plan() != null) {
                    epoch = r.plan().epoch();
                    targets = targets(r.plan());
                    reason = published ? r.plan().reason() : null;
                }
                if (published) {
                    Set<Integer> subtasks = subtasks(r.plan());
                    if (now < t0) {
                        run.plansBeforeStep++;
                        run.preStepEpoch = epoch;
                        run.preStepTargets = targets;
                    } else {
                        run.plansAfterStep++;
                        // the first plan after t0 that puts the stepped model on a subtask the plan in force did not
                        // (a replica or a move); a plan that only removes a replica is no such decision
                        Set<Integer> added = new TreeSet<>(subtasks);
                        added.removeAll(inForce);
                        if (decided == null && !subtasks.isEmpty() && !added.isEmpty()) {
                            decided = added;
                            run.decisionSeconds = (now - t0) / 1e9;
                            run.decisionEpoch = epoch;
                            run.decisionReason = r.plan().reason();
                        }
                    }
                    if (!subtasks.isEmpty()) {
                        inForce = subtasks;
                    }
                }
            } else {
                snapshot = collector.collect();
            }
            long now = System.nanoTime();
            double[] in = requestsIn(snapshot);
            if (decided != null && atDecision == null) {
                atDecision = in.clone();
            } else if (decided != null && Double.isNaN(run.routingFollowedSeconds)) {
                // the first later collection in which a subtask that gained the model has counted more of its requests
                for (int s : decided) {
                    if (s < in.length && in[s] > atDecision[s]) {
                        run.routingFollowedSeconds = (now - t0) / 1e9;
                    }
                }
            }
            run.cycles.add(new Cycle((now - t0) / 1e9, (now - began) / 1e6, published, epoch, skipped, rate, load,
                    targets, in, reason));
        }

        private double[] requestsIn(MetricSnapshot snapshot) {
            double[] in = new double[PARALLELISM];
            if (snapshot == null) {
                return in;
            }
            for (SubtaskSample s : snapshot.subtasks()) {
                if (s.subtask() < in.length) {
                    in[s.subtask()] = s.models().stream().filter(m -> m.model().equals(STEPPED))
                            .mapToDouble(ModelSample::requestsIn).filter(Double::isFinite).sum();
                }
            }
            return in;
        }
    }

    private static String targets(ControlMessage plan) {
        return plan.route(STEPPED).map(r -> r.targets().stream()
                .map(t -> t.subtask() + ":" + String.format(Locale.ROOT, "%.3f", t.weight()))
                .collect(Collectors.joining(","))).orElse("");
    }

    private static Set<Integer> subtasks(ControlMessage plan) {
        return plan.route(STEPPED).map(r -> r.targets().stream().map(RouteTarget::subtask)
                .collect(Collectors.toCollection(TreeSet::new))).map(s -> (Set<Integer>) s).orElse(Set.of());
    }

    // ------------------------------------------------------------------------------------------
    // analysis and report

    /** Per 1-s window of intended send time, k = -before .. after-1 (window k is [t0 + k s, t0 + k + 1 s)). */
    private ObjectNode analyse(Run run) {
        int first = -beforeSeconds;
        int n = beforeSeconds + afterSeconds;
        Histogram[] all = new Histogram[n];
        Histogram[][] perModel = new Histogram[2][n];
        long[] unansweredIn = new long[n];
        long[] errorsIn = new long[n];
        for (int i = 0; i < n; i++) {
            all[i] = histogram();
            perModel[0][i] = histogram();
            perModel[1][i] = histogram();
        }
        Histogram before = histogram();
        Histogram afterAll = histogram();
        Histogram afterFirst10 = histogram();
        Histogram afterLast30 = histogram();
        Histogram steadyAfterLast30 = histogram();
        for (Sample s : run.samples) {
            int k = (int) Math.floorDiv(s.intendedNanosFromT0(), 1_000_000_000L);
            int i = k - first;
            if (i < 0 || i >= n) {
                continue;
            }
            if (s.error()) {
                errorsIn[i]++;
                continue;
            }
            long v = Math.min(s.latencyMicros(), all[i].getHighestTrackableValue());
            all[i].recordValue(v);
            perModel[s.model()][i].recordValue(v);
            if (k < 0 && k >= -beforeSeconds + 5) {
                before.recordValue(v);
            } else if (k >= 0) {
                afterAll.recordValue(v);
                if (k < 10) {
                    afterFirst10.recordValue(v);
                }
                if (k >= afterSeconds - 30) {
                    afterLast30.recordValue(v);
                    if (s.model() == 1) {
                        steadyAfterLast30.recordValue(v);
                    }
                }
            }
        }
        for (long[] u : run.unanswered) {
            int i = (int) Math.floorDiv(u[0], 1_000_000_000L) - first;
            if (i >= 0 && i < n) {
                unansweredIn[i]++;
            }
        }
        ObjectNode r = json.createObjectNode();
        r.put("name", run.name);
        r.put("coordinator", run.coordinator);
        ArrayNode windows = r.putArray("windows");
        boolean[] violating = new boolean[n];
        for (int i = 0; i < n; i++) {
            ObjectNode w = windows.addObject();
            w.put("t_s", first + i);
            w.put("answered", all[i].getTotalCount());
            w.put("p50_ms", ms(all[i], 50));
            w.put("p99_ms", ms(all[i], 99));
            w.put("p99_stepped_ms", ms(perModel[0][i], 99));
            if (steadyRate > 0) {
                w.put("p99_steady_ms", ms(perModel[1][i], 99));
            }
            w.put("errors", errorsIn[i]);
            w.put("unanswered", unansweredIn[i]);
            violating[i] = all[i].getTotalCount() == 0 || ms(all[i], 99) > sloMs || errorsIn[i] > 0
                    || unansweredIn[i] > 0;
            w.put("within_slo", !violating[i]);
        }
        // recovery: from t0, the first window after the first violation that starts recoveryWindows windows in SLO
        int t0Index = -first;
        int firstViolation = -1;
        for (int i = t0Index; i < n; i++) {
            if (violating[i]) {
                firstViolation = i;
                break;
            }
        }
        double recovery;
        double sustained;
        int violationsAfterRecovery = 0;
        if (firstViolation < 0) {
            recovery = 0;
            sustained = 0;
        } else {
            recovery = Double.NaN;
            for (int i = firstViolation + 1; i + recoveryWindows <= n; i++) {
                boolean ok = true;
                for (int j = i; j < i + recoveryWindows; j++) {
                    ok &= !violating[j];
                }
                if (ok) {
                    recovery = i - t0Index;
                    for (int j = i + recoveryWindows; j < n; j++) {
                        violationsAfterRecovery += violating[j] ? 1 : 0;
                    }
                    break;
                }
            }
            int last = -1;
            for (int i = t0Index; i < n; i++) {
                if (violating[i]) {
                    last = i;
                }
            }
            sustained = n - (last + 1) >= recoveryWindows ? last + 1 - t0Index : Double.NaN;
        }
        int windowsOut = 0;
        for (int i = t0Index; i < n; i++) {
            windowsOut += violating[i] ? 1 : 0;
        }
        r.put("first_violation_s", firstViolation < 0 ? null : (Integer) (firstViolation - t0Index));
        putSeconds(r, "time_to_p99_recovery_s", recovery);
        putSeconds(r, "time_to_sustained_recovery_s", sustained);
        r.put("windows_out_of_slo_after_step", windowsOut);
        r.put("windows_out_of_slo_after_recovery", violationsAfterRecovery);
        r.put("p99_before_step_ms", ms(before, 99));
        r.put("p50_before_step_ms", ms(before, 50));
        r.put("p99_after_step_ms", ms(afterAll, 99));
        r.put("p99_first_10s_after_step_ms", ms(afterFirst10, 99));
        r.put("p99_last_30s_ms", ms(afterLast30, 99));
        r.put("p50_last_30s_ms", ms(afterLast30, 50));
        r.put("max_last_30s_ms", afterLast30.getTotalCount() == 0 ? Double.NaN : afterLast30.getMaxValue() / 1000.0);
        if (steadyRate > 0) {
            r.put("p99_steady_model_last_30s_ms", ms(steadyAfterLast30, 99));
        }
        r.put("sent_stepped", run.sent[0]);
        r.put("sent_steady", run.sent[1]);
        r.put("sent", run.sent[0] + run.sent[1]);
        r.put("answered", run.samples.size());
        r.put("errors", run.errors);
        r.put("lost", run.sent[0] + run.sent[1] - run.samples.size());
        r.put("load_average_start", run.loadAverageStart);
        r.put("load_average_end", run.loadAverageEnd);
        if (run.coordinator) {
            putSeconds(r, "time_to_decision_s", run.decisionSeconds);
            r.put("decision_epoch", run.decisionEpoch);
            r.put("decision_reason", run.decisionReason);
            putSeconds(r, "time_to_routing_followed_s", run.routingFollowedSeconds);
            r.put("pre_step_epoch", run.preStepEpoch);
            r.put("pre_step_targets", run.preStepTargets);
            r.put("replicated_at_step", run.preStepTargets.contains(","));
            r.put("plans_published_before_step", run.plansBeforeStep);
            r.put("plans_published_after_step", run.plansAfterStep);
            r.put("replications_after_step", count(run.decisionsAfterStep, "REPLICATE"));
            r.put("moves_after_step", count(run.decisionsAfterStep, "MOVE"));
            r.put("scale_ins_after_step", count(run.decisionsAfterStep, "SCALE_IN"));
            r.put("replications_before_step", count(run.decisionsBeforeStep, "REPLICATE"));
            r.put("moves_before_step", count(run.decisionsBeforeStep, "MOVE"));
            r.put("scale_ins_before_step", count(run.decisionsBeforeStep, "SCALE_IN"));
            r.put("relocations_recorded_after_step", run.movesAfterStep.size());
            ArrayNode decisions = r.putArray("placement_decisions");
            Stream.concat(run.decisionsBeforeStep.stream(), run.decisionsAfterStep.stream())
                    .filter(d -> Set.of("LOAD", "REPLICATE", "MOVE", "SCALE_IN", "EVICT", "UNLOAD", "OBSERVE",
                            "PUBLISH").contains(d.action()))
                    .forEach(d -> {
                        ObjectNode o = decisions.addObject();
                        o.put("at_ms", d.atMillis());
                        o.put("action", d.action());
                        o.put("model", d.model());
                        o.put("device", d.device());
                        o.put("reason", d.reason());
                    });
        }
        ArrayNode cycles = r.putArray("cycles");
        for (Cycle c : run.cycles) {
            ObjectNode o = cycles.addObject();
            o.put("t_s", Math.round(c.atSecondsFromT0() * 1000) / 1000.0);
            o.put("cycle_ms", Math.round(c.collectMillis() * 10) / 10.0);
            if (run.coordinator) {
                o.put("published", c.published());
                o.put("epoch", c.epoch());
                if (c.skipped() != null) {
                    o.put("skipped", c.skipped());
                }
                o.put("stepped_rate", round(c.steppedRate()));
                o.put("stepped_load", round(c.steppedLoad()));
                o.put("stepped_targets", c.steppedTargets());
                if (c.reason() != null) {
                    o.put("plan", c.reason());
                }
            }
            ArrayNode in = o.putArray("stepped_requests_in_per_subtask");
            for (double v : c.steppedRequestsIn()) {
                in.add(v);
            }
        }
        return r;
    }

    private void report(ObjectNode result, List<Run> runs) throws IOException {
        ObjectNode settings = result.putObject("settings");
        settings.put("devices", "2 simulated GPUs, speed " + speed + " ms per batch of b samples, one per inference subtask");
        settings.put("parallelism", PARALLELISM);
        settings.put("stepped_model", STEPPED);
        settings.put("stepped_model_subtask", ModelPartitioner.hash(STEPPED, PARALLELISM));
        settings.put("stepped_rate_before", rate);
        settings.put("stepped_rate_after", rate * step);
        if (steadyRate > 0) {
            settings.put("steady_model", STEADY + " (copy of " + SOURCE_MODEL + ")");
            settings.put("steady_model_subtask", ModelPartitioner.hash(STEADY, PARALLELISM));
            settings.put("steady_rate", steadyRate);
        }
        settings.put("device_capacity_at_batch_32_per_s", capacity(32));
        settings.put("slo_p99_ms", sloMs);
        settings.put("before_seconds", beforeSeconds);
        settings.put("after_seconds", afterSeconds);
        settings.put("cycle_ms", cycleMs);
        settings.put("metrics_fetcher_update_interval_ms", fetchMs);
        settings.put("metrics_settle_ms", settleMs);
        settings.put("recovery_windows", recoveryWindows);
        settings.put("coordinator_options", "defaults (hysteresis 0.15, weight change 0.2, ...) except "
                + "coordinator.model.default-slo = " + (long) sloMs + " ms and coordinator.plan.target-utilization = "
                + num(targetUtilization) + " (default 0.7)");
        ArrayNode configsNode = result.putArray("configs");
        List<ObjectNode> analysed = new ArrayList<>();
        for (Run r : runs) {
            ObjectNode a = analyse(r);
            analysed.add(a);
            configsNode.add(a);
        }
        String phase1 = analysed.stream().map(a -> String.format(Locale.ROOT, "%.1f ms (%s)",
                a.path("p99_before_step_ms").asDouble(), a.path("name").asText())).collect(Collectors.joining(", "));
        result.put("slo_rationale", String.format(Locale.ROOT, "%.0f ms p99 end to end: the coordinator may spend half "
                + "of it (%.0f ms, a batch of up to %d at %s ms) on the device, the rest covers the two Kafka hops and "
                + "Flink's network buffers on this shared %d-core machine; in phase 1 (one device at %.0f%% of its "
                + "batch-32 capacity) the p99 was %s.", sloMs, sloMs / 2,
                (int) Math.floor((sloMs / 2 - alpha()) / beta()), speed, Runtime.getRuntime().availableProcessors(),
                100 * rate / capacity(32), phase1));
        json.writerWithDefaultPrettyPrinter().writeValue(out.resolve("recovery.json").toFile(), result);
        List<String> pngs = new ArrayList<>();
        if (plot) {
            pngs.add(plot(analysed));
        }
        Files.writeString(out.resolve("recovery.md"), markdown(result, analysed, pngs));
        recordTargets(result);
        System.out.println(Files.readString(out.resolve("recovery.md")));
    }

    private String markdown(ObjectNode result, List<ObjectNode> configs, List<String> pngs) {
        StringBuilder md = new StringBuilder();
        md.append("<!-- written by RecoveryBenchmark; do not edit -->\n\n");
        md.append("# Coordinator: recovery from a 2x load step\n\n");
        md.append("Command (from the repository root): `").append(result.path("command").asText()).append("`\n\n");
        md.append("Machine: ").append(result.path("machine").asText()).append("; ")
                .append(result.path("started").asText()).append(" to ").append(result.path("finished").asText())
                .append(".\n\n");
        md.append(String.format(Locale.ROOT, "Setup: the Kafka job on a local Flink cluster, parallelism %d, 2 simulated "
                + "GPUs of `%s` ms per batch of b samples (%.0f samples/s at batch 32), one per inference subtask. "
                + "`%s` (hash: subtask %d) gets %.0f requests/s of open-loop Poisson traffic%s. At t0 (after %d s) its "
                + "rate steps to %.0f/s (x%.1f), more than one device carries; %d s follow. The same arrivals in every "
                + "configuration:%n%n", PARALLELISM, speed, capacity(32), STEPPED,
                ModelPartitioner.hash(STEPPED, PARALLELISM), rate,
                steadyRate > 0 ? String.format(Locale.ROOT, "; `%s` (a copy of the same network, subtask %d) a steady "
                        + "%.0f/s", STEADY, ModelPartitioner.hash(STEADY, PARALLELISM), steadyRate) : "",
                beforeSeconds, rate * step, step, afterSeconds));
        md.append(String.format(Locale.ROOT, "- **%s**: the job reads its control topic; the coordinator as shipped (REST "
                + "collector, DRF planner, Kafka realizer, RocksDB state; default options but `coordinator.model.default-slo` "
                + "= %d ms and `coordinator.plan.target-utilization` = %s, so that the steady phase's estimated load sits "
                + "clearly below the replication threshold; `coordinator.flink.metrics-settle` = %d ms, its default) runs "
                + "a cycle every %d ms; Flink's REST metrics refresh every %d ms (`metrics.fetcher.update-interval`).%n",
                COORDINATOR, (long) sloMs, num(targetUtilization), settleMs, cycleMs, fetchMs));
        md.append(String.format(Locale.ROOT, "- **%s**: the same with `coordinator.flink.metrics-settle` = 0, i.e. the "
                + "collector before that option existed: Flink's REST handlers answer from the last completed metric "
                + "fetch and start the next one asynchronously, so without the wait each read races that fetch and is "
                + "either fresh or one fetch old.%n", NO_SETTLE));
        md.append(String.format(Locale.ROOT, "- **%s**: the same job and traffic with nothing published on the control "
                + "topic: routing stays the model hash, every model on one device.%n%n", STATIC));
        md.append("SLO: ").append(result.path("slo_rationale").asText()).append(String.format(Locale.ROOT, " Latency "
                + "is response consumed minus intended send time, per 1-s window of intended send time; a window is in "
                + "SLO when its p99 <= %.0f ms with no error and nothing unanswered. Recovered: the first window after "
                + "the first violation that starts %d consecutive windows in SLO.%n%n", sloMs, recoveryWindows));

        md.append("| |");
        configs.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" |"));
        md.append("\n|---|");
        configs.forEach(c -> md.append("---|"));
        md.append('\n');
        row(md, configs, "p99 before the step (phase 1 minus its first 5 s)", c -> ms(c, "p99_before_step_ms"));
        row(md, configs, "p99 first 10 s after the step", c -> ms(c, "p99_first_10s_after_step_ms"));
        row(md, configs, "p99 whole phase 2", c -> ms(c, "p99_after_step_ms"));
        row(md, configs, "p99 last 30 s", c -> ms(c, "p99_last_30s_ms"));
        if (steadyRate > 0) {
            row(md, configs, "p99 last 30 s, steady model only", c -> ms(c, "p99_steady_model_last_30s_ms"));
        }
        row(md, configs, "**time to decision** (t0 to the first published plan that puts the stepped model on a "
                + "subtask the plan in force did not: a replica or a move) (goal <= 5 s)",
                c -> !c.path("coordinator").asBoolean() ? "no coordinator"
                        : seconds(c.get("time_to_decision_s")) + (c.hasNonNull("time_to_decision_s")
                                ? " (epoch " + c.path("decision_epoch").asLong() + ")" : "")
                                + (c.path("replicated_at_step").asBoolean() ? "; the plan in force at t0 already had "
                                        + "a replica (" + c.path("pre_step_targets").asText() + ")" : ""));
        row(md, configs, "time until the new subtask counts the model's requests (REST)",
                c -> !c.path("coordinator").asBoolean() ? "-" : seconds(c.get("time_to_routing_followed_s")));
        row(md, configs, "first window out of SLO after t0", c -> c.hasNonNull("first_violation_s")
                ? "t0+" + c.path("first_violation_s").asInt() + " s" : "none");
        row(md, configs, "**time to p99 recovery** (goal <= 30 s)", c -> seconds(c.get("time_to_p99_recovery_s")));
        row(md, configs, "... and in SLO from then to the end", c -> seconds(c.get("time_to_sustained_recovery_s")));
        row(md, configs, "windows out of SLO after t0 (of " + afterSeconds + ")",
                c -> String.valueOf(c.path("windows_out_of_slo_after_step").asInt()));
        row(md, configs, "plans published before / after the step", c -> !c.path("coordinator").asBoolean() ? "0 / 0"
                : c.path("plans_published_before_step").asInt() + " / " + c.path("plans_published_after_step").asInt());
        row(md, configs, String.format(Locale.ROOT, "coordinator's rate estimate for the stepped model before / after "
                + "the step, min-median-max per cycle (offered %.0f/s / %.0f/s)", rate, rate * step), c -> {
            if (!c.path("coordinator").asBoolean()) {
                return "-";
            }
            List<Double> before = new ArrayList<>();
            List<Double> after = new ArrayList<>();
            for (JsonNode y : c.withArray("cycles")) {
                double v = y.path("stepped_rate").asDouble(Double.NaN);
                if (y.has("skipped") && y.path("skipped").asText().startsWith("measuring") || !Double.isFinite(v)) {
                    continue;
                }
                // a cycle's rate covers the previous cycle period: attribute it by its end
                (y.path("t_s").asDouble() < 0 ? before : after).add(v);
            }
            return spread(before) + " / " + spread(after);
        });
        row(md, configs, "REPLICATE / MOVE / SCALE_IN decisions after the step (all models)", c -> !c.path("coordinator").asBoolean()
                ? "-" : c.path("replications_after_step").asInt() + " / " + c.path("moves_after_step").asInt() + " / "
                        + c.path("scale_ins_after_step").asInt());
        row(md, configs, "REPLICATE / MOVE / SCALE_IN decisions before the step (all models)", c -> !c.path("coordinator").asBoolean()
                ? "-" : c.path("replications_before_step").asInt() + " / " + c.path("moves_before_step").asInt() + " / "
                        + c.path("scale_ins_before_step").asInt());
        row(md, configs, "sent / answered / errors / **lost**", c -> c.path("sent").asLong() + " / "
                + c.path("answered").asLong() + " / " + c.path("errors").asLong() + " / **" + c.path("lost").asLong()
                + "**");
        row(md, configs, "REST collection per cycle, median / max", c -> {
            List<Double> d = new ArrayList<>();
            c.withArray("cycles").forEach(y -> d.add(y.path("cycle_ms").asDouble()));
            d.sort(null);
            return d.isEmpty() ? "-" : String.format(Locale.ROOT, "%.0f / %.0f ms", d.get(d.size() / 2),
                    d.get(d.size() - 1));
        });
        row(md, configs, "load average at start / end", c -> String.format(Locale.ROOT, "%.2f / %.2f",
                c.path("load_average_start").asDouble(), c.path("load_average_end").asDouble()));
        md.append('\n');
        for (ObjectNode c : configs) {
            if (c.path("coordinator").asBoolean() && c.path("replications_before_step").asInt()
                    + c.path("scale_ins_before_step").asInt() + c.path("moves_before_step").asInt() > 0) {
                md.append(String.format(Locale.ROOT, "Note (%s): the coordinator already changed placements %d time(s) "
                        + "during the steady phase 1, so its first replica plan after t0 is not necessarily a reaction to "
                        + "the step; see its rate estimates below.%n%n", c.path("name").asText(),
                        c.path("replications_before_step").asInt() + c.path("scale_ins_before_step").asInt()
                                + c.path("moves_before_step").asInt()));
            }
        }
        for (String png : pngs) {
            md.append("![p99 per window](").append(png).append(")\n\n");
        }
        for (ObjectNode c : configs) {
            if (!c.path("coordinator").asBoolean()) {
                continue;
            }
            md.append("Plans published by **").append(c.path("name").asText()).append("** (t from t0; the coordinator's "
                    + "estimate for the stepped model; its route as subtask:weight):\n\n");
            md.append("| t | epoch | rate, device-s/s | route | plan |\n|---|---|---|---|---|\n");
            for (JsonNode y : c.withArray("cycles")) {
                if (y.path("published").asBoolean()) {
                    md.append(String.format(Locale.ROOT, "| %.1f s | %d | %.0f/s, %.2f | %s | %s |%n",
                            y.path("t_s").asDouble(), y.path("epoch").asLong(), y.path("stepped_rate").asDouble(),
                            y.path("stepped_load").asDouble(), y.path("stepped_targets").asText(),
                            y.path("plan").asText().replace("|", "/")));
                }
            }
            md.append('\n');
        }
        md.append("Every cycle's estimates, the per-subtask request counters read from REST and the decisions with their "
                + "reasons are in recovery.json (`cycles`, `placement_decisions`).\n\n");
        md.append("p99 per 1-s window (ms; `*` out of SLO):\n\n| t (s from t0) |");
        configs.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" |"));
        md.append("\n|---|");
        configs.forEach(c -> md.append("---|"));
        md.append('\n');
        int n = beforeSeconds + afterSeconds;
        for (int i = Math.max(0, beforeSeconds - 5); i < n; i++) {
            md.append("| ").append(i - beforeSeconds).append(" |");
            for (ObjectNode c : configs) {
                JsonNode w = c.withArray("windows").get(i);
                md.append(String.format(Locale.ROOT, " %.1f%s |", w.path("p99_ms").asDouble(),
                        w.path("within_slo").asBoolean() ? "" : " *"));
            }
            md.append('\n');
        }
        return md.toString();
    }

    private static void row(StringBuilder md, List<ObjectNode> configs, String label,
            java.util.function.Function<ObjectNode, String> cell) {
        md.append("| ").append(label).append(" |");
        configs.forEach(c -> md.append(' ').append(cell.apply(c)).append(" |"));
        md.append('\n');
    }

    private static String spread(List<Double> values) {
        if (values.isEmpty()) {
            return "-";
        }
        List<Double> v = new ArrayList<>(values);
        v.sort(null);
        return String.format(Locale.ROOT, "%.0f-%.0f-%.0f", v.get(0), v.get(v.size() / 2), v.get(v.size() - 1));
    }

    private static String ms(ObjectNode c, String field) {
        return String.format(Locale.ROOT, "%.1f ms", c.path(field).asDouble());
    }

    private static String seconds(JsonNode v) {
        return v == null || v.isNull() ? "**never** (within the run)" : String.format(Locale.ROOT, "**%.1f s**",
                v.asDouble());
    }

    private String plot(List<ObjectNode> configs) throws IOException {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(960).height(560)
                .title(String.format(Locale.ROOT, "p99 per 1-s window; %s x%.1f at t = 0", STEPPED, step))
                .xAxisTitle("seconds from the load step (intended send time)").yAxisTitle("p99 latency (ms, log)")
                .build();
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        chart.getStyler().setMarkerSize(4);
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (ObjectNode c : configs) {
            List<double[]> xy = new ArrayList<>();
            for (JsonNode w : c.withArray("windows")) {
                double v = w.path("p99_ms").asDouble();
                if (Double.isFinite(v) && v > 0) {
                    xy.add(new double[] {w.path("t_s").asDouble(), v});
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                }
            }
            if (!xy.isEmpty()) {
                chart.addSeries(c.path("name").asText(), xy.stream().mapToDouble(p -> p[0]).toArray(),
                        xy.stream().mapToDouble(p -> p[1]).toArray());
            }
        }
        lo = Math.min(lo, sloMs) * 0.8;
        hi = Math.max(hi, sloMs) * 1.2;
        XYSeries slo = chart.addSeries("SLO " + (int) sloMs + " ms", new double[] {-beforeSeconds, afterSeconds},
                new double[] {sloMs, sloMs});
        slo.setMarker(SeriesMarkers.NONE);
        XYSeries stepLine = chart.addSeries("load step", new double[] {0, 0}, new double[] {lo, hi});
        stepLine.setMarker(SeriesMarkers.NONE);
        for (ObjectNode c : configs) {
            if (c.hasNonNull("time_to_decision_s")) {
                double d = c.path("time_to_decision_s").asDouble();
                XYSeries decision = chart.addSeries("first replica plan, " + c.path("name").asText(),
                        new double[] {d, d}, new double[] {lo, hi});
                decision.setMarker(SeriesMarkers.NONE);
            }
        }
        String file = "recovery-p99.png";
        BitmapEncoder.saveBitmap(chart, out.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }

    /** Replaces the "coordinator" targets in {@code summary} with the ones this run measured. */
    private void recordTargets(ObjectNode result) throws IOException {
        String run = "coordinator/recovery.json " + result.path("started").asText();
        List<ObjectNode> configs = new ArrayList<>();
        result.withArray("configs").forEach(c -> configs.add((ObjectNode) c));
        ObjectNode coord = find(configs, COORDINATOR);
        ObjectNode noSettle = find(configs, NO_SETTLE);
        ObjectNode stat = find(configs, STATIC);
        JsonNode settings = result.path("settings");
        double horizon = settings.path("after_seconds").asDouble();
        String slo = (long) settings.path("slo_p99_ms").asDouble() + " ms";
        int windows = settings.path("recovery_windows").asInt();
        List<ObjectNode> targets = new ArrayList<>();
        for (ObjectNode c : Stream.of(coord, noSettle).filter(java.util.Objects::nonNull).toList()) {
            boolean shipped = c == coord;
            String suffix = shipped ? "" : "_no_settle";
            String target = settings.path("coordinator_options").asText()
                    .replaceAll(".*target-utilization = ([0-9.]+).*", "$1");
            String who = shipped ? "the coordinator as shipped (metrics-settle " + settings.path("metrics_settle_ms")
                    .asLong() + " ms, target utilisation " + target + ")"
                    : "the coordinator with coordinator.flink.metrics-settle = 0 (its collector before that option; "
                            + "target utilisation " + target + ")";
            String goalDecision = shipped ? "<= 5 s" : "compare";
            String goalRecovery = shipped ? "<= 30 s" : "compare";
            JsonNode d = c.get("time_to_decision_s");
            boolean decided = d != null && !d.isNull();
            String flapped = c.path("replications_before_step").asInt() + c.path("scale_ins_before_step").asInt() > 0
                    ? "; it had already replicated/scaled in " + (c.path("replications_before_step").asInt()
                            + c.path("scale_ins_before_step").asInt()) + " time(s) in the steady phase before the step"
                            + (c.path("replicated_at_step").asBoolean() ? ", and the plan in force at t0 already had a "
                                    + "replica" : "") + " (not a pass: the steady phase was not steady, so the plan "
                                    + "cannot be attributed to the step)"
                    : "";
            targets.add(target(run, "time_to_decision" + suffix, (decided
                    ? "seconds from a 2x load step on one model to the first published plan that replicates or moves it "
                            + "(epoch " + c.path("decision_epoch").asLong() + "), " + who
                    : "no such plan within the " + (long) horizon + " s after the step (measured: that lower bound), "
                            + who) + flapped,
                    decided ? d.asDouble() : horizon, goalDecision,
                    shipped ? decided && d.asDouble() <= 5 && flapped.isEmpty() : null));
            JsonNode rec = c.get("time_to_p99_recovery_s");
            boolean recovered = rec != null && !rec.isNull();
            JsonNode sustained = c.get("time_to_sustained_recovery_s");
            targets.add(target(run, "time_to_p99_recovery" + suffix, (recovered
                    ? "seconds from the step until the p99 per 1-s window is within the SLO (" + slo + ") for " + windows
                            + " consecutive windows, " + who
                    : "the p99 did not recover within the " + (long) horizon + " s after the step (measured: that lower "
                            + "bound), " + who) + "; " + c.path("windows_out_of_slo_after_step").asInt() + " of "
                    + (long) horizon + " windows out of SLO after the step"
                    + (sustained == null || sustained.isNull() ? ", still violating near the end"
                            : ", in SLO to the end from " + fmt(sustained.asDouble()) + " s"),
                    recovered ? rec.asDouble() : horizon, goalRecovery, shipped ? recovered && rec.asDouble() <= 30 : null));
            targets.add(target(run, "moves" + suffix, "placement changes after the step (both models), " + who
                    + ": " + c.path("replications_after_step").asInt() + " REPLICATE + " + c.path("moves_after_step")
                    .asInt() + " MOVE (and " + c.path("scale_ins_after_step").asInt() + " SCALE_IN); "
                    + c.path("plans_published_after_step").asInt() + " plans published",
                    c.path("replications_after_step").asInt() + c.path("moves_after_step").asInt(), "compare", null));
            targets.add(target(run, "p99_after_step" + suffix, "p99 over the last 30 s of the step (ms), " + who
                    + "; before the step " + fmt(c.path("p99_before_step_ms").asDouble()) + " ms",
                    c.path("p99_last_30s_ms").asDouble(), "compare", null));
        }
        if (stat != null) {
            JsonNode rec = stat.get("time_to_p99_recovery_s");
            String recovery = rec == null || rec.isNull() ? "never recovers within the " + (long) horizon + " s"
                    : "recovers after " + fmt(rec.asDouble()) + " s";
            targets.add(target(run, "static_p99_after_step", "static placement (hash routing, no coordinator), same "
                    + "traffic: p99 over the last 30 s of the step (ms); " + recovery + "; "
                    + stat.path("windows_out_of_slo_after_step").asInt() + " of " + (long) horizon + " windows out of "
                    + "SLO; before the step " + fmt(stat.path("p99_before_step_ms").asDouble()) + " ms",
                    stat.path("p99_last_30s_ms").asDouble(), "compare", null));
        }
        long lost = 0;
        StringBuilder lostBy = new StringBuilder();
        for (ObjectNode c : configs) {
            lost += c.path("lost").asLong();
            lostBy.append(lostBy.length() == 0 ? "" : ", ").append(c.path("name").asText()).append(' ')
                    .append(c.path("lost").asLong()).append(" of ").append(c.path("sent").asLong());
        }
        targets.add(target(run, "requests_lost", "requests sent but never answered (" + lostBy + ")", lost, "0",
                lost == 0));
        SummaryTargets.replace(summary, "coordinator", targets);
    }

    private static ObjectNode target(String run, String name, String description, double measured, String goal,
            Boolean pass) {
        return SummaryTargets.target("coordinator", run, name, description, measured, goal, pass);
    }


    // ------------------------------------------------------------------------------------------
    // helpers

    private String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + getClass().getName()
                + " -Dbench.args=\"" + String.format(Locale.ROOT, "--configs=%s --before-seconds=%d --after-seconds=%d "
                + "--rate=%s --step=%s --steady-rate=%s --speed=%s --slo-ms=%s --target-utilization=%s --cycle-ms=%d "
                + "--metrics-fetch-ms=%d --metrics-settle-ms=%d", String.join(",", configs), beforeSeconds, afterSeconds,
                num(rate), num(step), num(steadyRate), speed, num(sloMs), num(targetUtilization), cycleMs, fetchMs,
                settleMs) + "\"";
    }

    private static String num(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }

    private static String fmt(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }

    private static String machine() {
        String cpu = "";
        try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            cpu = lines.filter(l -> l.startsWith("model name")).findFirst().map(l -> l.substring(l.indexOf(':') + 1)
                    .trim()).orElse("");
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return Runtime.getRuntime().availableProcessors() + " cores" + (cpu.isEmpty() ? "" : " (" + cpu + ")")
                + ", shared with other work; Java " + System.getProperty("java.version") + ", "
                + System.getProperty("os.name") + " " + System.getProperty("os.version")
                + "; broker, Flink MiniCluster, coordinator and load generator in one JVM";
    }

    private static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    private double alpha() {
        return Double.parseDouble(speed.replace("*b", "").split("\\+")[0]);
    }

    private double beta() {
        return Double.parseDouble(speed.replace("*b", "").split("\\+")[1]);
    }

    /** Samples per second one device runs at batch {@code b} under the speed model. */
    private double capacity(int b) {
        return b / ((alpha() + b * beta()) / 1000);
    }

    private static Histogram histogram() {
        return new Histogram(300_000_000L, 3);
    }

    private static double ms(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }

    private static double round(double v) {
        return Double.isFinite(v) ? Math.round(v * 1000) / 1000.0 : v;
    }

    private static void putSeconds(ObjectNode o, String field, double seconds) {
        if (Double.isFinite(seconds)) {
            o.put(field, Math.round(seconds * 1000) / 1000.0);
        } else {
            o.putNull(field);
        }
    }

    private static long count(List<Decision> decisions, String action) {
        return decisions.stream().filter(d -> d.action().equals(action)).count();
    }

    private static ObjectNode find(List<ObjectNode> configs, String name) {
        return configs.stream().filter(c -> c.path("name").asText().equals(name)).findFirst().orElse(null);
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path f : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(f);
            }
        }
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return io.flinkgpu.bench.sut.KafkaClients.producer(kafka.bootstrapServers());
    }

    private KafkaConsumer<byte[], byte[]> consumer(String topic) {
        return io.flinkgpu.bench.sut.KafkaClients.consumer(kafka.bootstrapServers(), topic);
    }

    private byte[] request(String id, String model, int sample) {
        return new BinaryCodec().encodeRequest(new InferenceRequest(id, model, null,
                List.of(Tensor.ofFloats("input", SHAPE, images.image(sample % images.size()))),
                new RequestParameters(0, 0, "bench")));
    }
}
