package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryOptions.num;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.ArrivalSchedule;
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
import io.flinkgpu.coordinator.rollout.Rollout;
import io.flinkgpu.coordinator.rollout.RolloutEngine;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Gray releases through the real path of {@link RecoveryBenchmark} (in-process Kafka broker, the
 * Kafka job with its control topic on two simulated GPUs, the coordinator as a thread with its REST
 * collector, rollout engine, Kafka realizer and RocksDB state): {@code fashion-mnist-cnn} in
 * versions 1 (A) and 2 (B), open-loop Poisson traffic of unpinned requests at {@code --rate}, a
 * rollout 1 -> 2 started as {@code POST /api/rollouts} starts one (start, then publish the split at
 * once) right when the measured traffic begins. In every case B is a copy of A (identical weights);
 * what makes a B bad is the simulated GPUs' treatment of version 2, as a slower build or one that
 * fails on some inputs would behave. Cases, each on a fresh job:
 *
 * <ul>
 *   <li><b>good</b>: B runs as A does: canary steps to 100%;
 *   <li><b>bad-slow</b>: B's batches take {@code --slow-speed} (by default 100 ms more per batch and
 *       ten times A's cost per sample, {@code inference.device.simulated.model-speeds}
 *       {@code model:2=...}), so its p99 batch latency breaks the comparison: rolled back;
 *   <li><b>bad-errors</b>: the simulated GPUs fail {@code --error-share} of B's batches
 *       ({@code inference.device.simulated.model-failures} {@code model:2=...}); batch isolation
 *       narrows each failure to the batch's first request, answered INFERENCE_FAILED: rolled back;
 *   <li><b>shadow</b>: the bad-errors B in shadow mode: B answers copies that are compared and discarded.
 * </ul>
 *
 * Warm-up requests pinned to version 1 precede the rollout, so A is loaded on the devices; B is
 * loaded by the rollout's warming phase (the coordinator's LOAD where A is loaded, with
 * {@code coordinator.plan.warm-before-route} at its default), and gets its first share once the
 * job reports it loaded. Measured: the rollout's decisions with their reasons and times, time to 100% or from the
 * bad step's start to the rollback, every answer's version, error code and latency as the client
 * received it, and the requests B answered badly (errors, and answers over the SLO). Writes
 * {@code rollout.json}, {@code rollout.md}
 * and {@code rollout-share.png} to {@code --out} and records the targets of scenario
 * "coordinator_rollout" in {@code --summary}.
 */
@Command(name = "rollout-benchmark", mixinStandardHelpOptions = true,
        description = "Canary and shadow rollouts of a good and a bad version through the real job")
public final class RolloutBenchmark implements Callable<Integer> {
    static final String MODEL = RecoveryBenchmark.SOURCE_MODEL;
    static final String GOOD = "good";
    static final String BAD_SLOW = "bad-slow";
    static final String BAD_ERRORS = "bad-errors";
    static final String SHADOW = "shadow";
    static final List<String> CASES = List.of(GOOD, BAD_SLOW, BAD_ERRORS, SHADOW);

    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/coordinator");

    @Option(names = "--summary", description = "Also record the targets in this summary.json "
            + "(default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing rollout.json in "
            + "--summary")
    boolean summaryOnly;

    @Option(names = "--cases", split = ",", description = "Cases to run, in order (default: ${DEFAULT-VALUE})")
    List<String> cases = new ArrayList<>(CASES);

    @Option(names = "--seconds", description = "Measured traffic per case, seconds (default: ${DEFAULT-VALUE})")
    int seconds = 75;

    @Option(names = "--rate", description = "Unpinned requests/s (default: ${DEFAULT-VALUE})")
    double rate = 100;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "1+4*b";

    @Option(names = "--slow-speed", description = "The bad-slow case's speed model of version 2: 100 ms more per "
            + "batch and ten times the default --speed's cost per sample, so that B's batch time is well over twice "
            + "A's at any batch size (default: ${DEFAULT-VALUE})")
    String slowSpeed = "100+40*b";

