package io.flinkgpu.bench.idle;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.job.local.FashionMnist;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * What a batch costs an execution thread that was idle before it: the shipped Fashion-MNIST CNN
 * through the library's own {@link OnnxModel#run} on the CPU device (one intra-op thread, as the
 * job runs it), on one executor thread as in the job, once back to back and once with an idle
 * gap between batches. Per point: the thread CPU time of the run ({@link ThreadMXBean}) and its
 * wall time.
 *
 * <p>Why: the job's inference threads take several times raw ONNX Runtime's CPU per request at
 * low load (the rate sweeps' {@code job_inference_threads} against the ceiling, which runs batches
 * back to back). Comparing the same code back to back and after idle gaps, in one run and with
 * nothing else running, separates what the library's code costs from what a thread that wakes up
 * on this machine pays.
 *
 * <p>With {@code --neighbours}, the same points also run beside that many busy threads in the same
 * JVM, each streaming through its own working set of {@code --neighbour-mib} MiB: what a batch
 * costs when the other threads of a loaded job (source, broker, sink, load generator) keep the
 * cores and caches busy, as they do at goodput. Every point is compared with the back-to-back
 * point of its batch size with no neighbours, which is how the ceiling runs.
 *
 * <p>Writes {@code idle-gap.json} and {@code idle-gap.md} to {@code --out}. Numbers come only from
 * the run.
 */
@Command(name = "idle-gap-benchmark", mixinStandardHelpOptions = true,
        description = "A batch's CPU time on a thread after idle gaps of several lengths")
public final class IdleGapBenchmark implements Callable<Integer> {
    @Option(names = "--batches", split = ",", description = "Batch sizes (default: ${DEFAULT-VALUE}).")
    int[] batches = {1, 8};

    @Option(names = "--gaps-us", split = ",", description = "Idle gaps between batches in microseconds, 0 for "
            + "back to back (default: ${DEFAULT-VALUE}).")
    long[] gapsUs = {0, 250, 1000, 4000, 16000};

    @Option(names = "--seconds", description = "Measured seconds per point (default: ${DEFAULT-VALUE}).")
    double seconds = 3;

    @Option(names = "--warmup-seconds", description = "Back-to-back runs before each batch size's points "
            + "(default: ${DEFAULT-VALUE}).")
    double warmupSeconds = 2;

    @Option(names = "--neighbours", split = ",", description = "Busy neighbour threads beside the inference "
            + "thread, one set of points per count (default: ${DEFAULT-VALUE}).")
    int[] neighbours = {0, 1, 2};

    @Option(names = "--neighbour-mib", description = "Working set each neighbour streams through, in MiB "
            + "(default: ${DEFAULT-VALUE}).")
    int neighbourMib = 8;

    @Option(names = "--out", description = "Directory for idle-gap.json and idle-gap.md "
            + "(default: ${DEFAULT-VALUE}).")
    Path out = Path.of("docs/benchmarks/idle-gap");

    /**
     * One measured point: {@code runs} batches of {@code batch} samples, {@code gapUs} apart, beside
     * {@code neighbours} busy threads.
     */
    public record Point(int batch, long gapUs, int neighbours, long runs, double cpuUsPerBatch, double wallUsP50) {
        public double cpuUsPerSample() {
            return cpuUsPerBatch / batch;
        }
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new IdleGapBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Path root = FashionMnist.findRoot();
        ImageScenario images = new ImageScenario(root);
        Path modelFile = root.resolve("models/fashion-mnist-cnn/1/model.onnx");
        Path dir = out.isAbsolute() ? out : root.resolve(out);
        Files.createDirectories(dir);
        String started = Instant.now().toString();
        List<Point> points = new ArrayList<>();
        ExecutorService thread = Executors.newSingleThreadExecutor(r -> new Thread(r, "idle-gap-inference"));
        try (OnnxModel model = OnnxModel.load(new ModelId("fashion-mnist-cnn", "1"), modelFile,
                new CpuDevice("cpu", 2L << 30, 1))) {
            for (int b : batches) {
                List<InferenceRequest> requests = new ArrayList<>();
                for (int i = 0; i < b; i++) {
                    requests.add(images.request("idle-" + i, i));
                }
                measure(thread, model, requests, 0, 0, warmupSeconds);
                for (int n : neighbours) {
                    try (Neighbours busy = Neighbours.start(n, neighbourMib)) {
                        for (long gap : gapsUs) {
                            Point p = measure(thread, model, requests, gap, n, seconds);
                            points.add(p);
                            System.out.printf(Locale.ROOT, "batch %d, gap %d us, %d neighbours: %d runs, thread CPU "
                                    + "%.1f us per batch, wall p50 %.1f us (neighbour passes %d)%n", b, gap, n,
                                    p.runs(), p.cpuUsPerBatch(), p.wallUsP50(), busy.passes());
                        }
                    }
                }
            }
        } finally {
            thread.shutdownNow();
        }
        ObjectMapper json = new ObjectMapper();
        ObjectNode result = json.createObjectNode();
        result.put("started", started);
        result.put("finished", Instant.now().toString());
        result.put("command", command());
        result.put("git", ToolFiles.revision());
        result.put("machine", machine());
        ArrayNode rows = result.putArray("points");
        for (Point p : points) {
            ObjectNode row = rows.addObject();
            row.put("batch", p.batch());
            row.put("gap_us", p.gapUs());
            row.put("neighbours", p.neighbours());
            row.put("runs", p.runs());
            row.put("cpu_us_per_batch", p.cpuUsPerBatch());
            row.put("cpu_us_per_sample", p.cpuUsPerSample());
            row.put("wall_us_p50", p.wallUsP50());
            row.put("cpu_vs_back_to_back", vsBackToBack(points, p));
        }
        ToolFiles.writeJson(dir.resolve("idle-gap.json"), result);
        Files.writeString(dir.resolve("idle-gap.md"), ToolFiles.writtenBy("IdleGapBenchmark")
                + "# A batch after an idle gap\n\nCommand (from the repository root): `" + result.get("command").asText()
                + "`; revision " + result.get("git").asText() + "; " + result.get("machine").asText() + "; "
                + started + "\n\n" + table(points));
        System.out.println("Wrote " + dir.resolve("idle-gap.md"));
        return 0;
    }

