package io.flinkgpu.bench;

import io.flinkgpu.bench.report.Report;
import io.flinkgpu.bench.run.BenchmarkRunner;
import io.flinkgpu.bench.run.BenchmarkSettings;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.RecommendationScenario;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.bench.scenario.Scenarios;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The benchmark suite: raw ONNX Runtime ceilings, per-record Flink baselines, and the inference
 * job with batching off, at defaults and at tuned settings, each swept over offered load.
 */
@Command(name = "benchmark", mixinStandardHelpOptions = true,
        description = "Open-loop rate sweeps of the inference job through Kafka, against raw ONNX Runtime and "
                + "per-record Flink baselines. Writes result.json, report.md and PNG plots.")
public final class BenchmarkMain implements Callable<Integer> {
    /**
     * Installs what the harness drives (the parent, inference-contract, gpu-operator-udf, flink-sql, flink-job) on a
     * machine whose local Maven repository holds none of the project's artifacts; the first half of a report's
     * reproduce line, and what {@code benchmarks/run.sh} tells its user to run when it cannot resolve them.
     */
    static final String BUILD = "mvn -B -q install -DskipTests -pl benchmarks -am";

    @Option(names = "--mode", description = "quick (a few minutes) or full (default: ${DEFAULT-VALUE}).")
    String mode = "quick";

    @Option(names = "--scenarios", split = ",", description = "image, recommendation, nlp (all-MiniLM-L6-v2 FP32), "
            + "nlp-int8 (its INT8 twin) (default: image, recommendation).")
    List<String> scenarios = new ArrayList<>(List.of(ImageScenario.NAME, RecommendationScenario.NAME));

    @Option(names = "--configs", split = ",", description = "Subset of: ceiling, passthrough, kafka-relay (Kafka alone, no Flink), flink-map, "
            + "flink-async, job-batching-off, job-batching-default, job-tuned-N, sql-batched, sql-batch1 (ML_PREDICT with "
            + "the onnx model provider at the job's max-batch-size and at 1) (default: all).")
    List<String> configs = new ArrayList<>();

    @Option(names = "--reverse-order", description = "Run the configurations in reverse order (the report keeps "
            + "the usual one). In side-by-side runs the first configuration after the JVM warm-up measured worse "
            + "whichever it was: compare two configurations with runs in both orders.")
    boolean reverseOrder;

    @Option(names = "--out", description = "Directory for this run's files (default: benchmarks/target/"
            + "benchmark-results/<run id>).")
    Path out;

    @Option(names = "--publish", description = "Also copy the run to DIR/<mode>/ and write DIR/summary.json, "
            + "e.g. docs/benchmarks.")
    Path publish;

    @Option(names = "--summary-from", description = "Run nothing: (re)publish the run in DIR (its result.json) "
            + "to --publish, recounting contended points.")
    Path summaryFrom;

    @Option(names = "--work", description = "Working directory for generated model repositories "
            + "(default: ${DEFAULT-VALUE} under the repository root).")
    String work = "benchmarks/target/bench-work";

    @Option(names = "-D", description = "A Flink or inference option for every job, e.g. "
            + "-Dinference.buffer-timeout=1ms")
    Map<String, String> options = new HashMap<>();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /**
     * The arguments as a cloner can run them again: an {@code --out} outside the repository (a
     * scratch folder of the machine that ran it) is left out, so the run writes to its default
     * folder; one inside it is given relative to the repository root.
     */
    static List<String> reproducibleArgs(List<String> args, Path root) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            String value = a.startsWith("--out=") ? a.substring("--out=".length())
                    : a.equals("--out") && i + 1 < args.size() ? args.get(++i) : null;
            if (value == null) {
                out.add(a);
                continue;
            }
            Path path = Path.of(value);
            Path absolute = path.toAbsolutePath().normalize();
            Path base = root.toAbsolutePath().normalize();
            if (!path.isAbsolute()) {
                out.add("--out=" + value);
            } else if (absolute.startsWith(base)) {
                out.add("--out=" + base.relativize(absolute));
            }
        }
        return out;
    }

    /** The JVM options the pom's {@code bench.jvm} property and run.sh give the harness when nothing overrides them. */
    static final List<String> DEFAULT_JVM = List.of("-Xms2g", "-Xmx4g", "-Xlog:gc:file=benchmarks/target/bench-gc.log");

    /**
     * The {@code -Dbench.jvm} option that gives a rerun the JVM options this one ran with (such as
     * run.sh's BENCH_JAVA_OPTS and BENCH_HEAP, e.g. another collector), or "" where they are the
     * defaults; the headless flag, which the pom always adds, is left out.
     */
    static String reproducibleJvm(List<String> jvmArgs) {
        List<String> own = jvmArgs.stream().filter(a -> !a.equals("-Djava.awt.headless=true")).toList();
        return own.equals(DEFAULT_JVM) ? "" : " -Dbench.jvm=\"" + String.join(" ", own) + "\"";
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new BenchmarkMain()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        List<String> args = spec.commandLine().getParseResult().originalArgs();
        BenchmarkSettings settings = switch (mode) {
            case "quick" -> BenchmarkSettings.quick();
            case "full" -> BenchmarkSettings.full();
            case "smoke" -> BenchmarkSettings.smoke();
            default -> throw new CommandLine.ParameterException(new CommandLine(this), "unknown mode " + mode);
        };
        Path root = FashionMnist.findRoot();
        if (summaryFrom != null) {
            if (publish == null) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--summary-from needs --publish");
            }
            Report.republish(summaryFrom.isAbsolute() ? summaryFrom : root.resolve(summaryFrom),
                    publish.isAbsolute() ? publish : root.resolve(publish));
            return 0;
        }
        Path workDir = root.resolve(work);
        Path repo = workDir.resolve("model-repository");
        Files.createDirectories(repo);
        List<Scenario> chosen = new ArrayList<>();
        for (String s : scenarios) {
            if (!Scenarios.NAMES.contains(s)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown scenario " + s);
            }
            chosen.add(Scenarios.named(s, root, workDir));
        }
        Instant started = Instant.now();
        String runId = DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss").withZone(ZoneOffset.UTC).format(started)
                + "-" + mode;
        Path runDir = out != null ? out : root.resolve("benchmarks/target/benchmark-results").resolve(runId);
        String command = "BenchmarkMain " + String.join(" ", args);
        String reproduce = BUILD + " && mvn -B -q -pl benchmarks exec:exec"
                + reproducibleJvm(java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
                + " -Dbench.args=\"" + String.join(" ", reproducibleArgs(args, root)) + "\"";
        System.out.println("Benchmark run " + runId + " -> " + runDir);
        BenchmarkRunner runner = new BenchmarkRunner(settings, repo, options, configs, System.out);
        runner.reverseOrder(reverseOrder);
        var results = runner.run(chosen);
        Map<String, Object> doc = Report.write(runDir, runId, settings, command, reproduce, started, runner, results,
                options);
        System.out.println();
        System.out.println("Wrote " + runDir.resolve(Report.RESULT_FILE) + " and " + runDir.resolve(Report.REPORT_FILE));
        if (publish != null) {
            Path dir = publish.isAbsolute() ? publish : root.resolve(publish);
            Path summary = Report.publish(runDir, dir, doc);
            System.out.println("Published to " + dir.resolve(mode) + " and " + summary);
        }
        return 0;
    }
}