    @Option(names = "--max-batch-size", description = "inference.batching.max-batch-size of the job; 0: the operator's "
            + "default. Both versions batch up to it (and the model's max_batch_size); while B's slow batch holds the "
            + "execution thread, A's requests queue and A's next batch is as large as this cap allows, which the "
            + "rollout's comparison at a common batch size (the versions' latency fits) does not depend on "
            + "(default: ${DEFAULT-VALUE})")
    int maxBatchSize = 0;

    @Option(names = "--error-share", description = "Share of version 2's batches the simulated GPUs fail in the "
            + "bad-errors and shadow cases (default: ${DEFAULT-VALUE})")
    double errorShare = 0.1;

    @Option(names = "--slo-ms", description = "coordinator.model.default-slo (default: ${DEFAULT-VALUE})")
    double sloMs = 150;

    @Option(names = "--cycle-ms", description = "Time between coordinator cycles (default: ${DEFAULT-VALUE})")
    long cycleMs = 1000;

    @Option(names = "--metrics-fetch-ms", description = "Flink REST metric fetcher interval (default: ${DEFAULT-VALUE})")
    long fetchMs = 500;

    @Option(names = "--metrics-settle-ms", description = "coordinator.flink.metrics-settle (default: the "
            + "coordinator's, ${DEFAULT-VALUE})")
    long settleMs = CoordinatorOptions.METRICS_SETTLE.defaultValue().toMillis();

    @Option(names = "--min-dwell-s", description = "coordinator.rollout.min-dwell in seconds (coordinator default "
            + "120; shorter here so that a case fits a minute) (default: ${DEFAULT-VALUE})")
    long minDwellSeconds = 10;

    @Option(names = "--min-samples", description = "coordinator.rollout.min-samples (coordinator default 200) "
            + "(default: ${DEFAULT-VALUE})")
    long minSamples = 50;

    @Option(names = "--significance", description = "coordinator.rollout.significance (default: the coordinator's, "
            + "${DEFAULT-VALUE})")
    double significance = CoordinatorOptions.ROLLOUT_SIGNIFICANCE.defaultValue();

    @Option(names = "--latency-tolerance", description = "coordinator.rollout.latency-tolerance (coordinator default "
            + "0.2; batch latencies on a shared 2-core machine are noisy, see RolloutEndToEndTest) "
            + "(default: ${DEFAULT-VALUE})")
    double latencyTolerance = 1.0;

    @Option(names = "--latency-min-batches", description = "coordinator.rollout.latency-min-batches (coordinator "
            + "default 200; fewer here because the steps are shorter: B at 5%% of --rate runs about 50 batches in a "
            + "10 s step, and a step waits for them, see --latency-max-wait-s) (default: ${DEFAULT-VALUE})")
    long latencyMinBatches = 40;

    @Option(names = "--latency-max-wait-s", description = "coordinator.rollout.latency-max-wait in seconds: how long "
            + "a step waits for --latency-min-batches batches of each version before it is judged on errors alone "
            + "(default: the coordinator's, ${DEFAULT-VALUE})")
    long latencyMaxWaitSeconds = CoordinatorOptions.ROLLOUT_LATENCY_MAX_WAIT.defaultValue().toSeconds();

    @Option(names = "--latency-guard", description = "coordinator.rollout.latency-guard: B is rolled back before its "
            + "step is judged once its batch time at a common size exceeds A's times this; 0: off (default: the "
            + "coordinator's, ${DEFAULT-VALUE})")
    double latencyGuard = CoordinatorOptions.ROLLOUT_LATENCY_GUARD.defaultValue();

    @Option(names = "--latency-guard-batches", description = "coordinator.rollout.latency-guard-batches (default: the "
            + "coordinator's, ${DEFAULT-VALUE})")
    long latencyGuardBatches = CoordinatorOptions.ROLLOUT_LATENCY_GUARD_BATCHES.defaultValue();

