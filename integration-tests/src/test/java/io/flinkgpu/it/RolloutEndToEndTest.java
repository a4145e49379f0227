package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.VersionSplit.VersionWeight;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.coordinator.rollout.Rollout;
import io.flinkgpu.coordinator.rollout.RolloutEngine;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Gray releases end to end: the coordinator (REST collector, rollout engine, Kafka realizer,
 * RocksDB state, a cycle every second) against the real Kafka job on the MiniCluster (one
 * simulated GPU, 2 + 1 ms per sample on top of the real ONNX Runtime run), serving
 * {@code fashion-mnist-cnn} in versions 1 and 2 to 100 unpinned requests per second.
 *
 * <ul>
 *   <li>good B (version 2 a copy of 1): promoted 5% -> 25% -> 50% -> 100%, no error of either;
 *   <li>bad B (version 2 a different model, {@code affine-fp32}, whose input the requests do not
 *       fit, so every request routed to it is answered with an error code): rolled back from the 5%
 *       step, after which every request is answered by version 1. Prints the time from the bad
 *       step's first request to the rollback and the number of requests version 2 answered badly.
 * </ul>
 *
 * Parameters: {@code coordinator.rollout.min-dwell} 3 s, {@code min-samples} 30,
 * {@code significance} 0.01, {@code latency-tolerance} 4 (batch latencies on a shared 2-core
 * machine are noisy; the latency rule itself is covered by the unit tests), {@code latency-min-batches}
 * 20 (a step waits for them), default steps.
 */
class RolloutEndToEndTest extends KafkaAndImages {
    static final String MODEL = "fashion-mnist-cnn";
    static final int RATE = 100;

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(2);

    @TempDir
    Path tmp;

    /** A repository with the CNN as version 1 and {@code version2} as version 2. */
    Path repository(Path version2) throws Exception {
        Path repo = tmp.resolve("repo");
        TestJobs.copyModel(root.resolve("models"), MODEL, repo, null);
        Files.createDirectories(repo.resolve(MODEL).resolve("2"));
        Files.copy(version2, repo.resolve(MODEL).resolve("2").resolve("model.onnx"));
        return repo;
    }

    /** The job, the coordinator with a rollout 1 -> 2 started before any request, and its loop. */
    final class Setup implements AutoCloseable {
        final String prefix;
        volatile StateStore store;
        final KafkaPlanRealizer realizer;
        volatile Coordinator coordinator;
        final Configuration coordinatorConfig;
        final MetricCollector collector;
        final JobClient client;
        final String jobId;
        final FlinkRest rest = FlinkRest.of(FLINK);
        final Thread loop;
        volatile boolean stop;

        Setup(String prefix, Path repo) throws Exception {
            this(prefix, repo, new RolloutEngine.Request(MODEL, "1", "2", null, null, null, null));
        }

        Setup(String prefix, Path repo, RolloutEngine.Request request) throws Exception {
            this.prefix = prefix;
            String control = prefix + "-control";
            Configuration job = TestJobs.config(kafka, prefix, 1, repo);
            kafka.createTopics(1, control);
            job.set(InferenceJobOptions.CONTROL_TOPIC, control);
            job.set(InferenceJobOptions.PARALLELISM, 1);
            job.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(2));
            job.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
            job.set(GpuInferenceOptions.SIMULATED_DEVICES, 1);
            job.set(GpuInferenceOptions.SIMULATED_SPEED, "2+1*b");