    /**
     * Runs {@code requests} as one batch on {@code thread} for {@code seconds}, {@code gapUs} apart;
     * {@code neighbours} is how many busy threads the caller runs beside it.
     */
    static Point measure(ExecutorService thread, OnnxModel model, List<InferenceRequest> requests, long gapUs,
            int neighbours, double seconds) throws Exception {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        long end = System.nanoTime() + (long) (seconds * 1e9);
        List<Long> walls = new ArrayList<>();
        long cpu = 0;
        while (System.nanoTime() < end) {
            long[] timed = thread.submit(() -> {
                long c0 = mx.getCurrentThreadCpuTime();
                long w0 = System.nanoTime();
                model.run(requests);
                return new long[] {mx.getCurrentThreadCpuTime() - c0, System.nanoTime() - w0};
            }).get();
            cpu += timed[0];
            walls.add(timed[1]);
            if (gapUs > 0) {
                LockSupport.parkNanos(gapUs * 1000);
            }
        }
        long[] sorted = walls.stream().mapToLong(Long::longValue).sorted().toArray();
        double p50 = sorted.length == 0 ? Double.NaN : sorted[sorted.length / 2] / 1e3;
        return new Point(requests.size(), gapUs, neighbours, sorted.length, sorted.length == 0 ? Double.NaN
                : cpu / 1e3 / sorted.length, p50);
    }

    /**
     * {@code p}'s CPU per batch over that of the back-to-back point (gap 0, no neighbours) of the same
     * batch size; NaN without one.
     */
    static double vsBackToBack(List<Point> points, Point p) {
        return points.stream().filter(q -> q.batch() == p.batch() && q.gapUs() == 0 && q.neighbours() == 0)
                .findFirst()
                .map(q -> p.cpuUsPerBatch() / q.cpuUsPerBatch()).orElse(Double.NaN);
    }

    /** The report's table: one row per point. */
    static String table(List<Point> points) {
        StringBuilder md = new StringBuilder();
        md.append("| batch | idle gap before each batch | busy neighbours | batches | thread CPU per batch "
                + "| per sample | vs back to back alone | wall p50 per batch |\n|---:|---|---:|---:|---:|---:|---:|---:|\n");
        for (Point p : points) {
            md.append(String.format(Locale.ROOT, "| %d | %s | %d | %d | %.1f us | %.1f us | %.2f | %.1f us |%n",
                    p.batch(), p.gapUs() == 0 ? "none (back to back)" : p.gapUs() + " us", p.neighbours(), p.runs(),
                    p.cpuUsPerBatch(),
                    p.cpuUsPerSample(), vsBackToBack(points, p), p.wallUsP50()));
        }
        return md.toString();
    }

    String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + IdleGapBenchmark.class.getName()
                + " -Dbench.args=\"--batches=" + Arrays.stream(batches).mapToObj(String::valueOf)
                        .collect(Collectors.joining(","))
                + " --gaps-us=" + Arrays.stream(gapsUs).mapToObj(String::valueOf).collect(Collectors.joining(","))
                + " --neighbours=" + Arrays.stream(neighbours).mapToObj(String::valueOf)
                        .collect(Collectors.joining(","))
                + String.format(Locale.ROOT, " --neighbour-mib=%d --seconds=%s --warmup-seconds=%s\"", neighbourMib,
                        seconds, warmupSeconds);
    }

    String machine() {
        return ToolFiles.cores() + ", Java " + System.getProperty("java.version") + ", nothing else running in the JVM"
                + (Arrays.stream(neighbours).anyMatch(n -> n > 0) ? " but the rows' busy neighbours" : "");
    }

    /**
     * Busy threads beside the inference thread: each streams through its own working set, a
     * multiply-add per 64-byte line, without sleeping, until closed.
     */
    static final class Neighbours implements AutoCloseable {
        private final List<Thread> threads = new ArrayList<>();
        private final AtomicLong passes = new AtomicLong();
        private volatile boolean running = true;

        static Neighbours start(int count, int mib) {
            Neighbours n = new Neighbours();
            for (int i = 0; i < count; i++) {
                long[] set = new long[Math.max(1, mib) << 17];
                Thread t = new Thread(() -> n.stream(set), "idle-gap-neighbour-" + i);
                t.setDaemon(true);
                n.threads.add(t);
                t.start();
            }
            return n;
        }

        private void stream(long[] set) {
            long x = 1;
            while (running) {
                for (int i = 0; i < set.length; i += 8) {
                    x = x * 6364136223846793005L + set[i];
                    set[i] = x;
                }
                passes.incrementAndGet();
            }
        }

        /** Full passes over their working sets the neighbours have made so far. */
        long passes() {
            return passes.get();
        }

        @Override
        public void close() throws InterruptedException {
            running = false;
            for (Thread t : threads) {
                t.join();
            }
        }
    }
}