    @Option(names = "--early-significance", description = "coordinator.rollout.early-significance: B is rolled back "
            + "before its step's dwell when the exact test of its error rate against A's is below this; 0: off "
            + "(default: the coordinator's, ${DEFAULT-VALUE})")
    double earlySignificance = CoordinatorOptions.ROLLOUT_EARLY_SIGNIFICANCE.defaultValue();

    @Option(names = "--shadow-fraction", description = "The shadow case's shadow_fraction (default: ${DEFAULT-VALUE})")
    double shadowFraction = 0.5;

    @Option(names = "--plot", negatable = true, description = "Write rollout-share.png (default: ${DEFAULT-VALUE})")
    boolean plot = true;

    public static void main(String[] args) {
        System.exit(new CommandLine(new RolloutBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        if (summaryOnly) {
            RolloutReport.record((ObjectNode) new ObjectMapper().readTree(out.resolve("rollout.json").toFile()), summary);
            return 0;
        }
        for (String c : cases) {
            if (!CASES.contains(c)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown case " + c + "; use any of "
                        + String.join(", ", CASES));
            }
        }
        if (seconds < 5 || !(rate > 0) || !(shadowFraction > 0 && shadowFraction <= 1)
                || !(errorShare > 0 && errorShare <= 1) || latencyMinBatches < 1 || latencyMaxWaitSeconds < 0
                || !(latencyGuard == 0 || latencyGuard > 1) || latencyGuardBatches < 1
                || !(earlySignificance >= 0 && earlySignificance <= significance)) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--seconds must be >= 5, --rate "
                    + "positive, --shadow-fraction and --error-share in (0, 1], --latency-min-batches >= 1, --latency-max-wait-s >= 0, "
                    + "--latency-guard 0 or above 1, --latency-guard-batches >= 1, --early-significance in [0, "
                    + "--significance]");
        }
        try {
            io.flinkgpu.inference.device.SpeedModel.parse(slowSpeed);
            io.flinkgpu.inference.device.SpeedModel.parse(speed);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--speed / --slow-speed: " + e.getMessage());
        }
        Files.createDirectories(out);
        Path root = FashionMnist.findRoot();
        ImageScenario images = new ImageScenario(root);
        ObjectNode result = new ObjectMapper().createObjectNode();
        result.put("started", Instant.now().toString());
        result.put("git", ToolFiles.revision());
        result.put("command", command());
        result.put("machine", RecoveryReport.machine());
        ObjectNode settings = result.putObject("settings");
        settings.put("devices", RecoveryBenchmark.PARALLELISM + " simulated GPUs, speed " + speed
                + " ms per batch of b samples, one per inference subtask");
        settings.put("model", MODEL);
        settings.put("rate", rate);
        settings.put("seconds", seconds);
        settings.put("cycle_ms", cycleMs);
        settings.put("min_dwell_s", minDwellSeconds);
        settings.put("min_samples", minSamples);
        settings.put("significance", significance);
        settings.put("latency_tolerance", latencyTolerance);
        settings.put("latency_min_batches", latencyMinBatches);
        settings.put("latency_max_wait_s", latencyMaxWaitSeconds);
        settings.put("latency_guard", latencyGuard);
        settings.put("latency_guard_batches", latencyGuardBatches);
        settings.put("early_significance", earlySignificance);
        settings.put("slo_ms", sloMs);
        settings.put("steps_percent", CoordinatorOptions.ROLLOUT_STEPS.defaultValue().toString());
        settings.put("shadow_fraction", shadowFraction);
        settings.put("good_version", "a copy of version 1 (identical weights), run as version 1 is");
        settings.put("bad_slow_version", "the same copy, its batches at " + slowSpeed + " ms per batch of b samples "
                + "(inference.device.simulated.model-speeds " + MODEL + ":2)");
        settings.put("bad_errors_version", "the same copy, " + num(100 * errorShare) + "% of its batches failed by the "
                + "simulated GPUs (inference.device.simulated.model-failures " + MODEL + ":2), also in the shadow case");
        settings.put("slow_speed", slowSpeed);
        settings.put("max_batch_size", maxBatchSize > 0 ? String.valueOf(maxBatchSize) : "the operator's default, "
                + io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE.defaultValue());
        settings.put("error_share", errorShare);
        ArrayNode results = result.putArray("cases");
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            for (String c : cases) {
                System.out.println("=== " + c + " ===");
                results.add(runCase(kafka, root, images, c));
            }
        }
        result.put("finished", Instant.now().toString());
        new RolloutReport(out, plot).write(result);
        RolloutReport.record(result, summary);
        return 0;
    }

    private ObjectNode runCase(EmbeddedKafka kafka, Path root, ImageScenario images, String name) throws Exception {
        boolean bad = !name.equals(GOOD);
        Path repo = root.resolve("benchmarks/target/rollout-repo-" + name);
        CoordinatedJob.deleteRecursively(repo);
        ModelRepoWriter.copy(root.resolve("models").resolve(MODEL), repo, MODEL, false, config -> {});
        Path v2 = Files.createDirectories(repo.resolve(MODEL).resolve("2"));
        Files.copy(repo.resolve(MODEL).resolve("1").resolve(ModelRepoWriter.MODEL_FILE),
                v2.resolve(ModelRepoWriter.MODEL_FILE));
        // what makes B bad: the simulated GPUs' treatment of version 2
        java.util.function.Consumer<Configuration> badB = switch (name) {
            case BAD_SLOW -> conf -> conf.set(io.flinkgpu.inference.operator.GpuInferenceOptions.SIMULATED_MODEL_SPEEDS,
                    List.of(MODEL + ":2=" + slowSpeed));
            case BAD_ERRORS, SHADOW -> conf -> conf.set(
                    io.flinkgpu.inference.operator.GpuInferenceOptions.SIMULATED_MODEL_FAILURES,
                    List.of(MODEL + ":2=" + errorShare));
            default -> conf -> { };
        };
        java.util.function.Consumer<Configuration> jobConf = maxBatchSize <= 0 ? badB : badB.andThen(conf ->
                conf.set(io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE, maxBatchSize));
        RecoveryRun run = new RecoveryRun(name, true);
        run.loadAverageStart = CoordinatedJob.loadAverage();
        List<RolloutAnalysis.Point> timeline = Collections.synchronizedList(new ArrayList<>());
        List<Decision> decisions;
        Rollout.Mode mode = name.equals(SHADOW) ? Rollout.Mode.SHADOW : Rollout.Mode.CANARY;
        try (CoordinatedJob job = CoordinatedJob.start(kafka, repo, root.resolve("benchmarks/target/rollout-state"),
                "rollout-" + name, speed, fetchMs, settleMs, jobConf);
                KafkaTraffic traffic = job.traffic()) {
            KafkaTarget warm = traffic.stream((id, seq) -> images.request(id, seq, MODEL, RecoveryRunner.PARAMETERS)
                    .withVersion("1"));
            KafkaTarget unpinned = traffic.stream((id, seq) -> images.request(id, seq, MODEL,
                    RecoveryRunner.PARAMETERS));
            // A only: the rollout's warming phase loads B where A is before B's first step
            CoordinatedJob.warmUp(traffic, List.of(warm));
            Configuration c = job.coordinatorConfig(cycleMs, sloMs, CoordinatorOptions.TARGET_UTILIZATION.defaultValue(),
                    settleMs);
            c.set(CoordinatorOptions.ROLLOUT_MIN_DWELL, Duration.ofSeconds(minDwellSeconds));
            c.set(CoordinatorOptions.ROLLOUT_MIN_SAMPLES, minSamples);
            c.set(CoordinatorOptions.ROLLOUT_SIGNIFICANCE, significance);
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_TOLERANCE, latencyTolerance);
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_MIN_BATCHES, latencyMinBatches);
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_MAX_WAIT, Duration.ofSeconds(latencyMaxWaitSeconds));
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_GUARD, latencyGuard);
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_GUARD_BATCHES, latencyGuardBatches);
            c.set(CoordinatorOptions.ROLLOUT_EARLY_SIGNIFICANCE, earlySignificance);
            Coordinator coordinator = job.coordinator(c);
            long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
            long end = start + TimeUnit.SECONDS.toNanos(seconds);
            run.t0Nanos = start;
            run.t0WallMillis = System.currentTimeMillis() + TimeUnit.NANOSECONDS.toMillis(start - System.nanoTime());
            // as POST /api/rollouts does: start, then publish the split at once
            coordinator.rollouts().start(new RolloutEngine.Request(MODEL, "1", "2", mode, null,
                    mode == Rollout.Mode.SHADOW ? shadowFraction : null, null), System.currentTimeMillis());
            coordinator.publishVersionSplits("rollout of " + MODEL + " started");
            Runnable record = () -> coordinator.rollouts().get(MODEL).ifPresent(r -> timeline.add(
                    new RolloutAnalysis.Point((System.nanoTime() - start) / 1e9, r.state().name(), r.phase().name(),
                            r.step(), r.toShare(), r.reason())));
            ControlLoop loop = new ControlLoop(run, coordinator, job.collector, CycleSchedule.fromConfig(c), start,
                    start, end, MODEL, record);
            Thread control = new Thread(loop, "control-loop");
            control.start();
            try {
                run.answers = LoadDriver.timed(List.of(new LoadDriver.Stream(unpinned, traffic.newRun(),
                        ArrivalSchedule.Rate.constant(rate), new Random(42))), start, end, Duration.ofSeconds(60));
            } finally {
                loop.stop();
                control.join();
            }
            record.run();
            decisions = coordinator.store().recentDecisions(10_000).stream()
                    .filter(d -> d.action().startsWith("ROLLOUT_")).toList();
        }
        run.loadAverageEnd = CoordinatedJob.loadAverage();
        ObjectNode r = RolloutAnalysis.analyse(run, mode.name().toLowerCase(Locale.ROOT), bad, "1", "2", decisions,
                new ArrayList<>(timeline), seconds, sloMs);
        r.put("to_speed", name.equals(BAD_SLOW) ? slowSpeed : speed);
        r.put("to_failure_share", name.equals(BAD_ERRORS) || name.equals(SHADOW) ? errorShare : 0);
        System.out.printf(Locale.ROOT, "%s: %s (%s); sent %d, answered %d, client errors %d, B answered badly %d%n",
                name, r.path("final_state").asText(), r.path("final_reason").asText(), r.path("sent").asLong(),
                r.path("answered").asLong(), r.path("client_errors").asLong(), r.path("bad_answers_by_to").asLong());
        return r;
    }

    /** The command line, from the repository root, that runs these settings again. */
    String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + RolloutBenchmark.class.getName()
                + " -Dbench.args=\"" + String.format(Locale.ROOT, "--cases=%s --seconds=%d --rate=%s --speed=%s "
                + "--slow-speed=%s --error-share=%s --slo-ms=%s --cycle-ms=%d --min-dwell-s=%d --min-samples=%d "
                + "--significance=%s --latency-tolerance=%s --latency-min-batches=%d --latency-max-wait-s=%d "
                + "--latency-guard=%s --latency-guard-batches=%d --early-significance=%s --shadow-fraction=%s "
                + "--metrics-fetch-ms=%d --metrics-settle-ms=%d --max-batch-size=%d",
                String.join(",", cases), seconds, num(rate), speed, slowSpeed, num(errorShare), num(sloMs), cycleMs,
                minDwellSeconds, minSamples, num(significance), num(latencyTolerance), latencyMinBatches,
                latencyMaxWaitSeconds, num(latencyGuard), latencyGuardBatches, num(earlySignificance), num(shadowFraction), fetchMs, settleMs,
                maxBatchSize) + "\"";
    }
}
