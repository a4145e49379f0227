package io.flinkgpu.sql;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.InferenceSettings;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.ResolvedCatalogModel;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.factories.ModelProviderFactory;
import org.apache.flink.table.functions.AsyncPredictFunction;
import org.apache.flink.table.functions.PredictFunction;
import org.apache.flink.table.ml.AsyncPredictRuntimeProvider;
import org.apache.flink.table.ml.ModelProvider;
import org.apache.flink.table.ml.PredictRuntimeProvider;

/**
 * The model provider {@code 'provider' = 'onnx'}: ONNX models of this project's model repository
 * for {@code ML_PREDICT}, on the CPU, a CUDA GPU or a simulated one, with rows batched in-process.
 * Every check that can fail is made here, when the query is planned: the options, the model and
 * version, and each INPUT and OUTPUT column against the model's tensors.
 */
public final class OnnxModelProviderFactory implements ModelProviderFactory {
    public static final String IDENTIFIER = "onnx";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(OnnxModelOptions.REPOSITORY, OnnxModelOptions.MODEL);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of(OnnxModelOptions.VERSION, OnnxModelOptions.DEVICE, OnnxModelOptions.MAX_BATCH_SIZE,
                OnnxModelOptions.MAX_QUEUE_DELAY, OnnxModelOptions.PRIORITY, OnnxModelOptions.TIMEOUT,
                OnnxModelOptions.TENANT, OnnxModelOptions.ON_ERROR, OnnxModelOptions.ERROR_COLUMN);
    }

    @Override
    public ModelProvider createModelProvider(Context context) {
        FactoryUtil.ModelProviderFactoryHelper helper = FactoryUtil.createModelProviderFactoryHelper(this, context);
        helper.validateExcept(OnnxModelOptions.PASS_THROUGH_PREFIX);
        ReadableConfig options = helper.getOptions();
        ResolvedCatalogModel model = context.getCatalogModel();
        String name = context.getObjectIdentifier().asSummaryString();
        return new Provider(prepare(name, options, model.getOptions(), model));
    }

    /** Checks everything and builds what each parallel instance of the function needs. */
    static OnnxPredictFunction.Spec prepare(String sqlName, ReadableConfig options, Map<String, String> raw,
            ResolvedCatalogModel model) {
        String repositoryPath = options.get(OnnxModelOptions.REPOSITORY);
        String modelName = options.get(OnnxModelOptions.MODEL);
        if (!Files.isDirectory(Path.of(repositoryPath))) {
            throw new ValidationException("Model " + sqlName + ": 'repository' = '" + repositoryPath
                    + "' is not a directory");
        }
        ModelRepository repository;
        try {
            repository = ModelRepository.open(Path.of(repositoryPath));
        } catch (RuntimeException e) {
            throw new ValidationException("Model " + sqlName + ": the repository '" + repositoryPath
                    + "' cannot be read: " + e.getMessage(), e);
        }
        ModelRepository.ModelEntry entry = repository.model(modelName).orElseThrow(() -> new ValidationException(
                "Model " + sqlName + ": the repository '" + repositoryPath + "' has no model '" + modelName
                        + "'; it has " + new TreeSet<>(repository.modelNames())));
        String version = options.getOptional(OnnxModelOptions.VERSION).orElse(null);
        if (version != null && !entry.versionFiles().containsKey(version)) {
            throw new ValidationException("Model " + sqlName + ": '" + modelName + "' has no version '" + version
                    + "'; it has " + new TreeSet<>(entry.versionFiles().keySet()));
        }
        ModelConfig config = entry.config();
        OnnxModelOptions.OnError onError = options.get(OnnxModelOptions.ON_ERROR);
        ModelBinding binding = ModelBinding.bind(modelName, config, model.getResolvedInputSchema(),
                model.getResolvedOutputSchema(), onError, options.get(OnnxModelOptions.ERROR_COLUMN));

        int maxBatch = options.get(OnnxModelOptions.MAX_BATCH_SIZE);
        if (maxBatch < 1) {
            throw new ValidationException("Model " + sqlName + ": 'max-batch-size' must be at least 1, got " + maxBatch);
        }
        if (options.get(OnnxModelOptions.MAX_QUEUE_DELAY).isNegative()) {
            throw new ValidationException("Model " + sqlName + ": 'max-queue-delay' must not be negative");
        }
        int priority = options.get(OnnxModelOptions.PRIORITY);
        if (priority < 0) {
            throw new ValidationException("Model " + sqlName + ": 'priority' must be 0 (the model's default) or a "
                    + "level from 1, got " + priority);
        }
        long timeoutMs = options.getOptional(OnnxModelOptions.TIMEOUT).map(d -> d.toMillis()).orElse(0L);
        if (timeoutMs < 0) {
            throw new ValidationException("Model " + sqlName + ": 'timeout' must not be negative");
        }
        String device = options.get(OnnxModelOptions.DEVICE);
        if (!Set.of("cpu", "cuda", "auto", "simulated").contains(device)) {
            throw new ValidationException("Model " + sqlName + ": 'device' must be cpu, cuda, auto or simulated, got '"
                    + device + "'");
        }
        Configuration runtime = new Configuration();
        Set<String> known = runtimeOptionKeys();
        for (Map.Entry<String, String> e : raw.entrySet()) {
            if (e.getKey().startsWith(OnnxModelOptions.PASS_THROUGH_PREFIX)) {
                String owner = OnnxModelOptions.OWNED_RUNTIME_KEYS.get(e.getKey());
                if (owner != null) {
                    throw new ValidationException("Model " + sqlName + ": '" + e.getKey() + "' is set by the "
                            + "provider's own option; use '" + owner + "' instead");
                }
                if (!known.contains(e.getKey())) {
                    throw new ValidationException("Model " + sqlName + ": unknown option '" + e.getKey()
                            + "'; options starting with 'inference.' are the library's runtime options "
                            + "(GpuInferenceOptions)");
                }
                runtime.setString(e.getKey(), e.getValue());
            }
        }
        runtime.set(GpuInferenceOptions.MODEL_REPOSITORY, repositoryPath);
        runtime.set(GpuInferenceOptions.MAX_BATCH_SIZE, maxBatch);
        runtime.set(GpuInferenceOptions.MAX_QUEUE_DELAY, options.get(OnnxModelOptions.MAX_QUEUE_DELAY));
        runtime.set(GpuInferenceOptions.DEVICE_TYPE, device);
        InferenceSettings settings;
        try {
            settings = InferenceSettings.fromConfiguration(runtime);
        } catch (RuntimeException e) {
            throw new ValidationException("Model " + sqlName + ": invalid runtime option: " + e.getMessage(), e);
        }
        return new OnnxPredictFunction.Spec(settings, binding, modelName, version, priority, timeoutMs,
                options.get(OnnxModelOptions.TENANT), onError);
    }

    /** The keys of every {@link GpuInferenceOptions} option. */
    public static Set<String> runtimeOptionKeys() {
        Set<String> keys = new HashSet<>();
        for (Field f : GpuInferenceOptions.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && ConfigOption.class.isAssignableFrom(f.getType())) {
                try {
                    keys.add(((ConfigOption<?>) f.get(null)).key());
                } catch (IllegalAccessException e) {
                    throw new IllegalStateException(e);
                }
            }
        }
        return keys;
    }

    /** Both runtime flavours; {@code ML_PREDICT}'s 'async' option chooses (async by default). */
    static final class Provider implements AsyncPredictRuntimeProvider, PredictRuntimeProvider {
        private final OnnxPredictFunction.Spec spec;

        Provider(OnnxPredictFunction.Spec spec) {
            this.spec = spec;
        }

        @Override
        public AsyncPredictFunction createAsyncPredictFunction(ModelProvider.Context context) {
            return new OnnxPredictFunction(spec);
        }

        @Override
        public PredictFunction createPredictFunction(ModelProvider.Context context) {
            return new OnnxPredictFunction.Sync(spec);
        }

        @Override
        public ModelProvider copy() {
            return new Provider(spec);
        }
    }
}
