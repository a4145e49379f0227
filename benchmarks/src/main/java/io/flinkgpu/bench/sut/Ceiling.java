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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * The physical limit: the scenario's model in a tight in-process loop at fixed batch sizes, with
 * the job's session options (1 intra-op thread). {@code raw} feeds pre-stacked direct buffers to
 * ONNX Runtime; {@code onnxmodel} goes through the library's {@link OnnxModel#run} (stacking the
 * requests' bytes and splitting the outputs), which isolates the cost of those tensor copies.
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
        List<Point> out = new ArrayList<>();
        CpuDevice device = new CpuDevice("cpu", 2L << 30, 1);
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (OrtSession.SessionOptions options = device.newSessionOptions();
                OrtSession session = env.createSession(modelFile.toString(), options)) {
            for (int b : batchSizes) {
                Map<String, OnnxTensor> feeds = stacked(env, scenario, b);
                try {
                    out.add(loop("raw", b, warmup, duration, () -> {
                        try (OrtSession.Result r = session.run(feeds)) {
                            r.get(0);
                        }
                    }));
                } finally {
                    feeds.values().forEach(OnnxTensor::close);
                }
            }
        }
        if (withOnnxModel) {
            try (OnnxModel model = OnnxModel.load(new ModelId(scenario.model(), "1"), modelFile, device)) {
                for (int b : batchSizes) {
                    List<InferenceRequest> requests = new ArrayList<>();
                    for (int i = 0; i < b; i++) {
                        requests.add(scenario.request("c" + i, i));
                    }
                    out.add(loop("onnxmodel", b, warmup, duration, () -> model.run(requests)));
                }
            }
        }
        return out;
    }

    interface Body {
        void run() throws Exception;
    }

    private static Point loop(String path, int batch, Duration warmup, Duration duration, Body body)
            throws Exception {
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
        double seconds = (now - start) / 1e9;
        return new Point(path, batch, runs * batch / seconds, h.getValueAtPercentile(50) / 1e6,
                h.getValueAtPercentile(99) / 1e6, runs, io.flinkgpu.bench.load.MachineLoad.now().otherCoresSince(load));
    }

    private static Map<String, OnnxTensor> stacked(OrtEnvironment env, Scenario scenario, int batch)
            throws Exception {
        Map<String, OnnxTensor> feeds = new LinkedHashMap<>();
        List<Tensor> first = scenario.inputs(0);
        for (int k = 0; k < first.size(); k++) {
            Tensor t0 = first.get(k);
            ByteBuffer buffer = ByteBuffer.allocateDirect(t0.data().length * batch).order(ByteOrder.nativeOrder());
            for (int i = 0; i < batch; i++) {
                buffer.put(scenario.inputs(i % scenario.samples()).get(k).data());
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
