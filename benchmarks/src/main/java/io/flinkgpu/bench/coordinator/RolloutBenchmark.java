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
 * once) right when the measured traffic begins. Cases, each on a fresh job:
 *
 * <ul>
 *   <li><b>good</b>: B is a copy of A (identical weights): canary steps to 100%;
 *   <li><b>bad</b>: B is {@code affine-fp32}, a different network whose input the requests do not fit,
 *       so every request routed to it is answered with an error code (as {@code RolloutEndToEndTest}
 *       builds its bad version): rolled back;
 *   <li><b>shadow</b>: the same bad B in shadow mode: B answers copies that are compared and discarded.
 * </ul>
 *
 * Warm-up requests name version 1 and precede the rollout. Measured: the rollout's decisions with
 * their reasons and times, time to 100% or from the bad step's start to the rollback, every answer's
 * version and error code as the client received it. Writes {@code rollout.json}, {@code rollout.md}
 * and {@code rollout-share.png} to {@code --out} and records the targets of scenario
 * "coordinator_rollout" in {@code --summary}.
 */
@Command(name = "rollout-benchmark", mixinStandardHelpOptions = true,
        description = "Canary and shadow rollouts of a good and a bad version through the real job")
public final class RolloutBenchmark implements Callable<Integer> {
    static final String MODEL = RecoveryBenchmark.SOURCE_MODEL;
    static final String GOOD = "good";
    static final String BAD = "bad";
    static final String SHADOW = "shadow";
    /** The bad version: a network whose input the Fashion-MNIST requests do not fit. */
    static final String BAD_MODEL = "gpu-operator-udf/src/test/resources/models/affine-fp32/1/model.onnx";

    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/coordinator");

    @Option(names = "--summary", description = "Also record the targets in this summary.json "
            + "(default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing rollout.json in "
            + "--summary")
    boolean summaryOnly;

    @Option(names = "--cases", split = ",", description = "Cases to run, in order (default: ${DEFAULT-VALUE})")
    List<String> cases = new ArrayList<>(List.of(GOOD, BAD, SHADOW));

    @Option(names = "--seconds", description = "Measured traffic per case, seconds (default: ${DEFAULT-VALUE})")
    int seconds = 75;

    @Option(names = "--rate", description = "Unpinned requests/s (default: ${DEFAULT-VALUE})")
    double rate = 100;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "1+4*b";

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
            if (!List.of(GOOD, BAD, SHADOW).contains(c)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown case " + c + "; use "
                        + GOOD + ", " + BAD + " and/or " + SHADOW);
            }
        }
        if (seconds < 5 || !(rate > 0) || !(shadowFraction > 0 && shadowFraction <= 1)) {
            throw new CommandLine.ParameterException(new CommandLine(this), "--seconds must be >= 5, --rate "
                    + "positive and --shadow-fraction in (0, 1]");
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
        settings.put("latency_min_batches", CoordinatorOptions.ROLLOUT_LATENCY_MIN_BATCHES.defaultValue());
        settings.put("steps_percent", CoordinatorOptions.ROLLOUT_STEPS.defaultValue().toString());
        settings.put("shadow_fraction", shadowFraction);
        settings.put("good_version", "a copy of version 1 (identical weights)");
        settings.put("bad_version", BAD_MODEL + " (input shape the requests do not fit: every answer an error)");
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
        Files.copy(bad ? root.resolve(BAD_MODEL) : repo.resolve(MODEL).resolve("1").resolve(ModelRepoWriter.MODEL_FILE),
                v2.resolve(ModelRepoWriter.MODEL_FILE));
        RecoveryRun run = new RecoveryRun(name, true);
        run.loadAverageStart = CoordinatedJob.loadAverage();
        List<RolloutAnalysis.Point> timeline = Collections.synchronizedList(new ArrayList<>());
        List<Decision> decisions;
        Rollout.Mode mode = name.equals(SHADOW) ? Rollout.Mode.SHADOW : Rollout.Mode.CANARY;
        try (CoordinatedJob job = CoordinatedJob.start(kafka, repo, root.resolve("benchmarks/target/rollout-state"),
                "rollout-" + name, speed, fetchMs, settleMs);
                KafkaTraffic traffic = job.traffic()) {
            KafkaTarget warm = traffic.stream((id, seq) -> images.request(id, seq, MODEL, RecoveryRunner.PARAMETERS)
                    .withVersion("1"));
            KafkaTarget unpinned = traffic.stream((id, seq) -> images.request(id, seq, MODEL,
                    RecoveryRunner.PARAMETERS));
            CoordinatedJob.warmUp(traffic, List.of(warm));
            Configuration c = job.coordinatorConfig(cycleMs, sloMs, CoordinatorOptions.TARGET_UTILIZATION.defaultValue(),
                    settleMs);
            c.set(CoordinatorOptions.ROLLOUT_MIN_DWELL, Duration.ofSeconds(minDwellSeconds));
            c.set(CoordinatorOptions.ROLLOUT_MIN_SAMPLES, minSamples);
            c.set(CoordinatorOptions.ROLLOUT_SIGNIFICANCE, significance);
            c.set(CoordinatorOptions.ROLLOUT_LATENCY_TOLERANCE, latencyTolerance);
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
            ControlLoop loop = new ControlLoop(run, coordinator, job.collector, cycleMs, start, start, end, MODEL,
                    record);
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
                new ArrayList<>(timeline), seconds);
        System.out.printf(Locale.ROOT, "%s: %s; sent %d, answered %d, client errors %d%n", name,
                r.path("final_state").asText(), r.path("sent").asLong(), r.path("answered").asLong(),
                r.path("client_errors").asLong());
        return r;
    }

    /** The command line, from the repository root, that runs these settings again. */
    String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + RolloutBenchmark.class.getName()
                + " -Dbench.args=\"" + String.format(Locale.ROOT, "--cases=%s --seconds=%d --rate=%s --speed=%s "
                + "--cycle-ms=%d --min-dwell-s=%d --min-samples=%d --significance=%s --latency-tolerance=%s "
                + "--shadow-fraction=%s --metrics-fetch-ms=%d --metrics-settle-ms=%d", String.join(",", cases), seconds,
                num(rate), speed, cycleMs, minDwellSeconds, minSamples, num(significance), num(latencyTolerance),
                num(shadowFraction), fetchMs, settleMs) + "\"";
    }
}