            Configuration config = new Configuration();
            config.set(CoordinatorOptions.ROLLOUT_MIN_DWELL, Duration.ofSeconds(3));
            config.set(CoordinatorOptions.ROLLOUT_MIN_SAMPLES, 30L);
            config.set(CoordinatorOptions.ROLLOUT_SIGNIFICANCE, 0.01);
            config.set(CoordinatorOptions.ROLLOUT_LATENCY_TOLERANCE, 4.0);
            // a step waits for this many batches of each version (5 requests/s reach B at 5%)
            config.set(CoordinatorOptions.ROLLOUT_LATENCY_MIN_BATCHES, 20L);
            // a version that never loads (the bad one) waits this long in the warming phase
            config.set(CoordinatorOptions.WARM_TIMEOUT, Duration.ofSeconds(10));
            store = RocksDbStateStore.open(tmp.resolve("state"));
            realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), control, Duration.ofSeconds(20));
            client = TestJobs.start(job, 1, prefix);
            jobId = client.getJobID().toString();
            collector = new MetricCollector(rest.baseUrl(), jobId, "GPU inference",
                    Duration.ofSeconds(5), Clock.systemUTC(), Duration.ofMillis(300));
            coordinatorConfig = config;
            coordinator = new Coordinator(config, collector, realizer, store, new CoordinatorMetrics(),
                    Clock.systemUTC());
            if (request != null) {
                startRollout(request);
            }
            loop = new Thread(() -> {
                while (!stop) {
                    try {
                        synchronized (this) {
                            coordinator.runOnce(false);
                        }
                        Thread.sleep(1000);
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        e.printStackTrace();
                    }
                }
            }, "coordinator-loop");
            loop.start();
        }

        /** As POST /api/rollouts does: starts the rollout, then publishes its split at once. */
        synchronized void startRollout(RolloutEngine.Request request) throws Exception {
            coordinator.rollouts().start(request, System.currentTimeMillis());
            coordinator.publishVersionSplits("rollout of " + MODEL + " started");
            awaitApplied(store.lastEpoch());
        }

        /** Until the job reports {@code version} of the model loaded on some subtask. */
        void awaitLoaded(String version, Duration timeout) throws Exception {
            long deadline = System.nanoTime() + timeout.toNanos();
            MetricSnapshot snapshot = null;
            while (System.nanoTime() < deadline) {
                try {
                    synchronized (this) {
                        snapshot = collector.collect();
                    }
                } catch (io.flinkgpu.coordinator.collect.MetricSource.CollectException e) {
                    Thread.sleep(500); // the job is still starting
                    continue;
                }
                if (snapshot.subtasks().stream().flatMap(t -> t.models().stream()).anyMatch(m ->
                        m.model().equals(MODEL) && m.version().equals(version) && m.reportsLoaded())) {
                    return;
                }
                Thread.sleep(500);
            }
            throw new AssertionError("the job never reported version " + version + " loaded: " + snapshot);
        }

        /**
         * A coordinator restart between two cycles: the state store is closed, opened again from its
         * folder and a new coordinator starts from it, as after a crash of the coordinator's process.
         */
        synchronized Rollout restartCoordinator() throws Exception {
            store.close();
            store = RocksDbStateStore.open(tmp.resolve("state"));
            coordinator = new Coordinator(coordinatorConfig, collector, realizer, store, new CoordinatorMetrics(),
                    Clock.systemUTC());
            return coordinator.rollouts().get(MODEL).orElseThrow();
        }

        /** Until the job's plan router holds epoch {@code epoch} or newer. */
        void awaitApplied(long epoch) throws Exception {
            rest.awaitSubtaskMetrics(jobId, "Plan router", 1, List.of(".control.planEpoch"), -1,
                    m -> m.get(0).get("planEpoch") >= epoch, Duration.ofSeconds(60),
                    "the job never applied plan epoch " + epoch);
        }

        Rollout rollout() {
            return coordinator.rollouts().get(MODEL).orElseThrow();
        }

        Rollout awaitRollout(Predicate<Rollout> done, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                if (done.test(rollout())) {
                    return rollout();
                }
                Thread.sleep(200);
            }
            throw new AssertionError("rollout still " + rollout() + "; decisions " + store.recentDecisions(30));
        }

        /**
         * Until the last published plan splits the model as {@code expected} (the engine's state changes
         * within a cycle a moment before that cycle publishes the split).
         */
        void awaitPublishedSplit(VersionWeight... expected) throws InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            List<VersionWeight> last = null;
            while (System.nanoTime() < deadline) {
                last = store.lastPlan().flatMap(p -> p.versionSplit(MODEL)).map(v -> v.versions()).orElse(null);
                if (List.of(expected).equals(last)) {
                    return;
                }
                Thread.sleep(100);
            }
            throw new AssertionError("the last published split is " + last + ", not " + List.of(expected));
        }

        /** Every response on the responses topic once {@code n} arrived, by request id. */
        Map<String, InferenceResponse> responses(int n) throws Exception {
            List<ConsumerRecord<byte[], byte[]>> out = KafkaTopics.read(kafka.bootstrapServers(),
                    TestJobs.responses(prefix), got -> got.size() >= n, Duration.ofMinutes(2), Duration.ofSeconds(2));
            Map<String, InferenceResponse> byId = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : out) {
                InferenceResponse resp = WireFormat.JSON.decodeResponse(r.value());
                byId.putIfAbsent(resp.id(), resp);
            }
            return byId;
        }

        @Override
        public void close() throws Exception {
            stop = true;
            loop.interrupt();
            loop.join();
            try {
                client.cancel().get();
            } finally {
                realizer.close();
                store.close();
            }
        }
    }

    /** Answers and error answers per version. */
    static Map<String, int[]> byVersion(Map<String, InferenceResponse> responses) {
        Map<String, int[]> out = new TreeMap<>();
        responses.values().forEach(r -> {
            int[] c = out.computeIfAbsent(String.valueOf(r.modelVersion()), k -> new int[2]);
            c[0]++;
            if (r.isError()) {
                c[1]++;
            }
        });
        return out;
    }

    static String describe(Map<String, int[]> counts) {
        StringBuilder b = new StringBuilder();
        counts.forEach((v, c) -> b.append(b.length() == 0 ? "" : ", ").append("version ").append(v).append(": ")
                .append(c[0]).append(" answers, ").append(c[1]).append(" errors"));
        return b.toString();
    }

    @Test
    void aGoodVersionIsRolledOutToEveryRequestWithoutErrors() throws Exception {
        Path model = root.resolve("models").resolve(MODEL).resolve("1").resolve("model.onnx");
        try (Setup s = new Setup("rollout-good", repository(model));
                Traffic traffic = trafficOf(s)) {
            long startedAt = System.nanoTime();
            Rollout done = s.awaitRollout(r -> !r.state().active(), Duration.ofMinutes(3));
            double seconds = (System.nanoTime() - startedAt) / 1e9;
            assertThat(done.state()).as(done.reason()).isEqualTo(Rollout.State.DONE);
            List<Decision> decisions = s.store.recentDecisions(500).stream()
                    .filter(d -> d.action().startsWith("ROLLOUT_")).toList();
            // started before any request: 2 is warmed once the job reports 1 serving (ROLLOUT_WARM), or not
            // at all if its first report shows 1 loaded nowhere yet; either way the steps begin at ROLLOUT_WARMED
            assertThat(decisions).extracting(Decision::action).filteredOn(a -> !a.equals("ROLLOUT_WARM"))
                    .containsExactly("ROLLOUT_START", "ROLLOUT_WARMED", "ROLLOUT_PROMOTE", "ROLLOUT_PROMOTE",
                            "ROLLOUT_DONE");
            decisions.forEach(d -> System.out.println("rollout decision: " + d.action() + ": " + d.reason()));
            s.awaitPublishedSplit(new VersionWeight("2", 1));
            System.out.printf("good version: 5%% -> 25%% -> 50%% -> 100%% in %.1f s from the first request%n", seconds);

            // 100% to 2 is in force: what is sent from now on is answered by version 2
            s.awaitApplied(s.store.lastEpoch());
            int mark = traffic.sent.get();
            Thread.sleep(2000);
            Map<String, InferenceResponse> responses = stopAndCollect(s, traffic);
            // no error beyond A's rate: neither version answered an error
            Map<String, int[]> counts = bothVersionsWithoutError(responses, "good version");
            assertThat(counts.get("2")[0]).isGreaterThan(100);
            for (int i = mark; i < traffic.sent.get(); i++) {
                assertThat(responses.get("req-" + i).modelVersion()).as("req-%d", i).isEqualTo("2");
            }
        }
    }

    @Test
    void aRolloutStartedUnderTrafficLoadsTheNewVersionBeforeItGetsAShare() throws Exception {
        Path model = root.resolve("models").resolve(MODEL).resolve("1").resolve("model.onnx");
        try (Setup s = new Setup("rollout-warm", repository(model), null);
                Traffic traffic = trafficOf(s)) {
            // without a rollout the job serves the latest version, 2; so this rollout goes from 2 to 1 (the
            // engine does not care which version is newer), and 1 is loaded nowhere when it starts
            s.awaitLoaded("2", Duration.ofMinutes(1));
            s.startRollout(new RolloutEngine.Request(MODEL, "2", "1", null, null, null, null));
            Rollout done = s.awaitRollout(r -> !r.state().active(), Duration.ofMinutes(3));
            assertThat(done.state()).as(done.reason()).isEqualTo(Rollout.State.DONE);
            List<Decision> decisions = s.store.recentDecisions(500).stream()
                    .filter(d -> d.action().startsWith("ROLLOUT_")).toList();
            decisions.forEach(d -> System.out.println("rollout decision: " + d.action() + ": " + d.reason()));
            // the LOAD of 1 went where 2 serves, and the first step began once the job reported 1 loaded there
            assertThat(decisions).extracting(Decision::action).containsExactly("ROLLOUT_START", "ROLLOUT_WARM",
                    "ROLLOUT_WARMED", "ROLLOUT_PROMOTE", "ROLLOUT_PROMOTE", "ROLLOUT_DONE");
            assertThat(decisions.get(1).reason()).contains("LOAD 1 on subtask(s) [0], where 2 serves");
            assertThat(decisions.get(2).reason()).contains("1 reported loaded on [0] after",
                    "begins rollout 2 -> 1: step 1 of 4 (5% to 1)");
            assertThat(s.store.recentDecisions(500)).anySatisfy(d ->
                    assertThat(d.reason()).contains("LOAD " + MODEL + ":1 on subtask 0"));
            // done: 2 serves no share any more, so it is unloaded where 1 was warmed, in the plan of the last split
            assertThat(decisions.get(5).reason()).contains("done (100% to 1); UNLOAD 2 from subtask(s) [0]");
            assertThat(s.store.recentDecisions(500)).anySatisfy(d ->
                    assertThat(d.reason()).contains("UNLOAD " + MODEL + ":2 on subtask 0"));

            s.awaitPublishedSplit(new VersionWeight("1", 1));
            s.awaitApplied(s.store.lastEpoch());
            Thread.sleep(1000);
            bothVersionsWithoutError(stopAndCollect(s, traffic), "warmed version");
        }
    }

    /** Stops the traffic and returns every answer by request id, once each request sent has one. */
    static Map<String, InferenceResponse> stopAndCollect(Setup s, Traffic traffic) throws Exception {
        traffic.close();
        Map<String, InferenceResponse> responses = s.responses(traffic.sent.get());
        assertThat(responses).hasSize(traffic.sent.get());
        return responses;
    }

    /** The answers per version, checked: versions 1 and 2 both answered, and neither with an error. */
    static Map<String, int[]> bothVersionsWithoutError(Map<String, InferenceResponse> responses, String label) {
        Map<String, int[]> counts = byVersion(responses);
        System.out.println(label + " answers: " + describe(counts));
        assertThat(counts.keySet()).containsExactly("1", "2");
        assertThat(counts.get("1")[1]).isZero();
        assertThat(counts.get("2")[1]).isZero();
        return counts;
    }

    @Test
    void aVersionWhoseAnswersFailIsRolledBackFromItsFirstStep() throws Exception {
        Path wrong = root.resolve("gpu-operator-udf/src/test/resources/models/affine-fp32/1/model.onnx");
        try (Setup s = new Setup("rollout-bad", repository(wrong));
                Traffic traffic = trafficOf(s)) {
            Rollout back = s.awaitRollout(r -> !r.state().active(), Duration.ofMinutes(2));
            assertThat(back.state()).as(back.reason()).isEqualTo(Rollout.State.ROLLED_BACK);
            assertThat(back.step()).isZero();
            Decision rollback = s.store.recentDecisions(500).stream()
                    .filter(d -> d.action().equals("ROLLOUT_ROLLBACK")).findFirst().orElseThrow();
            System.out.println("rollout decision: " + rollback.reason());
            assertThat(rollback.reason()).contains("2 is worse (error rate");
            s.awaitPublishedSplit(new VersionWeight("1", 1));
            // the 5% step began when the warming phase ended: at once, or, if the job reported version 1
            // serving first, after the warm timeout, since version 2 fails to load and is never reported loaded
            Decision stepBegan = s.store.recentDecisions(500).stream()
                    .filter(d -> d.action().equals("ROLLOUT_WARMED")).findFirst().orElseThrow();
            System.out.println("rollout decision: " + stepBegan.reason());
            long toRollback = rollback.atMillis() - stepBegan.atMillis();

            // once the rollback plan is applied every request goes to version 1 and is answered
            s.awaitApplied(s.store.lastEpoch());
            int mark = traffic.sent.get();
            Thread.sleep(2000);
            traffic.close();
            Map<String, InferenceResponse> responses = s.responses(traffic.sent.get());
            assertThat(responses).hasSize(traffic.sent.get());
            Map<String, int[]> counts = byVersion(responses);
            System.out.println("bad version answers: " + describe(counts));
            assertThat(counts.get("1")[1]).as("errors of version 1").isZero();
            assertThat(counts.get("2")[0]).as("every answer of version 2 is an error").isEqualTo(counts.get("2")[1])
                    .isPositive();
            for (int i = mark; i < traffic.sent.get(); i++) {
                InferenceResponse r = responses.get("req-" + i);
                assertThat(r.modelVersion()).as("req-%d", i).isEqualTo("1");
                assertThat(r.isError()).as("req-%d", i).isFalse();
            }
            System.out.printf("bad version: rolled back %d ms after its 5%% step began; "
                    + "version 2 answered %d requests with an error (%s)%n", toRollback, counts.get("2")[1],
                    responses.values().stream().filter(InferenceResponse::isError).map(r -> r.error().code().name())
                            .distinct().toList());
            assertThat(toRollback).isLessThan(Duration.ofSeconds(30).toMillis());
        }
    }

    @Test
    void aCoordinatorRestartInTheMiddleOfARolloutResumesAtTheSameStep() throws Exception {
        Path model = root.resolve("models").resolve(MODEL).resolve("1").resolve("model.onnx");
        try (Setup s = new Setup("rollout-restart", repository(model));
                Traffic traffic = trafficOf(s)) {
            Rollout before = s.awaitRollout(r -> r.step() >= 1, Duration.ofMinutes(2));
            Rollout resumed = s.restartCoordinator();
            assertThat(resumed.state()).isEqualTo(before.state());
            assertThat(resumed.step()).as("the step after the restart").isEqualTo(before.step());
            assertThat(s.coordinator.rollouts().splits()).isNotEmpty();
            Rollout done = s.awaitRollout(r -> !r.state().active(), Duration.ofMinutes(3));
            assertThat(done.state()).as(done.reason()).isEqualTo(Rollout.State.DONE);
            // one promotion per step across the restart: none repeated, none skipped
            assertThat(s.store.recentDecisions(500).stream().map(Decision::action)
                    .filter(a -> a.startsWith("ROLLOUT_") && !a.equals("ROLLOUT_WARM")).toList())
                    .containsExactly("ROLLOUT_START", "ROLLOUT_WARMED", "ROLLOUT_PROMOTE", "ROLLOUT_PROMOTE", "ROLLOUT_DONE");
            traffic.close();
            Map<String, InferenceResponse> responses = s.responses(traffic.sent.get());
            assertThat(responses).hasSize(traffic.sent.get());
            assertThat(responses.values()).noneMatch(InferenceResponse::isError);
            System.out.printf("restart: resumed at step %d of the rollout; done with %s%n", resumed.step(),
                    describe(byVersion(responses)));
        }
    }

    @Test
    void inShadowModeABadVersionIsComparedNeverReturnedAndRolledBack() throws Exception {
        Path wrong = root.resolve("gpu-operator-udf/src/test/resources/models/affine-fp32/1/model.onnx");
        RolloutEngine.Request shadow = new RolloutEngine.Request(MODEL, "1", "2", Rollout.Mode.SHADOW, null, 0.5, null);
        try (Setup s = new Setup("rollout-shadow", repository(wrong), shadow);
                Traffic traffic = trafficOf(s)) {
            // the job compares the shadow's answers with the served ones, under the shadow version
            String v2 = ".gpu_inference.model." + MODEL + ".version.2.";
            Map<Integer, Map<String, Double>> compared = s.rest.awaitSubtaskMetrics(s.jobId, "GPU inference", 1,
                    List.of(v2 + "shadowCompared", v2 + "shadowDisagreed"), -1,
                    m -> m.get(0).get("shadowCompared") >= 5, Duration.ofSeconds(90),
                    "the job never compared shadow answers");
            // every shadow answer of the bad version differs from the served one
            assertThat(compared.get(0).get("shadowDisagreed")).isEqualTo(compared.get(0).get("shadowCompared"));
            Rollout back = s.awaitRollout(r -> !r.state().active(), Duration.ofMinutes(2));
            assertThat(back.state()).as(back.reason()).isEqualTo(Rollout.State.ROLLED_BACK);
            Decision rollback = s.store.recentDecisions(500).stream()
                    .filter(d -> d.action().equals("ROLLOUT_ROLLBACK")).findFirst().orElseThrow();
            System.out.println("shadow rollout decision: " + rollback.reason());
            Thread.sleep(1000);
            traffic.close();
            List<ConsumerRecord<byte[], byte[]>> records = KafkaTopics.read(kafka.bootstrapServers(),
                    TestJobs.responses(s.prefix), got -> got.size() >= traffic.sent.get(), Duration.ofMinutes(2),
                    Duration.ofSeconds(2));
            Map<String, InferenceResponse> responses = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : records) {
                InferenceResponse resp = WireFormat.JSON.decodeResponse(r.value());
                assertThat(responses.put(resp.id(), resp)).as("answered once: %s", resp.id()).isNull();
            }
            // every request answered once, by version 1, without error: the shadow's answers were never returned
            assertThat(responses).hasSize(traffic.sent.get());
            assertThat(byVersion(responses).keySet()).containsExactly("1");
            assertThat(responses.values()).noneMatch(InferenceResponse::isError);
            System.out.printf("shadow: %d requests answered by version 1; the job compared %.0f shadow answers, "
                    + "%.0f differed%n", responses.size(), compared.get(0).get("shadowCompared"),
                    compared.get(0).get("shadowDisagreed"));
        }
    }

    private static Traffic trafficOf(Setup s) {
        return new Traffic(TestJobs.requests(s.prefix), RATE);
    }

    /** Unpinned requests {@code req-0, req-1, ...} at {@code rate} per second until closed; counts what it sent. */
    static final class Traffic implements AutoCloseable {
        final java.util.concurrent.atomic.AtomicInteger sent = new java.util.concurrent.atomic.AtomicInteger();
        private final Thread thread;
        private volatile boolean stop;

        Traffic(String topic, int rate) {
            java.util.Properties p = new java.util.Properties();
            p.setProperty("bootstrap.servers", kafka.bootstrapServers());
            p.setProperty("linger.ms", "2");
            io.flinkgpu.inference.protocol.JsonCodec codec = new io.flinkgpu.inference.protocol.JsonCodec();
            thread = new Thread(() -> {
                try (org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> producer =
                        new org.apache.kafka.clients.producer.KafkaProducer<>(p,
                                new org.apache.kafka.common.serialization.ByteArraySerializer(),
                                new org.apache.kafka.common.serialization.ByteArraySerializer())) {
                    long next = System.nanoTime();
                    while (!stop) {
                        int i = sent.get();
                        io.flinkgpu.inference.protocol.InferenceRequest r = new io.flinkgpu.inference.protocol
                                .InferenceRequest("req-" + i, MODEL, null, List.of(io.flinkgpu.inference.protocol.Tensor
                                        .ofFloats("input", new long[] {1, 1, 28, 28}, images.image(i % images.size()))),
                                new io.flinkgpu.inference.protocol.RequestParameters(0, 0, "it"));
                        producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>(topic,
                                r.id().getBytes(java.nio.charset.StandardCharsets.UTF_8), codec.encodeRequest(r)));
                        sent.incrementAndGet();
                        next += 1_000_000_000L / rate;
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                        }
                    }
                    producer.flush();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, "traffic");
            thread.start();
        }

        @Override
        public void close() {
            stop = true;
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
