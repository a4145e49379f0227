package io.flinkgpu.bench.cache;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.SummaryTargets;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.NlpScenario;
import io.flinkgpu.bench.scenario.RecommendationScenario;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.cache.ModelLease;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.LoadTimeModel;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
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

        // 1. cold load vs swap-in
        ArrayNode loads = result.putArray("cold_vs_swap_in");
        md.append("## Cold load vs swap-in from the host tier\n\n")
                .append("Median of ").append(rounds).append(" rounds (the first fifth dropped for JIT warm-up); ")
                .append("warm-up on (batch sizes 1 and ").append(maxBatch).append("). Simulated GPU load time: `")
                .append(loadTime).append("`.\n\n")
                .append("| model | file | measured on first load | device | cold load | swap-in | swap-in / cold |\n")
                .append("|---|---|---|---|---|---|---|\n");
        Path scenarioRepo = workDir.resolve("scenario-repository");
        Files.createDirectories(scenarioRepo);
        for (String name : scenarios) {
            Scenario scenario = scenario(name, root, workDir);
            System.out.println("Preparing " + scenario.model() + " ...");
            scenario.prepare(scenarioRepo);
            ModelRepository repo = ModelRepository.open(scenarioRepo);
            ModelRepository.ResolvedModel model = repo.resolve(scenario.model(), null);
            long fileBytes = Files.size(model.file());
            for (String deviceKind : List.of("cpu", "simulated")) {
                LoadTimes t = coldVsSwap(model, deviceKind);
                ObjectNode row = loads.addObject();
                row.put("scenario", name);
                row.put("model", scenario.model());
                row.put("file_bytes", fileBytes);
                row.put("measured_bytes", t.measuredBytes);
                row.put("device", deviceKind);
                row.put("cold_ms", t.coldMs);
                row.put("swap_in_ms", t.swapMs);
                row.put("ratio", t.swapMs / t.coldMs);
                md.append(String.format(Locale.ROOT, "| %s | %.1f MiB | %.1f MiB | %s | %.1f ms | %.1f ms | %.2f |%n",
                        scenario.model(), fileBytes / 1048576.0, t.measuredBytes / 1048576.0, deviceKind, t.coldMs,
                        t.swapMs, t.swapMs / t.coldMs));
                System.out.printf(Locale.ROOT, "%s on %s: cold %.1f ms, swap-in %.1f ms%n", scenario.model(), deviceKind,
                        t.coldMs, t.swapMs);
            }
        }

        // 2. six models, two devices, Zipf popularity
        Path zipfRepo = workDir.resolve("zipf-repository");
        writeSixModels(root, zipfRepo);
        ModelRepository repo = ModelRepository.open(zipfRepo);
        FashionMnist images = FashionMnist.load(root);
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
            throughput.put(placement.key, run.throughput);
            ObjectNode row = placements.addObject();
            row.put("placement", placement.key);
            row.put("description", placement.description);
            row.put("throughput_rps", run.throughput);
            row.put("p50_ms", run.latency.getValueAtPercentile(50) / 1000.0);
            row.put("p99_ms", run.latency.getValueAtPercentile(99) / 1000.0);
            row.put("loads", run.loads);
            row.put("errors", run.errors);
            ArrayNode resident = row.putArray("resident_at_end");
            run.resident.forEach(resident::add);
            ArrayNode per = row.putArray("requests_per_model");
            for (long n : run.perModel) {
                per.add(n);
            }
            md.append(String.format(Locale.ROOT, "| %s | %.0f req/s | %.1f ms | %.1f ms | %d | %s |%n", placement.key,
                    run.throughput, run.latency.getValueAtPercentile(50) / 1000.0,
                    run.latency.getValueAtPercentile(99) / 1000.0, run.loads, java.util.Arrays.toString(run.perModel)));
            System.out.printf(Locale.ROOT, "  %.0f req/s, p99 %.1f ms, %d loads, %d errors, resident at the end %s%n",
                    run.throughput, run.latency.getValueAtPercentile(99) / 1000.0, run.loads, run.errors, run.resident);
        }
        double shared = throughput.get(Placement.SHARED_PARTITIONED.key);
        double sharedAny = throughput.get(Placement.SHARED_ANY_DEVICE.key);
        double statik = throughput.get(Placement.STATIC.key);
        result.put("shared_vs_static", shared / statik);
        result.put("shared_any_device_vs_static", sharedAny / statik);
        md.append(String.format(Locale.ROOT, "%nSharing vs static one-model-per-device: **%.2fx** throughput with the "
                + "same partition, **%.2fx** with requests free to go to either device.%n", shared / statik,
                sharedAny / statik));

        json.writerWithDefaultPrettyPrinter().writeValue(outDir.resolve("cache.json").toFile(), result);
        Files.writeString(outDir.resolve("cache.md"), "<!-- written by CacheBenchmark; do not edit -->\n\nCommand: `"
                + result.get("command").asText() + "`, " + result.get("machine").asText() + ", "
                + result.get("started").asText() + "\n\n" + md);
        recordTargets(result);
        System.out.println(md);
        return 0;
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    private static Scenario scenario(String name, Path root, Path workDir) throws Exception {
        return switch (name) {
            case ImageScenario.NAME -> new ImageScenario(root);
            case RecommendationScenario.NAME -> new RecommendationScenario(root, workDir.resolve("dlrm"));
            case NlpScenario.NAME -> new NlpScenario(NlpScenario.Precision.FP32);
            case NlpScenario.NAME_INT8 -> new NlpScenario(NlpScenario.Precision.INT8);
            default -> throw new IllegalArgumentException("unknown scenario " + name);
        };
    }

    // ---- cold load vs swap-in ------------------------------------------------------------

    record LoadTimes(double coldMs, double swapMs, long measuredBytes) {}

    private LoadTimes coldVsSwap(ModelRepository.ResolvedModel model, String deviceKind) throws Exception {
        List<Long> cold = new ArrayList<>();
        List<Long> swap = new ArrayList<>();
        AtomicLong now = new AtomicLong();
        ModelCache.Listener timer = new ModelCache.Listener() {
            @Override
            public void loaded(ModelId id, long nanos, boolean fromHost) {
                (fromHost ? swap : cold).add(nanos);
            }
        };
        ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false).withWarmupWorkers(2)
                .withEvictionTimeout(Duration.ofSeconds(1)).withMaxBatchSize(maxBatch);
        long measured = 0;
        for (int i = 0; i < rounds; i++) {
            Device device = deviceKind.equals("cpu") ? new CpuDevice("cpu:0", 16L << 30, 1)
                    : new SimulatedDevice("sim:0", 16L << 30, SpeedModel.CPU_SPEED, Map.of(),
                            LoadTimeModel.parse(loadTime), 1);
            try (ModelCache cache = new ModelCache(device, settings, now::get, timer)) {
                cache.preload(model); // cold: from the repository
                measured = cache.measuredBytes(model.id()).orElse(cache.reservedBytes());
                now.addAndGet(Duration.ofSeconds(1).toNanos());
                cache.evictIdle();
                cache.preload(model); // swap-in: from host memory
            }
        }
        return new LoadTimes(median(cold), median(swap), measured);
    }

    private static double median(List<Long> nanos) {
        List<Long> sorted = new ArrayList<>(nanos.subList(nanos.size() / 5, nanos.size()));
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2) / 1e6;
    }

    // ---- six models under Zipf popularity --------------------------------------------------

    enum Placement {
        STATIC("static-one-model-per-device", 1, false,
                "one model slot per device; model i on device i mod 2; a request for another model swaps"),
        SHARED_PARTITIONED("shared-partitioned", 4, false,
                "up to 4 models per device (LRU); model i on device i mod 2"),
        SHARED_ANY_DEVICE("shared-any-device", 4, true,
                "up to 4 models per device (LRU); each model placed on the device with fewer models, a hot one "
                        + "replicated to the other device while a slot is free; requests to the shorter queue");

        final String key;
        final int maxModels;
        final boolean anyDevice;
        final String description;

        Placement(String key, int maxModels, boolean anyDevice, String description) {
            this.key = key;
            this.maxModels = maxModels;
            this.anyDevice = anyDevice;
            this.description = description;
        }
    }

    static String modelName(int i) {
        return "zipf-m" + i;
    }

    /** Six copies of the shipped CNN (real weights) under their own names, each declaring {@code modelMemoryMib}. */
    private void writeSixModels(Path root, Path repo) throws Exception {
        Path source = root.resolve("models").resolve(SOURCE_MODEL);
        ObjectNode config = (ObjectNode) json.readTree(source.resolve("config.json").toFile());
        config.remove("precision_variants");
        config.remove("max_accuracy_cost");
        config.remove("dynamic_batching");
        config.put("memory_bytes", modelMemoryMib << 20);
        config.putObject("warmup").putArray("batch_sizes").add(1).add(maxBatch);
        for (int i = 0; i < MODELS; i++) {
            Path dir = Files.createDirectories(repo.resolve(modelName(i)).resolve("1"));
            Files.copy(source.resolve("1").resolve("model.onnx"), dir.resolve("model.onnx"),
                    java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            config.put("name", modelName(i));
            json.writerWithDefaultPrettyPrinter().writeValue(repo.resolve(modelName(i)).resolve("config.json").toFile(),
                    config);
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

    /** One request in a device queue. */
    record Job(int model, InferenceRequest request, long sentNanos, CompletableFuture<Boolean> done) {}

    /** A simulated GPU, its model cache and its FIFO queue served by {@code workers} threads. */
    final class DeviceLane implements AutoCloseable {
        final SimulatedDevice device;
        final ModelCache cache;
        final ModelRepository repo;
        final ArrayDeque<Job> queue = new ArrayDeque<>();
        final List<Thread> threads = new ArrayList<>();
        volatile boolean running = true;
        /** Models the any-device router assigned here. */
        int assigned;

        DeviceLane(int index, ModelRepository repo, int maxModels) {
            this.repo = repo;
            device = new SimulatedDevice("sim:" + index, deviceMemoryMib << 20, SpeedModel.parse(speed), Map.of(),
                    LoadTimeModel.parse(loadTime), 1);
            cache = new ModelCache(device, ModelCacheSettings.DEFAULTS.withMaxModels(maxModels).withWarmupWorkers(2)
                    .withMaxBatchSize(maxBatch), System::nanoTime, ModelCache.Listener.NONE);
            for (int w = 0; w < workers; w++) {
                Thread t = new Thread(this::serve, "sim-" + index + "-worker-" + w);
                t.setDaemon(true);
                threads.add(t);
                t.start();
            }
        }

        synchronized int depth() {
            return queue.size();
        }

        boolean holds(int model) {
            return cache.isLoaded(new ModelId(modelName(model), "1"));
        }

        synchronized void submit(Job job) {
            queue.addLast(job);
            notifyAll();
        }

        /** The head request and every queued request of its model, up to the batch limit. */
        private synchronized List<Job> nextBatch() throws InterruptedException {
            while (queue.isEmpty()) {
                if (!running) {
                    return List.of();
                }
                wait(100);
            }
            Job head = queue.pollFirst();
            List<Job> batch = new ArrayList<>();
            batch.add(head);
            for (Iterator<Job> it = queue.iterator(); it.hasNext() && batch.size() < maxBatch;) {
                Job j = it.next();
                if (j.model() == head.model()) {
                    batch.add(j);
                    it.remove();
                }
            }
            return batch;
        }

        private void serve() {
            while (running) {
                List<Job> batch;
                try {
                    batch = nextBatch();
                } catch (InterruptedException e) {
                    return;
                }
                if (batch.isEmpty()) {
                    continue;
                }
                boolean ok;
                try {
                    ModelRepository.ResolvedModel model = repo.resolve(modelName(batch.get(0).model()), null);
                    List<InferenceRequest> requests = new ArrayList<>(batch.size());
                    for (Job j : batch) {
                        requests.add(j.request());
                    }
                    try (ModelLease lease = cache.acquire(model)) {
                        ok = lease.model().run(requests).size() == batch.size();
                    }
                } catch (Exception e) {
                    ok = false;
                }
                for (Job j : batch) {
                    j.done().complete(ok);
                }
            }
        }

        long loads() {
            ModelCache.Stats s = cache.stats();
            return s.coldLoads() + s.swapIns();
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            synchronized (this) {
                notifyAll();
            }
            for (Thread t : threads) {
                t.join(TimeUnit.SECONDS.toMillis(30));
            }
            cache.close();
        }
    }

    static final class ZipfRun {
        Histogram latency;
        double throughput;
        long loads;
        long errors;
        long[] perModel = new long[MODELS];
        List<String> resident = new ArrayList<>();
    }

    private ZipfRun runZipf(ModelRepository repo, FashionMnist images, Placement placement) throws Exception {
        List<DeviceLane> lanes = new ArrayList<>();
        assigned.clear();
        for (int d = 0; d < DEVICES; d++) {
            lanes.add(new DeviceLane(d, repo, placement.maxModels));
        }
        double[] cumulative = new double[MODELS];
        double[] p = popularity();
        double acc = 0;
        for (int i = 0; i < MODELS; i++) {
            acc += p[i];
            cumulative[i] = acc;
        }
        Recorder recorder = new Recorder(3);
        AtomicBoolean measuring = new AtomicBoolean(false);
        AtomicBoolean stop = new AtomicBoolean(false);
        AtomicLong completed = new AtomicLong();
        AtomicLong errors = new AtomicLong();
        long[] perModel = new long[MODELS];
        List<Thread> clientThreads = new ArrayList<>();
        for (int c = 0; c < clients; c++) {
            int client = c;
            Thread t = new Thread(() -> {
                SplittableRandom random = new SplittableRandom(17L * client + 1);
                long seq = 0;
                while (!stop.get()) {
                    double u = random.nextDouble();
                    int model = 0;
                    while (model < MODELS - 1 && u > cumulative[model]) {
                        model++;
                    }
                    InferenceRequest r = new InferenceRequest("c" + client + "-" + seq, modelName(model), null,
                            List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28},
                                    images.image((int) ((client * 7919L + seq) % images.size())))),
                            RequestParameters.DEFAULTS);
                    seq++;
                    Job job = new Job(model, r, System.nanoTime(), new CompletableFuture<>());
                    route(lanes, placement, model).submit(job);
                    boolean ok;
                    try {
                        ok = job.done().get();
                    } catch (Exception e) {
                        ok = false;
                    }
                    if (measuring.get()) {
                        if (ok) {
                            recorder.recordValue(Math.max(1, (System.nanoTime() - job.sentNanos()) / 1000));
                            completed.incrementAndGet();
                            synchronized (perModel) {
                                perModel[model]++;
                            }
                        } else {
                            errors.incrementAndGet();
                        }
                    }
                }
            }, "client-" + c);
            t.setDaemon(true);
            clientThreads.add(t);
            t.start();
        }
        Thread.sleep(TimeUnit.SECONDS.toMillis(warmupSeconds));
        long loadsBefore = lanes.stream().mapToLong(DeviceLane::loads).sum();
        recorder.reset();
        measuring.set(true);
        long started = System.nanoTime();
        Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
        measuring.set(false);
        double elapsed = (System.nanoTime() - started) / 1e9;
        ZipfRun run = new ZipfRun();
        run.latency = recorder.getIntervalHistogram();
        run.throughput = completed.get() / elapsed;
        run.loads = lanes.stream().mapToLong(DeviceLane::loads).sum() - loadsBefore;
        run.errors = errors.get();
        synchronized (perModel) {
            run.perModel = perModel.clone();
        }
        stop.set(true);
        for (Thread t : clientThreads) {
            t.join(TimeUnit.SECONDS.toMillis(60));
        }
        for (DeviceLane lane : lanes) {
            run.resident.add(lane.device.id() + ": " + lane.cache.residentModels());
            lane.close();
        }
        return run;
    }

    /**
     * Static and partitioned: model i to device i mod 2. Any device: a model is assigned to a home
     * device the first time it is seen (the device with the fewest models); it is replicated to a
     * second device, if that device has a model slot left, when its holders' queues are all longer
     * than a batch and the other's is short; each request goes to the holder with the shortest
     * queue. This is the coordinator's placement in miniature, so the cache does not thrash.
     */
    private DeviceLane route(List<DeviceLane> lanes, Placement placement, int model) {
        if (!placement.anyDevice) {
            return lanes.get(model % lanes.size());
        }
        synchronized (lanes) {
            List<DeviceLane> holders = assigned.computeIfAbsent(model, m -> {
                DeviceLane home = lanes.get(0);
                for (DeviceLane lane : lanes) {
                    if (lane.assigned < home.assigned) {
                        home = lane;
                    }
                }
                home.assigned++;
                return new ArrayList<>(List.of(home));
            });
            DeviceLane best = holders.get(0);
            for (DeviceLane lane : holders) {
                if (lane.depth() < best.depth()) {
                    best = lane;
                }
            }
            if (best.depth() > maxBatch) {
                for (DeviceLane lane : lanes) {
                    if (!holders.contains(lane) && lane.assigned < placement.maxModels && lane.depth() < maxBatch / 4) {
                        lane.assigned++;
                        holders.add(lane);
                        return lane;
                    }
                }
            }
            return best;
        }
    }

    /** Any-device placement: the devices each model is assigned to (guarded by the lane list). */
    private final Map<Integer, List<DeviceLane>> assigned = new java.util.HashMap<>();

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
