package io.flinkgpu.inference.model;

import ai.onnxruntime.OrtException;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.protocol.DataType;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The models loaded on one device. A model version is loaded on first use, checked against its
 * config, and accounted against the device's memory (estimated as its file size until it is
 * measured); concurrent first uses wait for one load. Loaded models stay until {@link #close}.
 */
public final class ModelCache implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ModelCache.class);

    private final Device device;
    private final Map<ModelId, Loaded> loaded = new ConcurrentHashMap<>();

    private record Loaded(OnnxModel model, long reservedBytes) {}

    public ModelCache(Device device) {
        this.device = device;
    }

    public Device device() {
        return device;
    }

    /** The loaded model, loading it first if needed. */
    public OnnxModel get(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        Loaded l = loaded.get(resolved.id());
        if (l != null) {
            return l.model();
        }
        synchronized (this) {
            l = loaded.get(resolved.id());
            if (l == null) {
                l = load(resolved);
                loaded.put(resolved.id(), l);
            }
            return l.model();
        }
    }

    private Loaded load(ModelRepository.ResolvedModel resolved) throws ModelLoadException {
        long estimate;
        try {
            estimate = Files.size(resolved.file());
        } catch (IOException e) {
            throw new ModelLoadException("cannot read " + resolved.file() + ": " + e.getMessage());
        }
        if (!device.reserve(estimate)) {
            throw new ModelLoadException("model " + resolved.id() + " (" + estimate + " bytes) does not fit in "
                    + device.id() + " (" + device.freeMemoryBytes() + " bytes free)");
        }
        long started = System.nanoTime();
        try {
            OnnxModel model = OnnxModel.load(resolved.id(), resolved.file(), device);
            List<String> problems = mismatches(resolved.config(), model);
            if (!problems.isEmpty()) {
                model.close();
                throw new ModelLoadException("model " + resolved.id() + " does not match its config: " + problems);
            }
            LOG.info("Loaded {} on {} in {} ms", resolved.id(), device.id(), (System.nanoTime() - started) / 1_000_000);
            return new Loaded(model, estimate);
        } catch (OrtException | RuntimeException e) {
            device.release(estimate);
            throw new ModelLoadException("cannot load " + resolved.id() + " on " + device.id() + ": " + e.getMessage());
        } catch (ModelLoadException e) {
            device.release(estimate);
            throw e;
        }
    }

    private static List<String> mismatches(ModelConfig config, OnnxModel model) {
        List<String> problems = new ArrayList<>();
        for (TensorSpec spec : config.inputs()) {
            DataType actual = model.inputTypes().get(spec.name());
            if (actual == null) {
                problems.add("input " + spec.name() + " is not in the model");
            } else if (actual != spec.datatype()) {
                problems.add("input " + spec.name() + " is " + actual + " in the model, " + spec.datatype() + " in the config");
            }
        }
        for (String name : model.inputTypes().keySet()) {
            if (config.input(name) == null) {
                problems.add("model input " + name + " is not in the config");
            }
        }
        return problems;
    }

    public int loadedCount() {
        return loaded.size();
    }

    public boolean isLoaded(ModelId id) {
        return loaded.containsKey(id);
    }

    @Override
    public synchronized void close() {
        for (Map.Entry<ModelId, Loaded> e : loaded.entrySet()) {
            try {
                e.getValue().model().close();
            } catch (OrtException ex) {
                LOG.warn("Closing {} failed", e.getKey(), ex);
            }
            device.release(e.getValue().reservedBytes());
        }
        loaded.clear();
    }

    /** A model that could not be loaded; requests for it fail with MODEL_LOAD_FAILED. */
    public static final class ModelLoadException extends Exception {
        public ModelLoadException(String message) {
            super(message);
        }
    }
}
