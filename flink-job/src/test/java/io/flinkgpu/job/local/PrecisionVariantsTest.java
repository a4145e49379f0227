package io.flinkgpu.job.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.PrecisionVariant;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The shipped FP16 and INT8 variants of the Fashion-MNIST CNN, measured on the 2,000 held-out
 * test images: each loses no more accuracy than its config declares.
 */
class PrecisionVariantsTest {
    static final String MODEL = "fashion-mnist-cnn";

    @Test
    void everyVariantStaysWithinItsDeclaredAccuracyCost() throws Exception {
        Path root = FashionMnist.findRoot();
        FashionMnist data = FashionMnist.load(root);
        ModelRepository repository = ModelRepository.open(root.resolve("models"));
        ModelRepository.ResolvedModel resolved = repository.resolve(MODEL, null);
        ModelConfig config = resolved.config();
        assertThat(config.precisionVariants()).extracting(PrecisionVariant::precision).contains("FP16", "INT8");

        double full = accuracy(resolved.file(), data);
        System.out.printf("%s FP32 accuracy on %d held-out images: %.4f (%d bytes)%n", MODEL, data.size(), full,
                Files.size(resolved.file()));
        assertThat(full).isGreaterThan(0.88);
        for (PrecisionVariant v : config.precisionVariants()) {
            Path file = resolved.file().resolveSibling(v.file());
            double acc = accuracy(file, data);
            System.out.printf("%s %s accuracy: %.4f, cost %.4f (declared %.4f) (%d bytes)%n", MODEL, v.precision(), acc,
                    full - acc, v.accuracyCost(), Files.size(file));
            assertThat(full - acc).as("%s accuracy cost", v.precision()).isLessThanOrEqualTo(v.accuracyCost());
            assertThat(Files.size(file)).as("%s is smaller", v.precision()).isLessThan(Files.size(resolved.file()));
        }
    }

    private static double accuracy(Path file, FashionMnist data) throws Exception {
        int correct = 0;
        try (OnnxModel model = OnnxModel.load(new ModelId(MODEL, file.getFileName().toString()), file,
                new CpuDevice("cpu:0", 1L << 30, 1))) {
            for (int start = 0; start < data.size(); start += 50) {
                List<InferenceRequest> batch = new ArrayList<>();
                for (int i = start; i < Math.min(data.size(), start + 50); i++) {
                    batch.add(new InferenceRequest("i" + i, MODEL, null,
                            List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, data.image(i))), null));
                }
                List<List<Tensor>> out = model.run(batch);
                for (int k = 0; k < out.size(); k++) {
                    float[] logits = out.get(k).get(0).asFloats();
                    int best = 0;
                    for (int c = 1; c < logits.length; c++) {
                        best = logits[c] > logits[best] ? c : best;
                    }
                    correct += best == data.label(start + k) ? 1 : 0;
                }
            }
        }
        return (double) correct / data.size();
    }
}
