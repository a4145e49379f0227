package io.flinkgpu.inference.cache;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

/** Builds model repositories in a temporary directory from the shipped test models. */
final class TestRepository {
    static final Path TEST_MODELS = Path.of("src/test/resources/models");
    static final ObjectMapper JSON = new ObjectMapper();

    private final Path root;

    TestRepository(Path root) {
        this.root = root;
    }

    Path root() {
        return root;
    }

    /** Copies test model {@code source} as {@code name} with the given versions, editing its config. */
    TestRepository add(String name, String source, Consumer<ObjectNode> config, String... versions) {
        try {
            Path dir = Files.createDirectories(root.resolve(name));
            ObjectNode node = (ObjectNode) JSON.readTree(TEST_MODELS.resolve(source).resolve("config.json").toFile());
            node.put("name", name);
            config.accept(node);
            Files.writeString(dir.resolve("config.json"), node.toPrettyString());
            for (String v : versions) {
                addVersion(name, source, v);
            }
            return this;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** An echo-fp32 copy accounting {@code memoryBytes} of device memory, without warm-up. */
    TestRepository echo(String name, long memoryBytes, String... versions) {
        return add(name, "echo-fp32", c -> {
            c.put("memory_bytes", memoryBytes);
            c.putObject("warmup").put("enabled", false);
        }, versions);
    }

    TestRepository addVersion(String name, String source, String version) {
        try {
            Path v = Files.createDirectories(root.resolve(name).resolve(version));
            Files.copy(TEST_MODELS.resolve(source).resolve("1/model.onnx"), v.resolve("model.onnx"));
            return this;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    TestRepository corrupt(String name, String version) {
        try {
            Files.write(root.resolve(name).resolve(version).resolve("model.onnx"), "not an onnx model".getBytes());
            return this;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    ModelRepository open() {
        return ModelRepository.open(root);
    }

    static ModelRepository.ResolvedModel resolve(ModelRepository repo, String name) {
        try {
            return repo.resolve(name, null);
        } catch (ProtocolException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A one-sample echo request. */
    static InferenceRequest echoRequest(String model, float value) {
        return new InferenceRequest("r-" + value, model, null,
                List.of(Tensor.ofFloats("x", new long[] {1, 3}, value, value + 1, value + 2)), RequestParameters.DEFAULTS);
    }
}
