package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.flinkgpu.coordinator.realize.AdaptiveSchedulerRescaler;
import io.flinkgpu.coordinator.realize.Rescalers;
import io.flinkgpu.coordinator.realize.StopWithSavepointRescaler;
import io.flinkgpu.job.UpgradedInferenceJobMain;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.net.URI;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Operations on a real multi-process cluster: a Flink session cluster of separate JVMs (one
 * JobManager, two TaskManagers, started by deploy/standalone/start-cluster.sh on free ports with
 * deploy/conf), the in-process Kafka broker, and the shaded job jar submitted through Flink's REST
 * API as a user would. Three scenarios, in order, on one cluster:
 * <ol>
 *   <li>savepoint upgrade under traffic, with requests queued in the batcher, to a changed job;</li>
 *   <li>kill -9 of a TaskManager mid-stream, at-least-once;</li>
 *   <li>the same with exactly-once (Kafka transactions), read with read_committed.</li>
 * </ol>
 * Measured figures are printed and written to target/operations-measurements.txt
 * (docs/OPERATIONS.md quotes them).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MultiProcessClusterTest {
    private static final int RATE = 150;
    private static final Duration CHECKPOINT_INTERVAL = Duration.ofSeconds(2);

    static Path root;
    static FashionMnist images;
    static EmbeddedKafka kafka;
    static StandaloneCluster cluster;
    static Path jobJar;
    static String jobJarId;
    static final List<String> measurements = new ArrayList<>();
    static long[] atLeastOnceLatency;
    static long[] exactlyOnceLatency;

    @BeforeAll
    static void startClusterAndKafka() throws Exception {
        root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        jobJar = jobJar(root);
        long t0 = System.nanoTime();
        CompletableFuture<StandaloneCluster> starting = CompletableFuture.supplyAsync(() -> {
            try {
                return StandaloneCluster.start(root, 2, Map.ofEntries(
                        // notice a dead TaskManager within seconds, restart at once
                        Map.entry("heartbeat.interval", "1000"),
                        Map.entry("heartbeat.timeout", "5000"),
                        Map.entry("restart-strategy.type", "fixed-delay"),
                        Map.entry("restart-strategy.fixed-delay.attempts", "100"),
                        Map.entry("restart-strategy.fixed-delay.delay", "1s"),
                        Map.entry("metrics.fetcher.update-interval", "1000"),
                        // from the cluster configuration, not the program arguments: InferenceJobMain reads both
                        Map.entry("inference.model-repository", root.resolve("models").toString()),
                        Map.entry("taskmanager.memory.process.size", "1280m"),
                        Map.entry("jobmanager.memory.process.size", "800m")));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            kafka = EmbeddedKafka.start();
            cluster = starting.join();
        } catch (RuntimeException | Error e) {
            starting.thenAccept(StandaloneCluster::close);
            throw e;
        }
        System.out.printf("cluster (1 JobManager + 2 TaskManagers) and Kafka up in %.1f s, web UI %s%n",
                (System.nanoTime() - t0) / 1e9, cluster.rest());
        jobJarId = cluster.uploadJar(jobJar);
    }

    @BeforeEach
    void noJobLeftRunning() throws Exception {
        cluster.cancelAllJobs();
    }

    @AfterAll
    static void stopAll() throws Exception {
        try {
            if (cluster != null) {
                cluster.close();
            }
        } finally {
            if (kafka != null) {
                kafka.close();
            }
        }
        if (!measurements.isEmpty()) {
            Path out = Path.of("target", "operations-measurements.txt");
            Files.createDirectories(out.getParent());
            Files.write(out, measurements);
        }
    }

    static Path jobJar(Path root) throws Exception {
        String configured = System.getProperty("flinkgpu.job.jar");
        Path jar = configured != null ? Path.of(configured) : null;
        if (jar == null || !Files.isRegularFile(jar)) {
            try (Stream<Path> s = Files.list(root.resolve("flink-job/target"))) {
                jar = s.filter(p -> p.getFileName().toString().endsWith("-job.jar")).findFirst().orElse(null);
            } catch (java.io.IOException e) {
                jar = null;
            }
        }
        assertThat(jar).as("the shaded job jar (mvn package -pl flink-job builds flink-job/target/flink-job-*-job.jar)")
                .isNotNull();
        return jar;
    }

    private static void createTopics(String prefix) throws Exception {
        kafka.createTopics(2, prefix + "-requests", prefix + "-responses", prefix + "-dead-letter");
    }

    private static List<String> jobArgs(String prefix, String... extra) {
        List<String> args = new ArrayList<>(List.of(
                "--inference.kafka.bootstrap-servers", kafka.bootstrapServers(),
                "--inference.kafka.requests-topic", prefix + "-requests",
                "--inference.kafka.responses-topic", prefix + "-responses",
                "--inference.kafka.dead-letter-topic", prefix + "-dead-letter",
                "--inference.kafka.group-id", prefix,
                "--inference.kafka.starting-offsets", "earliest",
                "--inference.parallelism", "2",
                "--inference.checkpoint-interval", CHECKPOINT_INTERVAL.toMillis() + "ms"));
        args.addAll(List.of(extra));
        return args;
    }

    private static RequestTraffic traffic(String prefix, int rate) {
        return new RequestTraffic(kafka.bootstrapServers(), prefix + "-requests", prefix + "-responses", prefix, rate,
                images);
    }

    private static void awaitAnswers(RequestTraffic t, int n, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (t.answered.size() < n && System.nanoTime() < deadline) {
            t.checkHealthy();
            Thread.sleep(100);
        }
        assertThat(t.answered.size()).as("responses so far").isGreaterThanOrEqualTo(n);
    }

    private static void record(String line) {
        System.out.println(line);
        measurements.add(line);
    }

    @Test
    @Order(1)
    void savepointUpgradeUnderTrafficLosesNoRequest() throws Exception {
        // v1 runs on a simulated GPU slower than the traffic (batches of at most 8 take 20+2*8 = 36 ms,
        // ~220 requests/s): its queues stay full and backpressure holds the rest in Kafka, so requests
        // are queued in the batcher whenever the savepoint is taken.
        createTopics("upgrade");
        String v1 = cluster.runJar(jobJarId, null, 2, null, jobArgs("upgrade",
                "--inference.device.type", "simulated",
                "--inference.device.simulated.speed", "20+2*b",
                "--inference.batching.max-batch-size", "8",
                "--inference.batching.max-queue-delay", "50ms"));
        cluster.awaitJob(v1, "RUNNING"::equals, Duration.ofSeconds(90));
        try (RequestTraffic t = traffic("upgrade", 300)) {
            awaitAnswers(t, 500, Duration.ofSeconds(60));
            double queued = cluster.metricSum(v1, "GPU inference", "gpu_inference.queuedRequests").orElse(-1.0);
            long stopAt = System.currentTimeMillis();
            String savepoint = cluster.stopWithSavepoint(v1, Duration.ofSeconds(90));
            cluster.awaitJob(v1, s -> s.equals("FINISHED") || s.equals("CANCELED"), Duration.ofSeconds(30));
            long stoppedAt = System.currentTimeMillis();
            int answeredByV1 = t.answered.size();

            // v2: the same job plus a "Response audit" operator, batching 32 / 2 ms on the CPU
            Path upgradedJar = upgradedJar();
            String v2JarId = cluster.uploadJar(upgradedJar);
            int restoredBefore = restoredInLogs();
            String v2 = cluster.runJar(v2JarId, UpgradedInferenceJobMain.class.getName(), 2, savepoint,
                    jobArgs("upgrade", "--inference.device.type", "cpu",
                            "--inference.batching.max-batch-size", "32",
                            "--inference.batching.max-queue-delay", "2ms"));
            cluster.awaitJob(v2, "RUNNING"::equals, Duration.ofSeconds(90));
            long runningAt = System.currentTimeMillis();
            Thread.sleep(3000);
            t.stopSending();
            List<String> missing = t.awaitAllAnswered(Duration.ofSeconds(90));
            t.checkHealthy();

            int restored = restoredInLogs() - restoredBefore;
            double audited = cluster.metricSum(v2, "Response audit", "response_audit.successes").orElse(0.0);
            record(String.format("savepoint upgrade: %d requests accepted, %d answered (%d by v1), %d missing, "
                            + "%d duplicate responses; %.0f queued in v1's batcher just before the stop, %d restored "
                            + "from the savepoint into v2's batcher; stop-with-savepoint %d ms, v2 running %d ms after v1 "
                            + "stopped; v2's new operator saw %.0f successes",
                    t.accepted.size(), t.answered.size(), answeredByV1, missing.size(), t.duplicates(), queued,
                    restored, stoppedAt - stopAt, runningAt - stoppedAt, audited));
            assertThat(missing).as("requests never answered").isEmpty();
            assertThat(t.errors).as("error responses").isEmpty();
            assertThat(restored).as("requests queued in v1's batchers, restored into v2's from the savepoint")
                    .isPositive();
            assertThat(cluster.vertex(v2, "Response audit")).isNotNull();
            cluster.cancel(v2);
        }
    }

    @Test
    @Order(4)
    void theCoordinatorRescalesByStopWithSavepointWhereTheAdaptiveSchedulerIsNotRunning() throws Exception {
        // This cluster runs Flink's default scheduler: the adaptive scheduler's resource requirements
        // endpoint refuses an update, and the coordinator's fallback stops with a savepoint and
        // resubmits the jar at the new parallelism.
        createTopics("rescale");
        List<String> args = StopWithSavepointRescaler.withParallelism(jobArgs("rescale",
                "--inference.device.type", "simulated", "--inference.device.simulated.count", "2"), 1);
        String v1 = cluster.runJar(jobJarId, null, 1, null, args);
        cluster.awaitJob(v1, "RUNNING"::equals, Duration.ofSeconds(90));
        String inference = cluster.vertex(v1, "GPU inference");
        AdaptiveSchedulerRescaler adaptive = new AdaptiveSchedulerRescaler(cluster.rest(), Duration.ofSeconds(10));
        StopWithSavepointRescaler savepoint = new StopWithSavepointRescaler(cluster.rest(), jobJarId, args, "",
                Duration.ofSeconds(10), Duration.ofSeconds(90));
        try (RequestTraffic t = traffic("rescale", RATE)) {
            awaitAnswers(t, 300, Duration.ofSeconds(60));
            assertThatThrownBy(() -> adaptive.setParallelism(v1, inference, 2))
                    .as("the default scheduler refuses resource requirements").isInstanceOf(java.io.IOException.class);

            long started = System.currentTimeMillis();
            Rescalers.withFallback(adaptive, savepoint).setParallelism(v1, inference, 2);
            String v2 = savepoint.lastJobId();
            assertThat(v2).isNotNull().isNotEqualTo(v1);
            cluster.awaitJob(v2, "RUNNING"::equals, Duration.ofSeconds(90));
            long runningAt = System.currentTimeMillis();
            JsonNode vertex = cluster.get("/jobs/" + v2 + "/vertices/" + cluster.vertex(v2, "GPU inference"));
            assertThat(vertex.path("parallelism").asInt()).isEqualTo(2);
            Thread.sleep(3000);
            t.stopSending();
            List<String> missing = t.awaitAllAnswered(Duration.ofSeconds(90));
            t.checkHealthy();
            record(String.format("rescale 1 -> 2 by stop-with-savepoint and resubmit: %d requests accepted, %d answered, "
                    + "%d missing, %d duplicates; the new job was running %d ms after the rescale began",
                    t.accepted.size(), t.answered.size(), missing.size(), t.duplicates(), runningAt - started));
            assertThat(missing).as("requests never answered").isEmpty();
            assertThat(t.errors).as("error responses").isEmpty();
            cluster.cancel(v2);
        }
    }

    /** Requests the inference operators re-queued from restored state, per the TaskManagers' logs so far. */
    private static int restoredInLogs() throws java.io.IOException {
        Matcher m = Pattern.compile("Re-queueing (\\d+) requests restored").matcher(cluster.taskManagerLogs());
        int restored = 0;
        while (m.find()) {
            restored += Integer.parseInt(m.group(1));
        }
        return restored;
    }

    /** A copy of the job jar with the test-only {@link UpgradedInferenceJobMain} added. */
    private static Path upgradedJar() throws Exception {
        Path jar = cluster.runDir.resolve("flink-job-v2.jar");
        Files.copy(jobJar, jar, StandardCopyOption.REPLACE_EXISTING);
        Path classes = Path.of(UpgradedInferenceJobMain.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path pkg = classes.resolve("io/flinkgpu/job");
        try (FileSystem zip = FileSystems.newFileSystem(URI.create("jar:" + jar.toUri()), Map.of());
                Stream<Path> files = Files.list(pkg)) {
            for (Path c : (Iterable<Path>) files.filter(p -> p.getFileName().toString()
                    .startsWith(UpgradedInferenceJobMain.class.getSimpleName()))::iterator) {
                Files.copy(c, zip.getPath("io/flinkgpu/job", c.getFileName().toString()),
                        StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return jar;
    }

    @Test
    @Order(2)
    void killedTaskManagerAtLeastOnceEveryAcceptedRequestAnswered() throws Exception {
        atLeastOnceLatency = killTaskManagerMidStream("kill", false);
    }

    @Test
    @Order(3)
    void killedTaskManagerExactlyOnceNoDuplicates() throws Exception {
        exactlyOnceLatency = killTaskManagerMidStream("eos", true);
        if (atLeastOnceLatency != null) {
            record(String.format("exactly-once latency cost (checkpoint interval %d ms, %d requests/s): "
                            + "p50 %d -> %d ms, p99 %d -> %d ms",
                    CHECKPOINT_INTERVAL.toMillis(), RATE,
                    RequestTraffic.percentile(atLeastOnceLatency, 50), RequestTraffic.percentile(exactlyOnceLatency, 50),
                    RequestTraffic.percentile(atLeastOnceLatency, 99), RequestTraffic.percentile(exactlyOnceLatency, 99)));
        }
    }

    /** Runs the job, kills the TaskManager of the busiest inference subtask, checks every request is answered. */
    private long[] killTaskManagerMidStream(String prefix, boolean exactlyOnce) throws Exception {
        awaitTaskManagers(2);
        createTopics(prefix);
        String job = cluster.runJar(jobJarId, null, 2, null,
                jobArgs(prefix, "--inference.kafka.exactly-once", String.valueOf(exactlyOnce)));
        cluster.awaitJob(job, "RUNNING"::equals, Duration.ofSeconds(90));
        String mode = exactlyOnce ? "exactly-once" : "at-least-once";
        try (RequestTraffic t = traffic(prefix, RATE)) {
            long trafficStart = System.currentTimeMillis();
            awaitAnswers(t, 300, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (cluster.completedCheckpoints(job) < 2 && System.nanoTime() < deadline) {
                Thread.sleep(200);
            }
            Thread.sleep(4000);
            long steadyFrom = trafficStart + 3000;
            String victim = cluster.busiestTaskManager(job, "GPU inference");
            Map<String, String> placement = cluster.placement(job);
            System.out.printf("%s: killing %s (pid %d); subtasks: %s%n", mode, victim, cluster.pid(victim), placement);
            assertThat(placement).as("the TaskManager to kill runs part of the job").containsValue(victim);
            long killAt = System.currentTimeMillis();
            cluster.killTaskManager(victim);

            long detectedAt = -1;
            long recoveredAt = -1;
            long until = System.currentTimeMillis() + 120_000;
            java.util.List<String> states = new ArrayList<>();
            while (System.currentTimeMillis() < until) {
                String state;
                try {
                    state = cluster.jobState(job);
                } catch (java.io.IOException e) {
                    state = "?";
                }
                if (states.isEmpty() || !states.get(states.size() - 1).endsWith(" " + state)) {
                    states.add((System.currentTimeMillis() - killAt) + "ms " + state);
                }
                if (detectedAt < 0 && !state.equals("RUNNING")) {
                    detectedAt = System.currentTimeMillis();
                }
                if (detectedAt < 0) { // the restart may have been quicker than this loop's polling
                    try {
                        long failed = cluster.lastFailureMillis(job);
                        if (failed >= killAt) {
                            detectedAt = failed;
                            states.add((failed - killAt) + "ms FAILED (exception history)");
                        }
                    } catch (java.io.IOException e) {
                        // the JobManager is busy restarting: ask again
                    }
                }
                if (detectedAt >= 0 && state.equals("RUNNING")) {
                    recoveredAt = System.currentTimeMillis();
                    break;
                }
                Thread.sleep(100);
            }
            assertThat(recoveredAt).as("job running again after the TaskManager was killed; states " + states
                            + "\n" + cluster.logTails())
                    .isPositive();
            // a replacement TaskManager, as a supervisor would start (for the next scenario)
            cluster.startTaskManager(exactlyOnce ? 4 : 3);
            awaitAnswers(t, t.answered.size() + 300, Duration.ofSeconds(60));
            t.stopSending();
            List<String> missing = t.awaitAllAnswered(Duration.ofSeconds(90));
            // steady-state latency: requests sent from 3 s after the start until 3 s before the kill (their
            // responses were committed before it, also under exactly-once with 2 s checkpoints)
            long[] latency = t.latenciesMs(steadyFrom, killAt - 3000);
            long firstAfterRecovery = t.arrivals.stream().filter(a -> a >= killAt).findFirst().orElse(-1L);
            t.checkHealthy();

            record(String.format("TaskManager kill (%s, %s killed): %d requests accepted, %d missing, %d duplicate "
                            + "responses for %d ids; failure noticed %d ms after the kill, job running again after %d ms, "
                            + "longest gap between responses %d ms; steady latency before the kill p50 %d ms p99 %d ms "
                            + "(%d samples)",
                    mode, victim, t.accepted.size(), missing.size(), t.duplicates(), t.duplicateIds(),
                    detectedAt - killAt, recoveredAt - killAt, t.longestGapAfter(killAt - 1000),
                    RequestTraffic.percentile(latency, 50), RequestTraffic.percentile(latency, 99), latency.length));
            assertThat(firstAfterRecovery).isPositive();
            assertThat(missing).as("accepted requests never answered").isEmpty();
            assertThat(t.errors).as("error responses").isEmpty();
            if (exactlyOnce) {
                assertThat(t.duplicates()).as("duplicate responses under exactly-once").isZero();
            }
            cluster.cancel(job);
            return latency;
        }
    }

    private static void awaitTaskManagers(int n) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (System.nanoTime() < deadline) {
            var overview = cluster.get("/overview");
            if (overview.path("taskmanagers").asInt() == n && overview.path("slots-available").asInt() >= 2 * n) {
                return;
            }
            Thread.sleep(250);
        }
        throw new AssertionError("not " + n + " TaskManagers: " + cluster.get("/overview"));
    }
}
