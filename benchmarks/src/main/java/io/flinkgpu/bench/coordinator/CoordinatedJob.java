package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.PARALLELISM;

import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sut.JobTopics;
import io.flinkgpu.bench.sut.KafkaTarget;
import io.flinkgpu.bench.sut.KafkaTraffic;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;

/**
 * What every coordinator benchmark runs against: the Kafka job with its control topic on a local
 * cluster of its own (two simulated GPUs at parallelism 2, REST on a free port, metrics fetched
 * every {@code fetchMs}), its REST collector built as {@code CoordinatorMain} builds it, and, on
 * request, the coordinator beside it (Kafka realizer on the control topic, RocksDB state in a
 * scratch folder). Closing it closes the coordinator's parts, cancels the job and deletes the state.
 */
final class CoordinatedJob implements AutoCloseable {
    final String prefix;
    final JobTopics topics;
    final String control;
    final String rest;
    final JobClient job;
    final MetricCollector collector;
    /** The job's configuration, as it started. */
    final Configuration configuration;
    private final EmbeddedKafka kafka;
    private final Path stateDir;
    private StateStore store;
    private KafkaPlanRealizer realizer;

    private CoordinatedJob(String prefix, JobTopics topics, String control, String rest, JobClient job,
            MetricCollector collector, Configuration configuration, EmbeddedKafka kafka, Path stateDir) {
        this.prefix = prefix;
        this.topics = topics;
        this.control = control;
        this.rest = rest;
        this.job = job;
        this.collector = collector;
        this.configuration = configuration;
        this.kafka = kafka;
        this.stateDir = stateDir;
    }

    /**
     * Starts the job named {@code name} on models from {@code repository}, the simulated devices at
     * {@code speed}; {@code settleMs} is the collector's coordinator.flink.metrics-settle.
     */
    static CoordinatedJob start(EmbeddedKafka kafka, Path repository, Path stateRoot, String name, String speed,
            long fetchMs, long settleMs) throws Exception {
        return start(kafka, repository, stateRoot, name, speed, fetchMs, settleMs, conf -> { });
    }

    /** As above, {@code extra} adding to (or overriding) the job's configuration before it starts. */
    static CoordinatedJob start(EmbeddedKafka kafka, Path repository, Path stateRoot, String name, String speed,
            long fetchMs, long settleMs, java.util.function.Consumer<Configuration> extra) throws Exception {
        String prefix = name + "-" + Long.toString(System.currentTimeMillis(), 36);
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
        conf.set(GpuInferenceOptions.SIMULATED_SPEED, speed);
        conf.set(GpuInferenceOptions.WARMUP_WORKERS, 1);
        // the REST API must serve fresh metrics, or the coordinator decides on numbers up to 10 s old
        conf.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(fetchMs));
        conf.set(RestOptions.ADDRESS, "localhost");
        conf.set(RestOptions.BIND_ADDRESS, "localhost");
        conf.set(RestOptions.BIND_PORT, String.valueOf(restPort));
        conf.set(RestOptions.PORT, restPort);
        extra.accept(conf);
        JobClient job = Deployments.startJob(conf, PARALLELISM, name);
        String rest = "http://localhost:" + restPort;
        // as CoordinatorMain builds it, with coordinator.flink.metrics-settle
        MetricCollector collector = new MetricCollector(rest, job.getJobID().toString(), "GPU inference",
                Duration.ofSeconds(5), Clock.systemUTC(), Duration.ofMillis(settleMs));
        Path stateDir = stateRoot.resolve(prefix);
        Files.createDirectories(stateDir);
        return new CoordinatedJob(prefix, topics, control, rest, job, collector, conf, kafka, stateDir);
    }

    /**
     * The largest batch the job's operator forms for {@code model}: the model's max_batch_size
     * capped by the job's inference.batching.max-batch-size, as the operator resolves it.
     */
    int maxBatch(String model) {
        String repository = configuration.get(GpuInferenceOptions.MODEL_REPOSITORY);
        ModelConfig config = ModelRepository.open(Path.of(repository)).model(model).orElseThrow(() ->
                new IllegalArgumentException("the repository " + repository + " has no model '" + model + "'"))
                .config();
        return InferenceSettings.fromConfiguration(configuration).batchingFor(config).maxBatchSize();
    }

    /** Traffic on the job's topics: the caller closes it before this job. */
    KafkaTraffic traffic() {
        return new KafkaTraffic(kafka.bootstrapServers(), topics.requests(), topics.responses());
    }

    /**
     * The coordinator's configuration for this job: REST, job id, Kafka, control topic, a cycle every
     * {@code cycleMs}, the default SLO, the target utilisation and the metrics settle; the caller adds
     * the rest.
     */
    Configuration coordinatorConfig(long cycleMs, double sloMs, double targetUtilization, long settleMs) {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.REST_URL, rest);
        c.set(CoordinatorOptions.JOB_ID, job.getJobID().toString());
        c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
        c.set(CoordinatorOptions.CONTROL_TOPIC, control);
        c.set(CoordinatorOptions.INTERVAL, Duration.ofMillis(cycleMs));
        c.set(CoordinatorOptions.DEFAULT_SLO, Duration.ofMillis((long) sloMs));
        c.set(CoordinatorOptions.TARGET_UTILIZATION, targetUtilization);
        c.set(CoordinatorOptions.METRICS_SETTLE, Duration.ofMillis(settleMs));
        return c;
    }

    /** The coordinator (once per job) on this job's collector, a Kafka realizer and RocksDB state. */
    Coordinator coordinator(Configuration c) throws Exception {
        if (store != null) {
            throw new IllegalStateException("one coordinator per job");
        }
        store = RocksDbStateStore.open(stateDir);
        realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), control, Duration.ofSeconds(20));
        return new Coordinator(c, collector, realizer, store, new CoordinatorMetrics(), Clock.systemUTC());
    }

    /** Until every model has 20 answers without error, so that measurement starts on loaded, warm models. */
    static void warmUp(KafkaTraffic traffic, List<KafkaTarget> models) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(180);
        for (KafkaTarget model : models) {
            Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
            if (!model.awaitAnswers(traffic.newRun(), 20, true, Duration.ofMillis(50), left)) {
                throw new IllegalStateException("the job did not answer within 180 s of warm-up");
            }
        }
    }

    @Override
    public void close() throws Exception {
        try {
            if (realizer != null) {
                realizer.close();
            }
            if (store != null) {
                store.close();
            }
        } finally {
            try {
                job.cancel().get(60, TimeUnit.SECONDS);
            } finally {
                deleteRecursively(stateDir);
            }
        }
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
