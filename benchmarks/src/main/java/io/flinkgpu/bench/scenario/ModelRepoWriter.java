package io.flinkgpu.bench.scenario;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Writes models in the repository layout the job reads: a scenario's own config.json, or a copy of
 * a shipped model under another name with its config edited. {@link #writeConfig} writes no
 * {@code dynamic_batching} block on purpose: a model's block would override the operator's
 * options, and the benchmark varies those with {@code -D}.
 */
public final class ModelRepoWriter {
    /** The file of version 1 a model is served from. */
    public static final String MODEL_FILE = "model.onnx";

    private static final ObjectMapper JSON = new ObjectMapper();

    private ModelRepoWriter() {}

    /**
     * Copies the shipped model in {@code source} (its directory under {@code models/}) into
     * {@code repo} as {@code name}: version 1's {@value #MODEL_FILE} ({@code allFiles}: every file of
     * version 1, its precision variants too) and its config.json, renamed and then passed through
     * {@code edit}.
     */
    public static void copy(Path source, Path repo, String name, boolean allFiles, Consumer<ObjectNode> edit)
            throws IOException {
        Path version = Files.createDirectories(repo.resolve(name).resolve("1"));
        try (Stream<Path> files = Files.list(source.resolve("1"))) {
            for (Path f : files.filter(f -> allFiles || f.getFileName().toString().equals(MODEL_FILE)).toList()) {
                Files.copy(f, version.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        ObjectNode config = (ObjectNode) JSON.readTree(source.resolve("config.json").toFile());
        config.put("name", name);
        edit.accept(config);
        JSON.writerWithDefaultPrettyPrinter().writeValue(repo.resolve(name).resolve("config.json").toFile(), config);
    }

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
        JSON.writerWithDefaultPrettyPrinter().writeValue(dir.resolve("config.json").toFile(), config);
    }
}
