package io.flinkgpu.bench.scenario;

import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Image classification: the shipped Fashion-MNIST CNN (real trained weights, 91.3% test
 * accuracy) on the 2,000 real test images in {@code data/}.
 */
public final class ImageScenario implements Scenario {
    public static final String NAME = "image";
    static final String SOURCE_MODEL = "fashion-mnist-cnn";
    private static final long[] SHAPE = {1, 1, 28, 28};

    private final Path root;
    private final Tensor[] samples;

    public ImageScenario(Path root) throws Exception {
        this.root = root;
        FashionMnist data = FashionMnist.load(root);
        samples = new Tensor[data.size()];
        for (int i = 0; i < samples.length; i++) {
            samples[i] = Tensor.ofFloats("input", SHAPE, data.image(i));
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String model() {
        return "bench-fashion-mnist-cnn";
    }

    @Override
    public double sloMs() {
        return 50;
    }

    @Override
    public String sloRationale() {
        return "MLPerf Server bounds ResNet-50 p99 at 15 ms, several times its batch-1 latency on a datacenter GPU. "
                + "Here a request's floor is not the CNN (0.04 ms at batch 1) but the path: two hops through the "
                + "in-process Kafka broker (~3-8 ms each on these 2 shared cores) plus Flink, ~10-17 ms p50 "
                + "unloaded. The bound keeps MLPerf's headroom over that floor: ~3x the unloaded p50, 50 ms.";
    }

    @Override
    public String description() {
        return "Fashion-MNIST CNN (models/fashion-mnist-cnn, real trained weights, 56,714 parameters), input FP32 "
                + "[1,1,28,28] from the 2,000 real test images in data/fashion-mnist";
    }

    @Override
    public double startRate() {
        return 250;
    }

    @Override
    public void prepare(Path repo) throws Exception {
        ModelRepoWriter.writeConfig(repo, model(), 128,
                List.of(ModelRepoWriter.tensor("input", "FP32", 1, 28, 28)),
                List.of(ModelRepoWriter.tensor("logits", "FP32", 10)),
                "copy of models/fashion-mnist-cnn for the benchmark (max_batch_size 128, no dynamic_batching block)");
        Files.copy(root.resolve("models").resolve(SOURCE_MODEL).resolve("1").resolve("model.onnx"), modelFile(repo),
                StandardCopyOption.REPLACE_EXISTING);
    }

    @Override
    public int samples() {
        return samples.length;
    }

    @Override
    public List<Tensor> inputs(int sample) {
        return List.of(samples[sample]);
    }

    @Override
    public Map<String, Object> facts() {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("model_source", "models/fashion-mnist-cnn/1/model.onnx (real trained weights)");
        f.put("data", "data/fashion-mnist/test-images-2000.idx3-ubyte.gz (real images)");
        f.put("samples", samples.length);
        f.put("request_shape", SHAPE);
        return f;
    }
}
