package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.cache.ModelCache.ModelLoadException;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceOutOfMemoryException;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates a model's session on the device for the {@link ModelCache}, checks it against the
 * model's config and warms it up, closing it again if either fails.
 *
 * <p>A session the device refuses for lack of memory (an ONNX Runtime allocation failure, or
 * {@link DeviceOutOfMemoryException} injected on a simulated device) has the cache evict idle
 * models until the model's size is freed, and is retried once; if it fails again the load fails
 * with the reason.
 */
final class SessionLoader {
    private static final Logger LOG = LoggerFactory.getLogger(SessionLoader.class);

    /** Frees device memory for a load the device refused. */
    interface OutOfMemoryRelief {
        /** Evicts idle models other than {@code loading}, least recently used first, until {@code need} bytes are freed; returns them. */
        List<ModelId> evictIdleFor(CacheEntry loading, long need);
    }

    private final Device device;
    private final WarmUp warmUp;
    private final OutOfMemoryRelief relief;

    SessionLoader(Device device, WarmUp warmUp, OutOfMemoryRelief relief) {
        this.device = device;
        this.warmUp = warmUp;
        this.relief = relief;
    }

    /** A session on the device, checked against its config and warmed up; closed again if either fails. */
    OnnxModel createAndWarmUp(CacheEntry e, byte[] bytes, long need) throws ModelLoadException {
        OnnxModel model = create(e, bytes, need);
        try {
            List<String> problems = mismatches(e.resolved.config(), model);
            if (!problems.isEmpty()) {
                throw new ModelLoadException("model " + e.id + " does not match its config: " + problems);
            }
            warmUp.run(e.resolved.config(), model);
        } catch (ModelLoadException | RuntimeException x) {
            closeQuietly(e.id, model);
            throw x;
        }
        return model;
    }

    private OnnxModel create(CacheEntry e, byte[] bytes, long need) throws ModelLoadException {
        try {
            return OnnxModel.load(e.id, bytes, device);
        } catch (Exception | LinkageError first) {
            if (!DeviceOutOfMemoryException.isOutOfMemory(first)) {
                throw new ModelLoadException("cannot load " + e.id + " on " + device.id() + ": " + first.getMessage());
            }
            List<ModelId> evicted = relief.evictIdleFor(e, need);
            LOG.warn("Out of memory loading {} on {} ({}); evicted {} and retrying once", e.id, device.id(),
                    first.getMessage(), evicted);
            try {
                return OnnxModel.load(e.id, bytes, device);
            } catch (Exception | LinkageError second) {
                throw new ModelLoadException((DeviceOutOfMemoryException.isOutOfMemory(second) ? "out of memory"
                        : "failed") + " loading " + e.id + " on " + device.id() + " after evicting " + evicted
                        + " and retrying: " + second.getMessage());
            }
        }
    }

    /** How the session's inputs differ from the config's, if they do. */
    static List<String> mismatches(ModelConfig config, OnnxModel model) {
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

    static void closeQuietly(ModelId id, OnnxModel model) {
        if (model == null) {
            return;
        }
        try {
            model.close();
        } catch (Exception e) {
            LOG.warn("Closing {} failed", id, e);
        }
    }
}
