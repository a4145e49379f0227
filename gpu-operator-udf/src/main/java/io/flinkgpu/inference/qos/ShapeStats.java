package io.flinkgpu.inference.qos;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What the batcher knows of one model per input shape: a latency model and an arrival rate for
 * each shape, and one latency model over every batch the model ran. A text model's batches of
 * 128-token sequences run several times longer than its batches of 16-token ones; one line {@code
 * t(b) = alpha + beta * b} fitted across both predicts neither, so admission, the SLO-aware cut and
 * its batch size read the model of the batch's own shape ({@link #forShape}). A shape whose model
 * has no observation yet reads the model-wide one.
 *
 * <p>Fixed-shape models (an empty shape signature) keep only the model-wide latency model, and
 * their arrival rate under the empty signature. At most {@link #MAX_SHAPES} shapes are kept, the
 * least recently used dropped first, so that a stream of ever new shapes cannot grow it without
 * bound. Single-threaded, like the batcher, except {@link #overall()}, whose
 * {@link LatencyModel#published} fit the metric reporter reads.
 */
public final class ShapeStats {
    /** Shapes whose own state is kept at most. */
    public static final int MAX_SHAPES = 64;
    private static final double ARRIVAL_EWMA = 0.1;

    private final LatencyModel overall = new LatencyModel();
    private final Map<String, Shape> shapes = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Shape> eldest) {
            return size() > MAX_SHAPES;
        }
    };

    /** One shape: its latency model (unused for the empty signature) and its arrival rate. */
    private static final class Shape {
        final LatencyModel latency = new LatencyModel();
        long lastArrivalNanos = Long.MIN_VALUE;
        /** Exponentially weighted mean gap between arriving samples; 0 while unknown. */
        double meanGapNanosPerSample;
    }

    private Shape shape(String shape) {
        return shapes.computeIfAbsent(shape, s -> new Shape());
    }

    /** Records that a batch of {@code batchSize} samples of {@code shape} took {@code elapsedNanos}. */
    public void record(String shape, int batchSize, long elapsedNanos) {
        overall.record(batchSize, elapsedNanos);
        if (!shape.isEmpty()) {
            shape(shape).latency.record(batchSize, elapsedNanos);
        }
    }

    /** Notes a request of {@code samples} samples of {@code shape} arriving at {@code now}. */
    public void recordArrival(String shape, int samples, long now) {
        Shape s = shape(shape);
        if (s.lastArrivalNanos != Long.MIN_VALUE) {
            double gap = (double) Math.max(0, now - s.lastArrivalNanos) / samples;
            s.meanGapNanosPerSample = s.meanGapNanosPerSample == 0 ? gap
                    : (1 - ARRIVAL_EWMA) * s.meanGapNanosPerSample + ARRIVAL_EWMA * gap;
        }
        s.lastArrivalNanos = now;
    }

    /** The mean gap between arriving samples of {@code shape}; 0 while unknown. */
    public double meanGapNanosPerSample(String shape) {
        Shape s = shapes.get(shape);
        return s == null ? 0 : s.meanGapNanosPerSample;
    }

    /** The latency model of batches of {@code shape}: its own once it has data, else the model-wide one. */
    public LatencyModel forShape(String shape) {
        if (shape.isEmpty()) {
            return overall;
        }
        Shape s = shapes.get(shape);
        return s != null && s.latency.hasData() ? s.latency : overall;
    }

    /** The latency model over every batch, whatever its shape (the operator's metrics). */
    public LatencyModel overall() {
        return overall;
    }

    /** Shapes with state of their own. */
    public int shapes() {
        return shapes.size();
    }
}
