package io.flinkgpu.inference.qos;

import java.util.Arrays;

/**
 * The batch latency model {@code t(b) = alpha + beta * b} of one model on one device, fitted
 * online from measured batches with the Theil-Sen estimator (slope = median of pairwise
 * slopes, intercept = median residual) over the most recent observations. Theil-Sen ignores up
 * to ~29% outliers (a GC pause, a cold cache) where least squares would be dragged along.
 *
 * <p>Until two distinct batch sizes have been seen the model is conservative: it assumes no
 * batching benefit ({@code alpha = 0}, {@code beta = mean time per sample}).
 */
public final class LatencyModel {
    public static final int DEFAULT_WINDOW = 64;

    private final int[] sizes;
    private final double[] nanos;
    private int count;
    private int next;
    private boolean fitted;
    private double alpha;
    private double beta;

    public LatencyModel() {
        this(DEFAULT_WINDOW);
    }

    public LatencyModel(int window) {
        sizes = new int[window];
        nanos = new double[window];
    }

    /** Records that a batch of {@code batchSize} samples took {@code elapsedNanos}. */
    public void record(int batchSize, long elapsedNanos) {
        if (batchSize < 1 || elapsedNanos < 0) {
            return;
        }
        sizes[next] = batchSize;
        nanos[next] = elapsedNanos;
        next = (next + 1) % sizes.length;
        count = Math.min(count + 1, sizes.length);
        fitted = false;
    }

    public boolean hasData() {
        return count > 0;
    }

    public int observations() {
        return count;
    }

    /** Predicted run time of a batch of {@code batchSize} samples; 0 before any observation. */
    public long predictNanos(int batchSize) {
        fit();
        return Math.max(0, Math.round(alpha + beta * batchSize));
    }

    public double alphaNanos() {
        fit();
        return alpha;
    }

    public double betaNanos() {
        fit();
        return beta;
    }

    private void fit() {
        if (fitted) {
            return;
        }
        fitted = true;
        if (count == 0) {
            alpha = 0;
            beta = 0;
            return;
        }
        double[] slopes = new double[count * (count - 1) / 2];
        int n = 0;
        for (int i = 0; i < count; i++) {
            for (int j = i + 1; j < count; j++) {
                if (sizes[i] != sizes[j]) {
                    slopes[n++] = (nanos[j] - nanos[i]) / (sizes[j] - sizes[i]);
                }
            }
        }
        if (n == 0) {
            double perSample = 0;
            for (int i = 0; i < count; i++) {
                perSample += nanos[i] / sizes[i];
            }
            alpha = 0;
            beta = perSample / count;
            return;
        }
        beta = Math.max(0, median(slopes, n));
        double[] intercepts = new double[count];
        for (int i = 0; i < count; i++) {
            intercepts[i] = nanos[i] - beta * sizes[i];
        }
        alpha = Math.max(0, median(intercepts, count));
    }

    private static double median(double[] values, int n) {
        double[] sorted = Arrays.copyOf(values, n);
        Arrays.sort(sorted);
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
