package io.flinkgpu.sim;

/**
 * The last {@code capacity} batches of one model on one device, and their mean size and time: what
 * the operator's batch-size and inference-latency histograms report (each keeps its last values,
 * {@code MetricNames.HISTOGRAM_WINDOW}). After a load step a device that ran many small
 * batches keeps reporting a mean near theirs until enough larger ones replaced them, and the
 * coordinator prices the model from that mean.
 */
final class BatchWindow {
    private final double[] samples;
    private final double[] nanos;
    private int next;
    private int size;
    private double sumSamples;
    private double sumNanos;

    BatchWindow(int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity >= 1");
        }
        samples = new double[capacity];
        nanos = new double[capacity];
    }

    void add(double batchSamples, double batchNanos) {
        if (size == samples.length) {
            sumSamples -= samples[next];
            sumNanos -= nanos[next];
        } else {
            size++;
        }
        samples[next] = batchSamples;
        nanos[next] = batchNanos;
        sumSamples += batchSamples;
        sumNanos += batchNanos;
        next = (next + 1) % samples.length;
    }

    /** Mean batch size in samples; NaN before the first batch. */
    double meanSamples() {
        return size == 0 ? Double.NaN : sumSamples / size;
    }

    /** Mean batch time in nanoseconds; NaN before the first batch. */
    double meanNanos() {
        return size == 0 ? Double.NaN : sumNanos / size;
    }
}
