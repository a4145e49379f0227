package io.flinkgpu.bench.sut;

import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.protocol.WireCodec;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

/**
 * The physical limit: the scenario's model in a tight in-process loop at fixed batch sizes, with
 * the job's session options (1 intra-op thread). {@code raw} feeds pre-stacked direct buffers to
 * ONNX Runtime; {@code onnxmodel} goes through the library's {@link OnnxModel#run} (stacking the
 * requests' bytes and splitting the outputs), which isolates the cost of those tensor copies.
 *
 * <p>Only samples of identical input shapes stack (as in the job's batcher). A scenario with
 * variable shapes (the NLP scenario's sequence-length buckets) has several such groups: every
 * batch is drawn from one group, each group is timed in its own loop (warm-up and duration split
 * evenly between groups) and reported as {@code raw [16]}, {@code raw [32]}, ..., and the
 * {@code raw} / {@code onnxmodel} point is the ceiling over the scenario's traffic mix, each group
 * weighted by its share of the samples ({@link #mix}).
 */
public final class Ceiling {
    private Ceiling() {}

    /** {@code otherCores}: CPU used by other processes meanwhile (see {@link io.flinkgpu.bench.load.MachineLoad}). */
    public record Point(String path, int batch, double samplesPerSecond, double p50Ms, double p99Ms, long runs,
            double otherCores) {
        public boolean contended() {
            return otherCores > io.flinkgpu.bench.load.PointResult.CONTENDED_OTHER_CORES;
        }
    }

    public static List<Point> measure(Scenario scenario, Path modelFile, int[] batchSizes, Duration warmup,
            Duration duration, boolean withOnnxModel) throws Exception {
        return measure(scenario, modelFile, batchSizes, warmup, duration, withOnnxModel,
                new CpuDevice("cpu", 2L << 30, 1));
    }

    /**
     * The ceiling on {@code device}: every run goes through {@link Device#execute}, so a simulated
     * GPU's speed model applies to the raw loop as it does in the job (the model still runs for
     * real on the CPU first), and the CPU device adds only its busy-time meter.
     */
    public static List<Point> measure(Scenario scenario, Path modelFile, int[] batchSizes, Duration warmup,
            Duration duration, boolean withOnnxModel, io.flinkgpu.inference.device.Device device) throws Exception {
        List<Point> out = new ArrayList<>();
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        List<List<Integer>> groups = shapeGroups(scenario);
        try (OrtSession.SessionOptions options = device.newSessionOptions();
                OrtSession session = env.createSession(modelFile.toString(), options)) {
            for (int b : batchSizes) {
                List<Timed> perGroup = new ArrayList<>();
                for (List<Integer> group : groups) {
                    Map<String, OnnxTensor> feeds = stacked(env, scenario, group, b);
                    try {
                        int samples = b;
                        perGroup.add(loop(share(warmup, groups.size()), share(duration, groups.size()), () -> {
                            try (OrtSession.Result r = device.execute(scenario.model(), samples, () -> session.run(feeds))) {
                                r.get(0);
                            }
                        }));
                    } finally {
                        feeds.values().forEach(OnnxTensor::close);
                    }
                }
                out.addAll(points("raw", b, scenario, groups, perGroup));
            }
        }
        if (withOnnxModel) {
            try (OnnxModel model = OnnxModel.load(new ModelId(scenario.model(), "1"), modelFile, device)) {
                for (int b : batchSizes) {
                    List<Timed> perGroup = new ArrayList<>();
                    for (List<Integer> group : groups) {
                        List<InferenceRequest> requests = new ArrayList<>();
                        for (int i = 0; i < b; i++) {
                            requests.add(scenario.request("c" + i, group.get(i % group.size())));
                        }
                        perGroup.add(loop(share(warmup, groups.size()), share(duration, groups.size()),
                                () -> model.run(requests)));
                    }
                    out.addAll(points("onnxmodel", b, scenario, groups, perGroup));
                }
            }
        }
        return out;
    }

