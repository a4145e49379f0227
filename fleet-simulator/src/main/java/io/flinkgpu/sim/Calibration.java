package io.flinkgpu.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.device.SpeedModel;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Speed models t(b) = alpha + beta * b (the library's {@link SpeedModel}) per architecture and
 * device kind, each with where it comes from.
 *
 * <ul>
 *   <li><b>GPU</b> ({@code a100}): BERT-base (128 tokens) and BERT-large (384 tokens) are least-squares
 *       fits to NVIDIA's published FP16 TensorRT latencies on an A100 40 GB (TensorRT repository,
 *       {@code demo/BERT/README.md}, "Inference performance: NVIDIA A100 (40GB)", average column).
 *       MiniLM-L6 is derived from the BERT-base fit: half the layers (alpha / 2) and an eighth of
 *       the multiply-adds per token (384 vs 768 hidden, 6 vs 12 layers: beta / 8). For the
 *       Fashion-MNIST CNN and the DLRM-shaped model no published datacenter-GPU figure of these
 *       shapes exists: alpha is an assumed per-call overhead of ONNX Runtime's CUDA provider and
 *       beta an assumed per-sample cost, stated as such.
 *   <li><b>CPU</b> ({@code cpu}): fits to this project's own ceiling runs (raw ONNX Runtime, one
 *       intra-op thread, batch p50 at batch 1..128), read from {@code docs/benchmarks/full/result.json}
 *       when present. BERT-base and BERT-large have no CPU run: MiniLM's fit scaled by their
 *       multiply-add ratio (8x and 8 x 3 x 3 = 72x), an assumption.
 * </ul>
 */
public final class Calibration {
    /** Where one speed model comes from. */
    public record Entry(Arch arch, String deviceKind, SpeedModel speed, double alphaMs, double betaMs, String source) {}

    /** BERT-base, sequence 128, FP16, A100 40 GB: (batch, average ms), TensorRT demo/BERT README. */
    static final double[][] BERT_BASE_128_A100 = {{1, 0.67}, {2, 0.83}, {4, 1.02}, {8, 1.38}, {12, 1.87},
        {16, 2.18}, {24, 3.34}, {32, 4.10}, {64, 8.05}, {128, 16.14}};
    /** BERT-large, sequence 384, FP16, A100 40 GB: (batch, average ms), same table. */
    static final double[][] BERT_LARGE_384_A100 = {{1, 3.12}, {2, 4.15}, {4, 5.96}, {8, 11.53}, {12, 16.22},
        {16, 21.92}, {24, 32.43}, {32, 43.01}, {64, 83.63}, {128, 163.70}};
    /**
     * (batch, median ms) of NVIDIA's DLRM served by Triton, TorchScript FP16 on a V100-32G, the
     * batches where the server's fixed cost is amortised (NVIDIA DeepLearningExamples,
     * PyTorch/Recommendation/DLRM/triton/README.md, "Throughput/Latency results").
     */
    static final double[][] DLRM_V100_TRITON_FP16_LARGE_BATCHES = {{1024, 1.379}, {2048, 1.817}, {4096, 2.730}};

    static final String TENSORRT_SOURCE = "least-squares fit to NVIDIA TensorRT demo/BERT README, A100 40GB, FP16, "
            + "average latency, batch 1-128";

    /** The CPU ceiling of docs/benchmarks/full/result.json at the time of writing: used only if the file is absent. */
    private static final double[][] CPU_IMAGE_FALLBACK = {{1, 0.022}, {8, 0.119}, {32, 0.453}, {64, 0.893}, {128, 1.836}};
    private static final double[][] CPU_DLRM_FALLBACK = {{1, 0.067}, {8, 0.140}, {32, 0.411}, {64, 0.774}, {128, 1.521}};
    private static final double[][] CPU_NLP_FALLBACK = {{1, 9.503}, {8, 65.995}, {32, 288.358}, {64, 546.832},
        {128, 1226.834}};

    private final Map<String, Map<Arch, Entry>> byKind = new LinkedHashMap<>();

    private Calibration() {}

    public SpeedModel speed(Arch arch, String deviceKind) {
        Map<Arch, Entry> k = byKind.get(deviceKind);
        if (k == null || !k.containsKey(arch)) {
            throw new IllegalArgumentException("no speed model for " + arch + " on " + deviceKind);
        }
        return k.get(arch).speed();
    }

    /** A copy with one more device kind (e.g. a benchmark's simulated GPU of a given speed). */
    public Calibration withKind(String kind, Map<Arch, SpeedModel> speeds, String source) {
        Calibration c = new Calibration();
        byKind.forEach((k, m) -> c.byKind.put(k, new EnumMap<>(m)));
        speeds.forEach((a, sp) -> {
            long one = sp.latencyNanos(1, 0);
            long two = sp.latencyNanos(2, 0);
            double beta = (two - one) / 1e6;
            c.byKind.computeIfAbsent(kind, k -> new EnumMap<>(Arch.class))
                    .put(a, new Entry(a, kind, sp, one / 1e6 - beta, beta, source));
        });
        return c;
    }

    public boolean knows(String deviceKind) {
        return byKind.containsKey(deviceKind);
    }

    public List<Entry> entries() {
        List<Entry> out = new ArrayList<>();
        byKind.values().forEach(m -> out.addAll(m.values()));
        return out;
    }

