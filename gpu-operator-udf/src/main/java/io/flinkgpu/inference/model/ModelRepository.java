package io.flinkgpu.inference.model;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A model repository laid out like Triton's:
 *
 * <pre>
 *   &lt;root&gt;/&lt;model&gt;/config.json
 *   &lt;root&gt;/&lt;model&gt;/&lt;version&gt;/model.onnx      (version: a positive integer)
 * </pre>
 *
 * A request without a version gets the highest one. Paths never leave the root: model and
 * version names are restricted to a safe alphabet and resolved paths are checked against the
 * root's real path, so neither {@code ..} nor a symbolic link can escape it. A model whose
 * config is invalid is skipped with a log line rather than failing the whole repository.
 */
public final class ModelRepository {
    private static final Logger LOG = LoggerFactory.getLogger(ModelRepository.class);
    public static final String CONFIG_FILE = "config.json";
    public static final String MODEL_FILE = "model.onnx";
    private static final Pattern SAFE_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    private static final Pattern VERSION = Pattern.compile("[1-9][0-9]{0,8}");

    static final ObjectMapper CONFIG_MAPPER = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES) // absent numbers mean 0: each config checks its own
            .build();

    private final Path root;
    private final Map<String, ModelEntry> models;

    /** One model's config and its versions, highest first. */
    public record ModelEntry(ModelConfig config, Map<String, Path> versionFiles, String defaultVersion) {}

    /** A request's model resolved to a concrete version and file. */
    public record ResolvedModel(ModelId id, ModelConfig config, Path file) {}

    private ModelRepository(Path root, Map<String, ModelEntry> models) {
        this.root = root;
        this.models = models;
    }

    public static ModelRepository open(Path root) {
        Path realRoot;
        try {
            realRoot = root.toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException("model repository " + root + " is not readable", e);
        }
        Map<String, ModelEntry> models = new TreeMap<>();
        try (Stream<Path> dirs = Files.list(realRoot)) {
            for (Path dir : (Iterable<Path>) dirs.sorted()::iterator) {
                String name = dir.getFileName().toString();
                if (!Files.isDirectory(dir) || !SAFE_NAME.matcher(name).matches()
                        || !Files.isRegularFile(dir.resolve(CONFIG_FILE))) {
                    continue;
                }
                try {
                    loadModel(realRoot, dir, name).ifPresent(e -> models.put(name, e));
                } catch (IOException | RuntimeException e) {
                    LOG.warn("Skipping model {} in {}: {}", name, realRoot, e.getMessage());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list model repository " + realRoot, e);
        }
        LOG.info("Model repository {}: {}", realRoot, models.keySet());
        return new ModelRepository(realRoot, Collections.unmodifiableMap(models));
    }

    private static Optional<ModelEntry> loadModel(Path realRoot, Path dir, String name) throws IOException {
        Path configFile = confined(realRoot, dir.resolve(CONFIG_FILE));
        ModelConfig config = CONFIG_MAPPER.readValue(configFile.toFile(), ModelConfig.class);
        if (config.name() != null && !config.name().equals(name)) {
            throw new IllegalArgumentException("config name '" + config.name() + "' differs from directory '" + name + "'");
        }
        Map<String, Path> versions = new TreeMap<>(Comparator.comparingInt((String v) -> Integer.parseInt(v)).reversed());
        try (Stream<Path> entries = Files.list(dir)) {
            for (Path v : (Iterable<Path>) entries::iterator) {
                String version = v.getFileName().toString();
                Path file = v.resolve(MODEL_FILE);
                if (VERSION.matcher(version).matches() && Files.isRegularFile(file)) {
                    versions.put(version, confined(realRoot, file));
                }
            }
        }
        if (versions.isEmpty()) {
            LOG.warn("Model {} has no version directory with a {}", name, MODEL_FILE);
            return Optional.empty();
        }
        String defaultVersion = versions.keySet().iterator().next();
        return Optional.of(new ModelEntry(config, Collections.unmodifiableMap(versions), defaultVersion));
    }

    private static Path confined(Path realRoot, Path path) throws IOException {
        Path real = path.toRealPath();
        if (!real.startsWith(realRoot)) {
            throw new IOException(path + " resolves outside the model repository");
        }
        return real;
    }

    public Path root() {
        return root;
    }

    public List<String> modelNames() {
        return new ArrayList<>(models.keySet());
    }

    public Optional<ModelEntry> model(String name) {
        return Optional.ofNullable(models.get(name));
    }

    /** Resolves a request's model and optional version, or fails with UNKNOWN_MODEL / UNKNOWN_VERSION. */
    public ResolvedModel resolve(String name, String version) throws ProtocolException {
        ModelEntry entry = models.get(name);
        if (entry == null) {
            throw new ProtocolException(ErrorCode.UNKNOWN_MODEL, "unknown model '" + name + "'; available: "
                    + models.keySet());
        }
        String v = version == null ? entry.defaultVersion() : version;
        // The version map orders keys numerically, so look up only well-formed versions.
        Path file = VERSION.matcher(v).matches() ? entry.versionFiles().get(v) : null;
        if (file == null) {
            throw new ProtocolException(ErrorCode.UNKNOWN_VERSION, "model '" + name + "' has no version '" + v
                    + "'; available: " + entry.versionFiles().keySet());
        }
        return new ResolvedModel(new ModelId(name, v), entry.config(), file);
    }

    /** The config of a known model version's model. */
    public ModelConfig resolveConfig(ModelId id) {
        ModelEntry entry = models.get(id.name());
        if (entry == null) {
            throw new IllegalArgumentException("unknown model " + id);
        }
        return entry.config();
    }
}
