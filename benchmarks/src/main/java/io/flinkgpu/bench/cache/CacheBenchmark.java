package io.flinkgpu.bench.cache;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.load.RunSpec;
import io.flinkgpu.bench.report.SummaryTargets;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.bench.scenario.NlpScenario;
import io.flinkgpu.bench.scenario.RecommendationScenario;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.bench.scenario.Scenarios;
import io.flinkgpu.inference.device.LoadTimeModel;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The device-memory benchmarks of the model cache, on the cache and device layer itself (real
 * ONNX Runtime sessions, simulated GPUs; no Kafka or Flink in the way):
 *
 * <ol>
 *   <li><b>Cold load vs swap-in</b> for each scenario model: a load from the repository against
 *       a swap-in from the host tier, on the CPU device and on a simulated GPU with its load-time
 *       model; also the memory the first load measured.
 *   <li><b>Six models on two simulated GPUs</b> under Zipf popularity, closed loop: static
 *       one-model-per-device (one model slot per device, models partitioned over the devices,
 *       every change of model a swap) against sharing (up to 4 models resident per device, LRU),
 *       with the same partition and with requests free to go to either device.
 * </ol>
 *
 * Writes {@code cache.json} and {@code cache.md} to {@code --out} and records its targets in
 * {@code summary.json}; numbers only come from the run.
 */
@Command(name = "cache-benchmark", mixinStandardHelpOptions = true, description = "Model cache benchmarks")
public final class CacheBenchmark implements Callable<Integer> {
    static final String SOURCE_MODEL = "fashion-mnist-cnn";
    static final int MODELS = 6;
    static final int DEVICES = 2;

    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/cache");

    @Option(names = "--work", description = "Scratch directory for model repositories (default: ${DEFAULT-VALUE})")
    Path work = Path.of("benchmarks/target/cache-bench");

    @Option(names = "--summary", description = "Record the targets in this summary.json (default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--scenarios", split = ",", description = "Scenario models for cold load vs swap-in "
            + "(default: ${DEFAULT-VALUE})")
    List<String> scenarios = new ArrayList<>(List.of(ImageScenario.NAME, RecommendationScenario.NAME, NlpScenario.NAME));

    @Option(names = "--rounds", description = "Cold load / swap-in pairs per model and device (default: ${DEFAULT-VALUE})")
    int rounds = 12;

    @Option(names = "--seconds", description = "Measured seconds per placement (default: ${DEFAULT-VALUE})")
    int seconds = 20;

    @Option(names = "--warmup-seconds", description = "Unmeasured seconds before each (default: ${DEFAULT-VALUE})")
    int warmupSeconds = 4;

    @Option(names = "--clients", description = "Requests outstanding, closed loop (default: ${DEFAULT-VALUE})")
    int clients = 64;

    @Option(names = "--zipf", description = "Zipf exponent of model popularity (default: ${DEFAULT-VALUE})")
    double zipf = 1.0;

