package io.flinkgpu.inference.model;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
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
 * A request without a version gets the highest one the config's {@code version_policy} serves
 * (default: every version). Paths never leave the root: model and
 * version names are restricted to a safe alphabet and resolved paths are checked against the
 * root's real path, so neither {@code ..} nor a symbolic link can escape it. A model whose
 * config is invalid is skipped with a log line rather than failing the whole repository.
 *
 * <p>Hot reload: {@link #scan} reads what is on disk without serving it, and {@link #publish}
 * switches one model to a new entry atomically (readers see an immutable snapshot), so that a
 * hot reload can load and warm up a new version before traffic moves to it. Configs
 * of versions no longer served stay known, so requests already pinned to them can finish.
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
    private volatile Map<String, ModelEntry> models;
    private final Map<ModelId, ModelConfig> retiredConfigs = new ConcurrentHashMap<>();

    /**
     * One model's config and its served versions, highest first. {@code configDigest} identifies
     * the config file's content, so a rescan can tell an unchanged model from a changed one.
     */
    public record ModelEntry(ModelConfig config, Map<String, Path> versionFiles, String defaultVersion,
            String configDigest) {
        /** Same config file content and same version files. */
        public boolean sameAs(ModelEntry other) {
            return other != null && configDigest.equals(other.configDigest) && versionFiles.equals(other.versionFiles);
        }

        public ResolvedModel resolved(String name, String version) {
            return new ResolvedModel(new ModelId(name, version), config, versionFiles.get(version));
        }
    }

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
        Map<String, ModelEntry> models = scan(realRoot);
        LOG.info("Model repository {}: {}", realRoot, models.keySet());
        return new ModelRepository(realRoot, models);
    }

    /** What the repository holds on disk now, version policies applied, without serving it. */
    public Map<String, ModelEntry> scan() {
        return scan(root);
    }

    /** The models served now. */
    public Map<String, ModelEntry> served() {
        return models;
    }

    /**
     * Serves {@code entry} for model {@code name} from now on; null stops serving the model.
     * Versions that are no longer served keep their config for requests already pinned to them.
     */
    public synchronized void publish(String name, ModelEntry entry) {
        Map<String, ModelEntry> next = new TreeMap<>(models);
        ModelEntry old = entry == null ? next.remove(name) : next.put(name, entry);
        if (old != null) {
            for (String v : old.versionFiles().keySet()) {
                if (entry == null || !entry.versionFiles().containsKey(v)) {
                    retiredConfigs.put(new ModelId(name, v), old.config());
                }
            }
        }
        if (entry != null) {
            for (String v : entry.versionFiles().keySet()) {
                retiredConfigs.remove(new ModelId(name, v));
            }
        }
        models = Collections.unmodifiableMap(next);
    }

    private static Map<String, ModelEntry> scan(Path realRoot) {
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
        return Collections.unmodifiableMap(models);
    }

    private static Optional<ModelEntry> loadModel(Path realRoot, Path dir, String name) throws IOException {
        Path configFile = confined(realRoot, dir.resolve(CONFIG_FILE));
        byte[] configBytes = Files.readAllBytes(configFile);
        ModelConfig config = CONFIG_MAPPER.readValue(configBytes, ModelConfig.class);
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
        List<String> served = config.versionPolicy().select(new ArrayList<>(versions.keySet()));
        versions.keySet().retainAll(served);
        if (versions.isEmpty()) {
            LOG.warn("Model {}: version policy '{}' selects none of its versions", name, config.versionPolicy());
            return Optional.empty();
        }
        String defaultVersion = versions.keySet().iterator().next();
        return Optional.of(new ModelEntry(config, Collections.unmodifiableMap(versions), defaultVersion,
                digest(configBytes)));
    }

    private static String digest(byte[] bytes) {
        try {
            StringBuilder hex = new StringBuilder();
            for (byte b : MessageDigest.getInstance("SHA-256").digest(bytes)) {
                hex.append(String.format("%02x", b));
            }
            return hex.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
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
        Map<String, ModelEntry> models = this.models;
        ModelEntry entry = models.get(name);
        if (entry == null) {
            // Not the list of models: a producer learns only about the model it named.
            throw new ProtocolException(ErrorCode.UNKNOWN_MODEL, "unknown model '" + name + "'");
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

    /** The config of a known model version: served now, or retired by a reload. */
    public ModelConfig resolveConfig(ModelId id) {
        ModelEntry entry = models.get(id.name());
        if (entry != null && entry.versionFiles().containsKey(id.version())) {
            return entry.config();
        }
        ModelConfig retired = retiredConfigs.get(id);
        if (retired != null) {
            return retired;
        }
        if (entry == null) {
            throw new IllegalArgumentException("unknown model " + id);
        }
        return entry.config();
    }
}
