package io.flinkgpu.inference.qos;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The latency models of one model: one over every batch it ran, and one per input shape for a
 * model with variable-size inputs. A text model's batches of 128-token sequences run several times
 * longer than its batches of 16-token ones; one line {@code t(b) = alpha + beta * b} fitted across
 * both predicts neither, so admission, the SLO-aware cut and its batch size read the model of the
 * batch's own shape ({@link #forShape}). A shape whose model has no observation yet reads the
 * model-wide one.
 *
 * <p>Fixed-shape models (an empty shape signature) keep only the model-wide model. At most {@link
 * #MAX_SHAPES} shapes are kept, the least recently used dropped first, so that a stream of ever
 * new shapes cannot grow it without bound. Single-threaded, like the batcher, except {@link
 * #overall()}, which the metric reporter may read.
 */
public final class ShapeLatency {
    /** Shapes whose own model is kept at most. */
    public static final int MAX_SHAPES = 64;

    private final LatencyModel overall = new LatencyModel();
    private final Map<String, LatencyModel> shapes = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, LatencyModel> eldest) {
            return size() > MAX_SHAPES;
        }
    };

    /** Records that a batch of {@code batchSize} samples of {@code shape} took {@code elapsedNanos}. */
    public void record(String shape, int batchSize, long elapsedNanos) {
        overall.record(batchSize, elapsedNanos);
        if (!shape.isEmpty()) {
            shapes.computeIfAbsent(shape, s -> new LatencyModel()).record(batchSize, elapsedNanos);
        }
    }

    /** The model of batches of {@code shape}: its own once it has data, else the model-wide one. */
    public LatencyModel forShape(String shape) {
        if (shape.isEmpty()) {
            return overall;
        }
        LatencyModel own = shapes.get(shape);
        return own != null && own.hasData() ? own : overall;
    }

    /** The model over every batch, whatever its shape (the operator's metrics). */
    public LatencyModel overall() {
        return overall;
    }

    /** Shapes with a model of their own. */
    public int shapes() {
        return shapes.size();
    }
}
