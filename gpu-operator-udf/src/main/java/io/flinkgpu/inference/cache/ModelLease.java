package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A loaded model held for use. While any lease on a model is open the cache never evicts it;
 * close the lease (try-with-resources) when the batch is done. Closing twice is harmless.
 */
public final class ModelLease implements AutoCloseable {
    private final ModelId id;
    private final OnnxModel model;
    private final Runnable onClose;
    private final AtomicBoolean closed = new AtomicBoolean();

    ModelLease(ModelId id, OnnxModel model, Runnable onClose) {
        this.id = id;
        this.model = model;
        this.onClose = onClose;
    }

    public ModelId id() {
        return id;
    }

    public OnnxModel model() {
        if (closed.get()) {
            throw new IllegalStateException("lease on " + id + " is closed");
        }
        return model;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            onClose.run();
        }
    }
}
