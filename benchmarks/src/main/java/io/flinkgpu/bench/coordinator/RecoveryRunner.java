package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.PARALLELISM;

import io.flinkgpu.bench.load.ArrivalSchedule;
import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sut.JobTopics;
import io.flinkgpu.bench.sut.KafkaTarget;
import io.flinkgpu.bench.sut.KafkaTraffic;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;

/**
 * Runs one configuration of the recovery benchmark: the Kafka job with its control topic on a
 * local cluster of its own (two simulated GPUs, REST on a free port), the coordinator beside it
 * unless static, a warm-up, then the two phases of traffic through the shared load driver while
 * the {@link ControlLoop} runs cycles.
 */
final class RecoveryRunner {
    /** The parameters every benchmark request carries. */
    private static final RequestParameters PARAMETERS = new RequestParameters(0, 0, "bench");

    private final RecoveryOptions options;
    private final EmbeddedKafka kafka;
    private final Path repository;
    private final Path stateRoot;
    private final Scenario images;

    /** {@code images} supplies the inputs, {@code repository} the models, {@code stateRoot} the coordinator's state. */
    RecoveryRunner(RecoveryOptions options, EmbeddedKafka kafka, Path repository, Path stateRoot, Scenario images) {
        this.options = options;
        this.kafka = kafka;
        this.repository = repository;
        this.stateRoot = stateRoot;
        this.images = images;
    }

