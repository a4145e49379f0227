package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.bench.sut.KafkaTarget;
import io.flinkgpu.bench.sut.KafkaTraffic;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.CycleSchedule;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * Autoscaling through a load ramp, on the real path of {@link RecoveryBenchmark} (in-process Kafka
 * broker, the Kafka job with its control topic on two simulated GPUs at parallelism 2, the
 * coordinator as a thread with RocksDB state): one model, the shipped Fashion-MNIST CNN, gets
 * open-loop Poisson traffic at 1x, a linear ramp to {@code --factor}x, that peak, a ramp back down
 * and 1x again ({@code --phases}). 1x fits the model's one device with room; the peak needs more
 * than one. A lead-in at 1x ({@code --lead-in-seconds}, not measured) precedes the phases, so
 * that the coordinator's first cycles are behind it. Side by side, with the same arrivals:
 *
 * <ul>
 *   <li><b>coordinator</b>: the coordinator as shipped (its demand forecast on) runs a cycle every
 *       {@code --cycle-ms} and adds and removes replicas of the model;
 *   <li><b>static</b>: the same job with nothing published on the control topic: the model stays on
 *       its hash subtask, one device, the parallelism as started.
 * </ul>
 *
 * Measured from the load generator: SLO attainment (requests answered without error within
 * {@code --slo-ms}, end to end from the intended send time) overall and per phase, p99 per 1-s
 * window; from the control loop: the model's replicas in the plan in force per cycle, when it
 * scaled out and in, and the reversals of its replica count. Writes {@code ramp.json},
 * {@code ramp.md}, {@code ramp-p99.png} and {@code ramp-replicas.png} to {@code --out} and records
 * the targets of scenario "coordinator_ramp" in {@code --summary}.
 */
@Command(name = "ramp-benchmark", mixinStandardHelpOptions = true,
        description = "Coordinator autoscaling vs static placement through a 1x -> 3x -> 1x load ramp")
public final class RampBenchmark implements Callable<Integer> {
    static final String MODEL = RecoveryBenchmark.SOURCE_MODEL;
    static final String COORDINATOR = "coordinator";
    static final String STATIC = "static";

    @Mixin
    RampOptions options = new RampOptions();

    public static void main(String[] args) {
        System.exit(new CommandLine(new RampBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (options.summaryOnly) {
            RampReport.record((ObjectNode) new ObjectMapper().readTree(options.out.resolve("ramp.json").toFile()),
                    options.summary);
            return 0;
        }
        if (options.leadInSeconds < 0) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--lead-in-seconds must not be negative");
        }
        for (String c : options.configs) {
            if (!List.of(COORDINATOR, STATIC).contains(c)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown configuration " + c
                        + "; use " + COORDINATOR + " and/or " + STATIC);
            }
        }
        RampProfile profile;
        try {
            profile = options.profile();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), e.getMessage());
        }
        ObjectMapper json = new ObjectMapper();
        Files.createDirectories(options.out);
        Path root = FashionMnist.findRoot();
        ImageScenario images = new ImageScenario(root);
        Path repo = root.resolve("benchmarks/target/ramp-repo");
        CoordinatedJob.deleteRecursively(repo);
        ModelRepoWriter.copy(root.resolve("models").resolve(MODEL), repo, MODEL, true, config -> {});
        ObjectNode result = json.createObjectNode();
        result.put("started", Instant.now().toString());
        result.put("git", ToolFiles.revision());
        result.put("command", options.command());
        result.put("machine", RecoveryReport.machine());
        List<RecoveryRun> runs = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            for (String c : options.configs) {
                System.out.println("=== " + c + " ===");
                runs.add(run(kafka, repo, root.resolve("benchmarks/target/ramp-state"), images, profile, c,
                        c.equals(COORDINATOR)));
            }
        }
        result.put("finished", Instant.now().toString());
        new RampReport(options, profile).write(result, runs);
        RampReport.record(result, options.summary);
        return 0;
    }

    private RecoveryRun run(EmbeddedKafka kafka, Path repo, Path stateRoot, ImageScenario images, RampProfile profile,
            String name, boolean withCoordinator) throws Exception {
        RecoveryRun run = new RecoveryRun(name, withCoordinator);
        run.loadAverageStart = CoordinatedJob.loadAverage();
        try (CoordinatedJob job = CoordinatedJob.start(kafka, repo, stateRoot, "ramp-" + name, options.speed,
                options.fetchMs, options.settleMs);
                KafkaTraffic traffic = job.traffic()) {
            KafkaTarget model = traffic.stream((id, seq) -> images.request(id, seq, MODEL, RecoveryRunner.PARAMETERS));
            CoordinatedJob.warmUp(traffic, List.of(model));
            Configuration c = job.coordinatorConfig(options.cycleMs, options.sloMs, options.targetUtilization,
                    options.settleMs);
            c.set(CoordinatorOptions.FORECAST_HORIZON, Duration.ofSeconds(options.forecastHorizonSeconds));
            Coordinator coordinator = withCoordinator ? job.coordinator(c) : null;
            // the lead-in (1x, coordinator running, not measured), then the phases from t0
            long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
            long t0 = start + TimeUnit.SECONDS.toNanos(options.leadInSeconds);
            long end = t0 + TimeUnit.SECONDS.toNanos(profile.total());
            run.t0Nanos = t0;
            run.t0WallMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(t0 - System.nanoTime());
            double leadIn = options.leadInSeconds;
            LoadDriver.Stream stream = new LoadDriver.Stream(model, traffic.newRun(),
                    offset -> profile.rateAt(offset / 1e9 - leadIn), new Random(42));
            ControlLoop loop = new ControlLoop(run, coordinator, job.collector, CycleSchedule.fromConfig(c), start, t0,
                    end, MODEL, () -> {});
            Thread control = new Thread(loop, "control-loop");
            control.start();
            try {
                run.answers = LoadDriver.timed(List.of(stream), start, end, Duration.ofSeconds(options.drainSeconds));
            } finally {
                loop.stop();
                control.join();
            }
            if (coordinator != null) {
                long t0Millis = run.t0WallMillis;
                List<Decision> all = coordinator.store().recentDecisions(10_000);
                run.decisionsAfterStep = all.stream().filter(d -> d.atMillis() >= t0Millis).toList();
                run.decisionsBeforeStep = all.stream().filter(d -> d.atMillis() < t0Millis).toList();
            }
            System.out.printf(Locale.ROOT, "%s: sent %d, answered %d (%d errors), unanswered %d%n", name, run.sent(0),
                    run.answered(), run.errors(), run.unanswered());
        }
        run.loadAverageEnd = CoordinatedJob.loadAverage();
        return run;
    }
}