    @Option(names = "--speed", description = "Simulated GPU batch latency, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "2+0.05*b";

    @Option(names = "--load-time", description = "Simulated GPU load time (default: ${DEFAULT-VALUE})")
    String loadTime = LoadTimeModel.DEFAULT_SPEC;

    @Option(names = "--model-memory-mib", description = "Device memory each of the six models declares "
            + "(default: ${DEFAULT-VALUE}: four fit in a device)")
    long modelMemoryMib = 1536;

    @Option(names = "--device-memory-mib", description = "Memory of each simulated GPU (default: ${DEFAULT-VALUE})")
    long deviceMemoryMib = 8192;

    @Option(names = "--max-batch", description = "Largest batch a device worker cuts (default: ${DEFAULT-VALUE})")
    int maxBatch = 32;

    @Option(names = "--workers", description = "Execution threads per device (default: ${DEFAULT-VALUE})")
    int workers = 2;

    private final ObjectMapper json = new ObjectMapper();

    public static void main(String[] args) {
        System.exit(new CommandLine(new CacheBenchmark()).execute(args));
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        Path root = FashionMnist.findRoot();
        Path outDir = root.resolve(out);
        Path workDir = root.resolve(work);
        Files.createDirectories(outDir);
        Files.createDirectories(workDir);
        ObjectNode result = json.createObjectNode();
        String command = "mvn -B -q -pl benchmarks exec:exec -Dbench.main=" + CacheBenchmark.class.getName()
                + " -Dbench.args=\"" + String.join(" ", spec.commandLine().getParseResult().originalArgs()) + "\"";
        result.put("command", command.replace("-Dbench.args=\"\"", ""));
        result.put("machine", Runtime.getRuntime().availableProcessors() + " cores, Java "
                + System.getProperty("java.version") + ", " + System.getProperty("os.name") + " "
                + System.getProperty("os.arch"));
        result.put("started", Instant.now().toString());
        StringBuilder md = new StringBuilder();
        coldVsSwapIn(root, workDir, result.putArray("cold_vs_swap_in"), md);
        zipf(root, workDir, result, md);
        ToolFiles.writeJson(outDir.resolve("cache.json"), result);
        ToolFiles.writeReport(outDir.resolve("cache.md"), "CacheBenchmark", result, md);
        recordTargets(result);
        System.out.println(md);
        return 0;
    }

    /** Part 1: cold load vs swap-in of each scenario model, on the CPU and on a simulated GPU. */
    private void coldVsSwapIn(Path root, Path workDir, ArrayNode loads, StringBuilder md) throws Exception {
        md.append("## Cold load vs swap-in from the host tier\n\n")
                .append("Median of ").append(rounds).append(" rounds (the first fifth dropped for JIT warm-up); ")
                .append("warm-up on (batch sizes 1 and ").append(maxBatch).append("). Simulated GPU load time: `")
                .append(loadTime).append("`.\n\n")
                .append("| model | file | measured on first load | device | cold load | swap-in | swap-in / cold |\n")
                .append("|---|---|---|---|---|---|---|\n");
        Path scenarioRepo = workDir.resolve("scenario-repository");
        Files.createDirectories(scenarioRepo);
        for (String name : scenarios) {
            Scenario scenario = Scenarios.named(name, root, workDir);
            System.out.println("Preparing " + scenario.model() + " ...");
            scenario.prepare(scenarioRepo);
            ModelRepository repo = ModelRepository.open(scenarioRepo);
            ModelRepository.ResolvedModel model = repo.resolve(scenario.model(), null);
            long fileBytes = Files.size(model.file());
            for (String deviceKind : List.of("cpu", "simulated")) {
                ColdVsSwapIn.LoadTimes t = ColdVsSwapIn.measure(model, deviceKind, rounds, maxBatch, loadTime);
                ObjectNode row = loads.addObject();
                row.put("scenario", name);
                row.put("model", scenario.model());
                row.put("file_bytes", fileBytes);
                row.put("measured_bytes", t.measuredBytes());
                row.put("device", deviceKind);
                row.put("cold_ms", t.coldMs());
                row.put("swap_in_ms", t.swapMs());
                row.put("ratio", t.swapMs() / t.coldMs());
                md.append(String.format(Locale.ROOT, "| %s | %.1f MiB | %.1f MiB | %s | %.1f ms | %.1f ms | %.2f |%n",
                        scenario.model(), fileBytes / 1048576.0, t.measuredBytes() / 1048576.0, deviceKind, t.coldMs(),
                        t.swapMs(), t.swapMs() / t.coldMs()));
                System.out.printf(Locale.ROOT, "%s on %s: cold %.1f ms, swap-in %.1f ms%n", scenario.model(), deviceKind,
                        t.coldMs(), t.swapMs());
            }
        }
    }

    /** Part 2: six models on two simulated GPUs under Zipf popularity, one closed-loop point per placement. */
    private void zipf(Path root, Path workDir, ObjectNode result, StringBuilder md) throws Exception {
        Path zipfRepo = workDir.resolve("zipf-repository");
        writeSixModels(root, zipfRepo);
        ModelRepository repo = ModelRepository.open(zipfRepo);
        ImageScenario images = new ImageScenario(root);
        ArrayNode placements = result.putArray("zipf");
        md.append("\n## Six models on two simulated GPUs, Zipf popularity\n\n")
                .append(String.format(Locale.ROOT, "Closed loop, %d requests outstanding, Zipf exponent %.2f over %d "
                        + "models (popularity %s), %d s measured after %d s warm-up per placement. Each simulated GPU: "
                        + "%d MiB, batch latency `%s` ms, load time `%s`, %d execution threads, batches up to %d. "
                        + "Every model declares %d MiB.%n%n", clients, zipf, MODELS, popularityText(), seconds,
                        warmupSeconds, deviceMemoryMib, speed, loadTime, workers, maxBatch, modelMemoryMib))
                .append("| placement | throughput | p50 | p99 | loads (cold + swap-in) | requests per model |\n")
                .append("|---|---|---|---|---|---|\n");
        Map<String, Double> throughput = new TreeMap<>();
        for (Placement placement : Placement.values()) {
            System.out.println("Zipf workload, placement " + placement + " ...");
            ZipfRun run = runZipf(repo, images, placement);
            PointResult p = run.point();
            throughput.put(placement.key, p.throughput());
            ObjectNode row = placements.addObject();
            row.put("placement", placement.key);
            row.put("description", placement.description);
            row.put("throughput_rps", p.throughput());
            row.put("p50_ms", p.p50());
            row.put("p99_ms", p.p99());
            row.put("loads", run.loads());
            row.put("errors", run.errors());
            ArrayNode resident = row.putArray("resident_at_end");
            run.resident().forEach(resident::add);
            ArrayNode per = row.putArray("requests_per_model");
            for (long n : run.perModel()) {
                per.add(n);
            }
            md.append(String.format(Locale.ROOT, "| %s | %.0f req/s | %.1f ms | %.1f ms | %d | %s |%n", placement.key,
                    p.throughput(), p.p50(), p.p99(), run.loads(), Arrays.toString(run.perModel())));
            System.out.printf(Locale.ROOT, "  %.0f req/s, p99 %.1f ms, %d loads, %d errors, resident at the end %s%n",
                    p.throughput(), p.p99(), run.loads(), run.errors(), run.resident());
        }
        double shared = throughput.get(Placement.SHARED_PARTITIONED.key);
        double sharedAny = throughput.get(Placement.SHARED_ANY_DEVICE.key);
        double statik = throughput.get(Placement.STATIC.key);
        result.put("shared_vs_static", shared / statik);
        result.put("shared_any_device_vs_static", sharedAny / statik);
        md.append(String.format(Locale.ROOT, "%nSharing vs static one-model-per-device: **%.2fx** throughput with the "
                + "same partition, **%.2fx** with requests free to go to either device.%n", shared / statik,
                sharedAny / statik));
    }

    static String modelName(int i) {
        return "zipf-m" + i;
    }

    /** Six copies of the shipped CNN (real weights) under their own names, each declaring {@code modelMemoryMib}. */
    private void writeSixModels(Path root, Path repo) throws Exception {
        for (int i = 0; i < MODELS; i++) {
            ModelRepoWriter.copy(root.resolve("models").resolve(SOURCE_MODEL), repo, modelName(i), false, config -> {
                config.remove("precision_variants");
                config.remove("max_accuracy_cost");
                config.remove("dynamic_batching");
                config.put("memory_bytes", modelMemoryMib << 20);
                config.putObject("warmup").putArray("batch_sizes").add(1).add(maxBatch);
            });
        }
    }

    private double[] popularity() {
        double[] p = new double[MODELS];
        double sum = 0;
        for (int i = 0; i < MODELS; i++) {
            p[i] = 1 / Math.pow(i + 1, zipf);
            sum += p[i];
        }
        for (int i = 0; i < MODELS; i++) {
            p[i] /= sum;
        }
        return p;
    }

    private String popularityText() {
        StringBuilder sb = new StringBuilder();
        for (double p : popularity()) {
            sb.append(sb.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2f", p));
        }
        return sb.toString();
    }

    /**
     * What one placement measured: the point (throughput and latency of the requests sent after the
     * warm-up), models loaded and requests answered per model while it was measured, failed or
     * unanswered requests, and what each device held at the end.
     */
    record ZipfRun(PointResult point, long loads, long[] perModel, long errors, List<String> resident) {}

    /**
     * Runs the placement closed loop with {@code --clients} requests outstanding: a fixed period, the
     * warm-up and then three windows that together last {@code --seconds}, never extended.
     */
    private ZipfRun runZipf(ModelRepository repo, ImageScenario images, Placement placement) throws Exception {
        DeviceLane.Spec lanes = new DeviceLane.Spec(deviceMemoryMib, speed, loadTime, maxBatch, workers);
        RunSpec fixed = new RunSpec(Duration.ofSeconds(warmupSeconds),
                Duration.ofNanos(TimeUnit.SECONDS.toNanos(seconds) / RunSpec.STABLE_WINDOWS), RunSpec.STABLE_WINDOWS,
                RunSpec.STABLE_WINDOWS, Duration.ofSeconds(60), 1.0);
        try (ZipfTarget target = new ZipfTarget(repo, placement, popularity(), images, lanes, DEVICES)) {
            // no SLO here: only throughput and latency are compared
            PointResult p = LoadDriver.closedLoop(target, 0, clients, fixed, Double.POSITIVE_INFINITY, target);
            return new ZipfRun(p, target.loads(), target.perModel(), p.errors() + p.lost(), target.resident());
        }
    }

    private void recordTargets(ObjectNode result) throws java.io.IOException {
        String run = "cache/cache.json " + result.path("started").asText();
        List<ObjectNode> targets = new ArrayList<>();
        for (var row : result.withArray("cold_vs_swap_in")) {
            targets.add(SummaryTargets.target("cache", run, "swap_in_vs_cold_load_" + row.path("scenario").asText() + "_"
                    + row.path("device").asText(), "swap-in from the host tier / cold load from the repository, "
                    + row.path("model").asText() + " on " + row.path("device").asText() + ": "
                    + String.format(Locale.ROOT, "%.1f ms / %.1f ms", row.path("swap_in_ms").asDouble(),
                            row.path("cold_ms").asDouble()), row.path("ratio").asDouble(), "< 1", row.path("ratio")
                    .asDouble() < 1));
        }
        targets.add(SummaryTargets.target("cache", run, "zipf_shared_vs_static",
                "throughput of 6 models on 2 simulated GPUs (max 4 models each, same partition) / static "
                        + "one-model-per-device, Zipf popularity", result.path("shared_vs_static").asDouble(), "> 1",
                result.path("shared_vs_static").asDouble() > 1));
        targets.add(SummaryTargets.target("cache", run, "zipf_shared_any_device_vs_static",
                "the same with requests free to go to either device / static one-model-per-device",
                result.path("shared_any_device_vs_static").asDouble(), "> 1",
                result.path("shared_any_device_vs_static").asDouble() > 1));
        SummaryTargets.replace(summary.isAbsolute() ? summary : FashionMnist.findRoot().resolve(summary), "cache",
                targets);
    }
}