    /**
     * The scenario's samples grouped by the shapes of all their inputs, ordered by the first
     * input's shape: only samples of one group stack into a batch (as in the job's batcher, which
     * keys batches by shape). A fixed-shape scenario is one group.
     */
    static List<List<Integer>> shapeGroups(Scenario scenario) {
        Map<String, List<Integer>> groups = new LinkedHashMap<>();
        for (int i = 0; i < scenario.samples(); i++) {
            StringBuilder key = new StringBuilder();
            for (Tensor t : scenario.inputs(i)) {
                key.append(t.name()).append(Arrays.toString(t.shape())).append(';');
            }
            groups.computeIfAbsent(key.toString(), k -> new ArrayList<>()).add(i);
        }
        List<List<Integer>> out = new ArrayList<>(groups.values());
        out.sort((a, b) -> Arrays.compare(scenario.inputs(a.get(0)).get(0).shape(),
                scenario.inputs(b.get(0)).get(0).shape()));
        return out;
    }

    /**
     * Each shape group's share of the scenario's samples, by {@link #label} (the labels of the
     * ceiling's per-group points); one group: empty, as the ceiling then has no per-group points.
     */
    public static Map<String, Double> groupShares(Scenario scenario) {
        List<List<Integer>> groups = shapeGroups(scenario);
        Map<String, Double> shares = new LinkedHashMap<>();
        if (groups.size() > 1) {
            for (List<Integer> g : groups) {
                shares.put(label(scenario, g), (double) g.size() / scenario.samples());
            }
        }
        return shares;
    }

    /** A group's label: the first input's non-batch dimensions, e.g. {@code [32]}. */
    static String label(Scenario scenario, List<Integer> group) {
        long[] shape = scenario.inputs(group.get(0)).get(0).shape();
        return Arrays.toString(Arrays.copyOfRange(shape, 1, shape.length));
    }

    private static Duration share(Duration total, int groups) {
        return total.dividedBy(groups);
    }

    /**
     * One group: its own point. Several: one point per group ({@code path} plus the group's
     * label) and the traffic-mix point under {@code path} itself (see {@link #mix}).
     */
    private static List<Point> points(String path, int batch, Scenario scenario, List<List<Integer>> groups,
            List<Timed> perGroup) {
        if (groups.size() == 1) {
            return List.of(perGroup.get(0).point(path, batch));
        }
        List<Point> out = new ArrayList<>();
        double[] shares = new double[groups.size()];
        for (int g = 0; g < groups.size(); g++) {
            shares[g] = (double) groups.get(g).size() / scenario.samples();
        }
        out.add(mix(path, batch, shares, perGroup));
        for (int g = 0; g < groups.size(); g++) {
            out.add(perGroup.get(g).point(path + " " + label(scenario, groups.get(g)), batch));
        }
        return out;
    }

    /**
     * The ceiling over a traffic mix in which a share {@code shares[g]} of the samples has the
     * shape of group {@code g}, every batch being uniform: samples/s is {@code batch} over the
     * share-weighted mean time per batch, and the latency percentiles are those of the batches,
     * each group's weighted by its share. Computed from each group's own loop rather than by
     * alternating groups in one loop, so that a short run of slow batches still counts every group
     * in its proportion.
     */
    static Point mix(String path, int batch, double[] shares, List<Timed> perGroup) {
        double secondsPerBatch = 0;
        long runs = 0;
        double other = 0;
        Histogram mixed = new Histogram(60_000_000_000L, 3);
        for (int g = 0; g < shares.length; g++) {
            Timed t = perGroup.get(g);
            secondsPerBatch += shares[g] * t.seconds() / t.runs();
            runs += t.runs();
            other = Math.max(other, t.otherCores());
            double weight = MIX_WEIGHT_SCALE * shares[g] / t.runs();
            for (HistogramIterationValue v : t.histogram().recordedValues()) {
                mixed.recordValueWithCount(v.getValueIteratedTo(),
                        Math.max(1, Math.round(v.getCountAddedInThisIterationStep() * weight)));
            }
        }
        return new Point(path, batch, batch / secondsPerBatch, mixed.getValueAtPercentile(50) / 1e6,
                mixed.getValueAtPercentile(99) / 1e6, runs, other);
    }

    private static final double MIX_WEIGHT_SCALE = 1e6;