    /** Runs configuration {@code name}; {@code settle} is coordinator.flink.metrics-settle in milliseconds. */
    RecoveryRun run(String name, boolean withCoordinator, long settle) throws Exception {
        RecoveryRun run = new RecoveryRun(name, withCoordinator);
        run.loadAverageStart = loadAverage();
        String prefix = "recovery-" + name + "-" + Long.toString(System.currentTimeMillis(), 36);
        JobTopics topics = JobTopics.prefixed(prefix);
        String control = prefix + "-control";
        kafka.createTopics(PARALLELISM, topics.requests());
        kafka.createTopics(1, topics.responses(), topics.deadLetter(), control);

        int restPort = freePort();
        Configuration conf = topics.jobConfiguration(kafka.bootstrapServers(), "latest", repository);
        conf.set(InferenceJobOptions.CONTROL_TOPIC, control);
        conf.set(InferenceJobOptions.PARALLELISM, PARALLELISM);
        conf.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        conf.set(GpuInferenceOptions.SIMULATED_DEVICES, PARALLELISM);
        conf.set(GpuInferenceOptions.SIMULATED_SPEED, options.speed);
        conf.set(GpuInferenceOptions.WARMUP_WORKERS, 1);
        // the REST API must serve fresh metrics, or the coordinator decides on numbers up to 10 s old
        conf.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(options.fetchMs));
        conf.set(RestOptions.ADDRESS, "localhost");
        conf.set(RestOptions.BIND_ADDRESS, "localhost");
        conf.set(RestOptions.BIND_PORT, String.valueOf(restPort));
        conf.set(RestOptions.PORT, restPort);
        JobClient job = Deployments.startJob(conf, PARALLELISM, "recovery-" + name);
        String rest = "http://localhost:" + restPort;
        // as CoordinatorMain builds it, with coordinator.flink.metrics-settle
        MetricCollector collector = new MetricCollector(rest, job.getJobID().toString(), "GPU inference",
                Duration.ofSeconds(5), Clock.systemUTC(), Duration.ofMillis(settle));
        Path stateDir = stateRoot.resolve(prefix);
        Files.createDirectories(stateDir);
        try (KafkaTraffic traffic = new KafkaTraffic(kafka.bootstrapServers(), topics.requests(), topics.responses())) {
            List<KafkaTarget> models = new ArrayList<>();
            for (String model : options.models()) {
                models.add(traffic.stream((id, seq) -> images.request(id, seq, model, PARAMETERS)));
            }
            warmUp(traffic, models);
            if (withCoordinator) {
                Configuration c = new Configuration();
                c.set(CoordinatorOptions.REST_URL, rest);
                c.set(CoordinatorOptions.JOB_ID, job.getJobID().toString());
                c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
                c.set(CoordinatorOptions.CONTROL_TOPIC, control);
                c.set(CoordinatorOptions.INTERVAL, Duration.ofMillis(options.cycleMs));
                c.set(CoordinatorOptions.DEFAULT_SLO, Duration.ofMillis((long) options.sloMs));
                c.set(CoordinatorOptions.TARGET_UTILIZATION, options.targetUtilization);
                c.set(CoordinatorOptions.METRICS_SETTLE, Duration.ofMillis(settle));
                try (StateStore store = RocksDbStateStore.open(stateDir);
                        KafkaPlanRealizer realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), control,
                                Duration.ofSeconds(20))) {
                    Coordinator coordinator = new Coordinator(c, collector, realizer, store, new CoordinatorMetrics(),
                            Clock.systemUTC());
                    measure(run, traffic, models, coordinator, collector);
                }
            } else {
                measure(run, traffic, models, null, collector);
            }
        } finally {
            job.cancel().get(60, TimeUnit.SECONDS);
            deleteRecursively(stateDir);
        }
        run.loadAverageEnd = loadAverage();
        return run;
    }

    /** Until every model has 20 answers without error, so that measurement starts on loaded, warm models. */
    private static void warmUp(KafkaTraffic traffic, List<KafkaTarget> models) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        for (KafkaTarget model : models) {
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            if (!model.awaitAnswers(traffic.newRun(), 20, true, Duration.ofMillis(50), left)) {
                throw new IllegalStateException("the job did not answer within 180 s of warm-up");
            }
        }
    }

    /**
     * Phase 1 and 2 of open-loop traffic, the stepped model's rate stepping at t0, the same arrivals
     * in every configuration; the control loop runs alongside from the start to the end of phase 2.
     */
    private void measure(RecoveryRun run, KafkaTraffic traffic, List<KafkaTarget> models, Coordinator coordinator,
            MetricCollector collector) throws Exception {
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        long before = TimeUnit.SECONDS.toNanos(options.beforeSeconds);
        long t0 = start + before;
        long end = t0 + TimeUnit.SECONDS.toNanos(options.afterSeconds);
        long t0WallMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(t0 - System.nanoTime());
        run.t0Nanos = t0;

        List<LoadDriver.Stream> streams = new ArrayList<>();
        for (int m = 0; m < models.size(); m++) {
            ArrivalSchedule.Rate rate = m == 0 ? ArrivalSchedule.Rate.step(options.rate, options.rate * options.step,
                    before) : ArrivalSchedule.Rate.constant(options.steadyRate);
            streams.add(new LoadDriver.Stream(models.get(m), traffic.newRun(), rate, new Random(42 + m)));
        }
        ControlLoop loop = new ControlLoop(run, coordinator, collector, options.cycleMs, start, t0, end);
        Thread control = new Thread(loop, "control-loop");
        control.start();
        try {
            run.answers = LoadDriver.timed(streams, start, end, Duration.ofSeconds(options.drainSeconds));
        } finally {
            loop.stop();
            control.join();
        }
        if (coordinator != null) {
            List<Decision> all = coordinator.store().recentDecisions(10_000);
            run.decisionsAfterStep = all.stream().filter(d -> d.atMillis() >= t0WallMillis).toList();
            run.decisionsBeforeStep = all.stream().filter(d -> d.atMillis() < t0WallMillis).toList();
            run.movesAfterStep = coordinator.store().moves().stream().filter(mv -> mv.atMillis() >= t0WallMillis)
                    .toList();
        }
        System.out.printf(Locale.ROOT, "%s: sent %s, answered %d (%d errors), unanswered %d, decision %.2f s%n",
                run.name, Arrays.toString(new long[] {run.sent(0), run.sent(1)}), run.answered(), run.errors(),
                run.unanswered(), run.decisionSeconds);
    }

    static double loadAverage() {
        try {
            return Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).split(" ")[0]);
        } catch (IOException | RuntimeException e) {
            return Double.NaN;
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    static void deleteRecursively(Path p) throws IOException {
        if (!Files.exists(p)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(p)) {
            for (Path f : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(f);
            }
        }
    }
}