    /** The calibration, with the CPU tables read from {@code <repo>/docs/benchmarks/full/result.json} if it exists. */
    public static Calibration load(Path repositoryRoot) {
        Calibration c = new Calibration();
        double[] base = fit(BERT_BASE_128_A100);
        double[] large = fit(BERT_LARGE_384_A100);
        c.put(Arch.BERT_BASE_128, "a100", base[0], base[1], TENSORRT_SOURCE + " (sequence 128)");
        c.put(Arch.BERT_LARGE_384, "a100", large[0], large[1], TENSORRT_SOURCE + " (sequence 384)");
        c.put(Arch.MINILM_L6, "a100", base[0] / 2, base[1] / 8, "derived from the BERT-base fit: 6 of 12 layers "
                + "(alpha / 2), hidden 384 of 768 and 6 of 12 layers (beta / 8); no published MiniLM-L6 A100 table");
        double[] dlrm = fit(DLRM_V100_TRITON_FP16_LARGE_BATCHES);
        c.put(Arch.DLRM, "a100", 0.10, dlrm[1], "per sample: the slope of NVIDIA DeepLearningExamples' published "
                + "DLRM latencies (PyTorch/Recommendation/DLRM/triton/README.md, TorchScript FP16 on V100-32G, median, "
                + "batch 1024-4096), a model with about 6x this one's multiply-adds on an older GPU, so an upper bound "
                + "here; per call: ASSUMPTION 0.1 ms (CUDA provider launch and copies; the published batch-1 latency, "
                + "about 1 ms, is a Triton round trip)");
        c.put(Arch.IMAGE_CNN, "a100", 0.06, 0.0008, "ASSUMPTION (no published figure for this 57k-parameter CNN): "
                + "0.06 ms per call, 0.8 us per sample");

        Path result = repositoryRoot.resolve("docs/benchmarks/full/result.json");
        Map<String, double[][]> cpu = new LinkedHashMap<>();
        String origin;
        if (Files.isRegularFile(result)) {
            cpu = readCeilings(result);
            origin = "docs/benchmarks/full/result.json";
        } else {
            origin = "the ceiling of docs/benchmarks/full/result.json as built in (file not found)";
        }
        cpu.putIfAbsent("image", CPU_IMAGE_FALLBACK);
        cpu.putIfAbsent("recommendation", CPU_DLRM_FALLBACK);
        cpu.putIfAbsent("nlp", CPU_NLP_FALLBACK);
        double[] img = fit(cpu.get("image"));
        double[] rec = fit(cpu.get("recommendation"));
        double[] nlp = fit(cpu.get("nlp"));
        String how = "least-squares fit to this project's CPU ceiling (raw ONNX Runtime, 1 intra-op thread, batch p50), "
                + origin + ", scenario ";
        c.put(Arch.IMAGE_CNN, "cpu", img[0], img[1], how + "image");
        c.put(Arch.DLRM, "cpu", rec[0], rec[1], how + "recommendation");
        c.put(Arch.MINILM_L6, "cpu", nlp[0], nlp[1], how + "nlp (token buckets 16-128 mixed)");
        c.put(Arch.BERT_BASE_128, "cpu", nlp[0] * 8, nlp[1] * 8, "ASSUMPTION: the MiniLM-L6 CPU fit x 8 (multiply-adds)");
        c.put(Arch.BERT_LARGE_384, "cpu", nlp[0] * 72, nlp[1] * 72,
                "ASSUMPTION: the MiniLM-L6 CPU fit x 72 (8 x 3 for size, x 3 for 384 tokens)");
        return c;
    }

    private void put(Arch arch, String kind, double alphaMs, double betaMs, String source) {
        double a = Math.max(0, alphaMs);
        double b = Math.max(0, betaMs);
        byKind.computeIfAbsent(kind, k -> new EnumMap<>(Arch.class))
                .put(arch, new Entry(arch, kind, SpeedModel.linear(a, b), a, b, source));
    }

    /** Per scenario, (batch, p50 ms) of the raw ONNX Runtime ceiling (the whole-corpus path, not per-bucket rows). */
    static Map<String, double[][]> readCeilings(Path result) {
        try {
            JsonNode root = new ObjectMapper().readTree(Files.readString(result));
            Map<String, double[][]> out = new LinkedHashMap<>();
            for (JsonNode s : root.path("scenarios")) {
                List<double[]> points = new ArrayList<>();
                for (JsonNode p : s.path("ceiling")) {
                    if ("raw".equals(p.path("path").asText())) {
                        points.add(new double[] {p.path("batch").asDouble(), p.path("p50Ms").asDouble()});
                    }
                }
                if (points.size() >= 2) {
                    out.put(s.path("name").asText(), points.toArray(new double[0][]));
                }
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + result, e);
        }
    }

    /** Least-squares (alpha, beta) of t = alpha + beta * b. */
    static double[] fit(double[][] points) {
        double n = points.length;
        double sx = 0;
        double sy = 0;
        double sxx = 0;
        double sxy = 0;
        for (double[] p : points) {
            sx += p[0];
            sy += p[1];
            sxx += p[0] * p[0];
            sxy += p[0] * p[1];
        }
        double beta = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        double alpha = (sy - beta * sx) / n;
        if (alpha < 0) { // a fit through the origin's side: keep the per-sample slope, no negative overhead
            alpha = 0;
            beta = sxy / sxx;
        }
        return new double[] {alpha, beta};
    }

    public String describe(Entry e) {
        return String.format(Locale.ROOT, "%s on %s: %.4f + %.5f*b ms", e.arch().label(), e.deviceKind(), e.alphaMs(),
                e.betaMs());
    }
}
