package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Under memory pressure the cache loads an allowed lower-precision variant instead of evicting. */
class PrecisionVariantCacheTest {
    static final long MIB = 1L << 20;
    static final Path SHIPPED = Path.of("../models/fashion-mnist-cnn");

    @TempDir
    Path root;

    private final ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false)
            .withWarmupWorkers(0).withRoomWait(Duration.ZERO);

    /** Two copies of the shipped CNN, each accounting 6 MiB at full precision. */
    private ModelRepository repository(double maxAccuracyCost) throws Exception {
        for (String name : List.of("first", "second")) {
            Path version = Files.createDirectories(root.resolve(name).resolve("1"));
            for (String file : List.of("model.onnx", "model.fp16.onnx", "model.int8.onnx")) {
                Files.copy(SHIPPED.resolve("1").resolve(file), version.resolve(file));
            }
            ObjectNode config = (ObjectNode) new ObjectMapper().readTree(SHIPPED.resolve("config.json").toFile());
            config.put("name", name);
            config.put("memory_bytes", 6 * MIB);
            config.put("max_accuracy_cost", maxAccuracyCost);
            Files.writeString(root.resolve(name).resolve("config.json"), config.toString());
        }
        return ModelRepository.open(root);
    }

    private static float[] run(ModelCache cache, ModelRepository repo, String name) throws Exception {
        float[] image = new float[28 * 28];
        for (int i = 0; i < image.length; i++) {
            image[i] = (i % 29) / 29f;
        }
        try (ModelLease lease = cache.acquire(repo.resolve(name, null))) {
            return lease.model().run(List.of(new InferenceRequest("r", name, null,
                    List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, image)), null))).get(0).get(0).asFloats();
        }
    }

    @Test
    void loadsTheCheapestFittingVariantInsteadOfEvicting() throws Exception {
        ModelRepository repo = repository(0.005);
        SimulatedDevice device = new SimulatedDevice("sim:0", 8 * MIB, SpeedModel.CPU_SPEED);
        try (ModelCache cache = new ModelCache(device, settings, System::nanoTime, ModelCache.Listener.NONE)) {
            float[] full = run(cache, repo, "first"); // 6 MiB of 8: 2 MiB left
            float[] reduced = run(cache, repo, "second"); // FP16 (3 MiB) does not fit, INT8 (~1.8 MiB) does

            assertThat(cache.residentModels()).extracting(ModelId::name).containsExactlyInAnyOrder("first", "second");
            assertThat(cache.precision(new ModelId("first", "1"))).isEmpty();
            assertThat(cache.precision(new ModelId("second", "1"))).contains("INT8");
            assertThat(cache.stats().evictions()).isZero();
            assertThat(argmax(reduced)).isEqualTo(argmax(full));
        }
    }

    @Test
    void evictsAsUsualWhenTheConfigAllowsNoAccuracyCost() throws Exception {
        ModelRepository repo = repository(0);
        SimulatedDevice device = new SimulatedDevice("sim:0", 8 * MIB, SpeedModel.CPU_SPEED);
        try (ModelCache cache = new ModelCache(device, settings, System::nanoTime, ModelCache.Listener.NONE)) {
            run(cache, repo, "first");
            run(cache, repo, "second");
            assertThat(cache.residentModels()).extracting(ModelId::name).containsExactly("second");
            assertThat(cache.precision(new ModelId("second", "1"))).isEmpty();
            assertThat(cache.stats().evictions()).isEqualTo(1);
        }
    }

    @Test
    void loadsFullPrecisionWhenThereIsRoom() throws Exception {
        ModelRepository repo = repository(0.005);
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.CPU_SPEED);
        try (ModelCache cache = new ModelCache(device, settings, System::nanoTime, ModelCache.Listener.NONE)) {
            run(cache, repo, "first");
            run(cache, repo, "second");
            assertThat(cache.precision(new ModelId("second", "1"))).isEmpty();
        }
    }

    private static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            best = v[i] > v[best] ? i : best;
        }
        return best;
    }
}