    /** What one timed loop measured. */
    record Timed(Histogram histogram, long runs, double seconds, double otherCores) {
        Point point(String path, int batch) {
            return new Point(path, batch, runs * batch / seconds, histogram.getValueAtPercentile(50) / 1e6,
                    histogram.getValueAtPercentile(99) / 1e6, runs, otherCores);
        }
    }

    interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body} for {@code warmup}, then for {@code duration} (at least once), timing every call. */
    private static Timed loop(Duration warmup, Duration duration, Body body) throws Exception {
        long end = System.nanoTime() + warmup.toNanos();
        while (System.nanoTime() < end) {
            body.run();
        }
        Histogram h = new Histogram(60_000_000_000L, 3);
        io.flinkgpu.bench.load.MachineLoad load = io.flinkgpu.bench.load.MachineLoad.now();
        long start = System.nanoTime();
        end = start + duration.toNanos();
        long runs = 0;
        long now = start;
        while (now < end) {
            body.run();
            long t = System.nanoTime();
            h.recordValue(t - now);
            now = t;
            runs++;
        }
        return new Timed(h, runs, (now - start) / 1e9, io.flinkgpu.bench.load.MachineLoad.now().otherCoresSince(load));
    }

    private static Map<String, OnnxTensor> stacked(OrtEnvironment env, Scenario scenario, List<Integer> group,
            int batch) throws Exception {
        Map<String, OnnxTensor> feeds = new LinkedHashMap<>();
        List<Tensor> first = scenario.inputs(group.get(0));
        for (int k = 0; k < first.size(); k++) {
            Tensor t0 = first.get(k);
            ByteBuffer buffer = ByteBuffer.allocateDirect(t0.data().length * batch).order(ByteOrder.nativeOrder());
            for (int i = 0; i < batch; i++) {
                buffer.put(scenario.inputs(group.get(i % group.size())).get(k).data());
            }
            buffer.flip();
            long[] shape = t0.shape().clone();
            shape[0] = batch;
            OnnxJavaType type;
            switch (t0.datatype()) {
                case FP32:
                    type = OnnxJavaType.FLOAT;
                    break;
                case INT64:
                    type = OnnxJavaType.INT64;
                    break;
                default:
                    throw new IllegalArgumentException("unsupported " + t0.datatype());
            }
            feeds.put(t0.name(), OnnxTensor.createTensor(env, buffer, shape, type));
        }
        return feeds;
    }

    /** Microseconds per request for each codec step (one sample per request), measured in-process. */
    public static Map<String, Double> codecCosts(Scenario scenario, Duration duration) throws Exception {
        Map<String, Double> out = new LinkedHashMap<>();
        for (WireCodec codec : new WireCodec[] {new BinaryCodec(), new JsonCodec()}) {
            String name = codec instanceof BinaryCodec ? "binary" : "json";
            InferenceRequest request = scenario.request("r1-12345", 0);
            byte[] encoded = codec.encodeRequest(request);
            InferenceResponse response = InferenceResponse.success("r1-12345", scenario.model(), "1",
                    List.of(Tensor.ofFloats("out", new long[] {1, 10}, new float[10])), new Timings(1, 1, 8));
            byte[] encodedResponse = codec.encodeResponse(response);
            out.put(name + "_request_bytes", (double) encoded.length);
            out.put(name + "_encode_request_us", perCallMicros(duration, () -> codec.encodeRequest(request)));
            out.put(name + "_decode_request_us", perCallMicros(duration, () -> codec.decodeRequest(encoded)));
            out.put(name + "_encode_response_us", perCallMicros(duration, () -> codec.encodeResponse(response)));
            out.put(name + "_decode_response_us", perCallMicros(duration,
                    () -> codec.decodeResponse(encodedResponse)));
        }
        return out;
    }

    private static double perCallMicros(Duration duration, Body body) throws Exception {
        for (int i = 0; i < 2000; i++) {
            body.run();
        }
        long start = System.nanoTime();
        long end = start + duration.toNanos();
        long calls = 0;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 100; i++) {
                body.run();
            }
            calls += 100;
        }
        return (System.nanoTime() - start) / 1e3 / calls;
    }
}
