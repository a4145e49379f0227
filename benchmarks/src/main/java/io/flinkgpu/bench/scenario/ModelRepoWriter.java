package io.flinkgpu.bench.scenario;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a model's config.json in the repository layout the job reads. No {@code dynamic_batching}
 * block is written on purpose: a model's block would override the operator's options, and the
 * benchmark varies those with {@code -D}.
 */
public final class ModelRepoWriter {
    private ModelRepoWriter() {}

    public static Map<String, Object> tensor(String name, String datatype, long... shape) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("name", name);
        t.put("datatype", datatype);
        t.put("shape", shape);
        return t;
    }

    public static void writeConfig(Path repo, String model, int maxBatchSize, List<Map<String, Object>> inputs,
            List<Map<String, Object>> outputs, String description) throws IOException {
        Map<String, Object> config = new LinkedHashMap<>();
        config.put("name", model);
        config.put("platform", "onnxruntime");
        config.put("max_batch_size", maxBatchSize);
        config.put("inputs", inputs);
        config.put("outputs", outputs);
        config.put("description", description);
        Path dir = repo.resolve(model);
        Files.createDirectories(dir.resolve("1"));
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(dir.resolve("config.json").toFile(),
                config);
    }
}
