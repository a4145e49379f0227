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
import io.flinkgpu.coordinator.CycleSchedule;
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
    static final RequestParameters PARAMETERS = new RequestParameters(0, 0, "bench");

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
        run.loadAverageStart = CoordinatedJob.loadAverage();
        try (CoordinatedJob job = CoordinatedJob.start(kafka, repository, stateRoot, "recovery-" + name, options.speed,
                options.fetchMs, settle);
                KafkaTraffic traffic = job.traffic()) {
            run.maxBatch = job.maxBatch(RecoveryBenchmark.STEPPED);
            List<KafkaTarget> models = new ArrayList<>();
            for (String model : options.models()) {
                models.add(traffic.stream((id, seq) -> images.request(id, seq, model, PARAMETERS)));
            }
            CoordinatedJob.warmUp(traffic, models);
            Configuration config = job.coordinatorConfig(options.cycleMs, options.sloMs, options.targetUtilization,
                    settle);
            Coordinator coordinator = withCoordinator ? job.coordinator(config) : null;
            measure(run, traffic, models, coordinator, job.collector, CycleSchedule.fromConfig(config));
        }
        run.loadAverageEnd = CoordinatedJob.loadAverage();
        return run;
    }

    /**
     * Phase 1 and 2 of open-loop traffic, the stepped model's rate stepping at t0, the same arrivals
     * in every configuration; the control loop runs alongside from the start to the end of phase 2.
     */
    private void measure(RecoveryRun run, KafkaTraffic traffic, List<KafkaTarget> models, Coordinator coordinator,
            MetricCollector collector, CycleSchedule schedule) throws Exception {
        long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
        long before = TimeUnit.SECONDS.toNanos(options.beforeSeconds);
        long t0 = start + before;
        long end = t0 + TimeUnit.SECONDS.toNanos(options.afterSeconds);
        long t0WallMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(t0 - System.nanoTime());
        run.t0Nanos = t0;
        run.t0WallMillis = t0WallMillis;

        List<LoadDriver.Stream> streams = new ArrayList<>();
        for (int m = 0; m < models.size(); m++) {
            ArrivalSchedule.Rate rate = m == 0 ? ArrivalSchedule.Rate.step(options.rate, options.rate * options.step,
                    before) : ArrivalSchedule.Rate.constant(options.steadyRate);
            streams.add(new LoadDriver.Stream(models.get(m), traffic.newRun(), rate, new Random(42 + m)));
        }
        ControlLoop loop = new ControlLoop(run, coordinator, collector, schedule, start, t0, end);
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
}
