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
 *
 * <p>Once the window holds more than {@link #EXACT_UP_TO} observations the fit is redone after
 * every {@code observations / 8} new ones rather than after each: a refit costs
 * {@code n(n-1)/2} slopes (2,016 for the default window) on the operator's mailbox thread, once per
 * batch, and was its largest single cost. The estimate lags by at most an eighth of the window,
 * which is well inside what Theil-Sen itself needs (about 29% of the window) to move to a new
 * regime, such as a swap to another device.
 *
 * <p>Not thread-safe: one thread (the operator's mailbox) records, predicts and fits. Every fit is
 * published as an immutable {@link Fit} that any other thread (the metric reporter's) reads with
 * {@link #published}, which never fits: a read from another thread that fitted would race with the
 * owner's records and fits (the window changing under it, the owner skipping a refit that the
 * reader had begun, a new slope with an old intercept).
 */
public final class LatencyModel {
    /** One fit, {@code t(b) = alphaNanos + betaNanos * b}. */
    public record Fit(double alphaNanos, double betaNanos) {
        static final Fit NONE = new Fit(0, 0);
    }

    public static final int DEFAULT_WINDOW = 64;
    /** Up to this many observations the model refits after every new one. */
    static final int EXACT_UP_TO = 16;

    private final int[] sizes;
    private final double[] nanos;
    private int count;
    private int next;
    /** Observations recorded since the last fit. */
    private int sinceFit;
    private double alpha;
    private double beta;
    /** The owner's last fit, for other threads. */
    private volatile Fit published = Fit.NONE;

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
        sinceFit++;
        if (count <= EXACT_UP_TO || sinceFit >= count / 8) {
            fit();
        }
    }

    public boolean hasData() {
        return count > 0;
    }

    public int observations() {
        return count;
    }

    /** Predicted run time of a batch of {@code batchSize} samples; 0 before any observation. */
    public long predictNanos(int batchSize) {
        return Math.max(0, Math.round(alpha + beta * batchSize));
    }

    public double alphaNanos() {
        return alpha;
    }

    public double betaNanos() {
        return beta;
    }

    /**
     * The owner's last fit (zeros before the first observation): safe to read from any thread, and
     * it does not fit. The fit is redone on {@link #record} when due, so this is the one the owner
     * predicts with.
     */
    public Fit published() {
        return published;
    }

    private void fit() {
        sinceFit = 0;
        compute();
        if (published.alphaNanos() != alpha || published.betaNanos() != beta) {
            published = new Fit(alpha, beta);
        }
    }

    private void compute() {
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

    /**
     * The median of the first {@code n} values, by quickselect on a copy (linear time; the fit runs
     * after every batch, and a full sort of the 2,016 pairwise slopes was most of its cost). Equal
     * to the sorted median: the same order statistics are picked.
     */
    static double median(double[] values, int n) {
        double[] a = Arrays.copyOf(values, n);
        int k = n / 2;
        if (n % 2 == 1) {
            return select(a, k);
        }
        double lower = select(a, k - 1);
        double upper = a[k];
        for (int i = k + 1; i < n; i++) { // after select, everything right of k - 1 is >= a[k - 1]
            upper = Math.min(upper, a[i]);
        }
        return (lower + upper) / 2;
    }

    /** Rearranges {@code a} so that a[k] is its k-th smallest value, smaller ones left of it, larger right; returns it. */
    private static double select(double[] a, int k) {
        int lo = 0;
        int hi = a.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            // median of three as the pivot
            if (a[mid] < a[lo]) {
                swap(a, mid, lo);
            }
            if (a[hi] < a[lo]) {
                swap(a, hi, lo);
            }
            if (a[hi] < a[mid]) {
                swap(a, hi, mid);
            }
            double pivot = a[mid];
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (a[i] < pivot) {
                    i++;
                }
                while (a[j] > pivot) {
                    j--;
                }
                if (i <= j) {
                    swap(a, i, j);
                    i++;
                    j--;
                }
            }
            if (k <= j) {
                hi = j;
            } else if (k >= i) {
                lo = i;
            } else {
                return a[k];
            }
        }
        return a[k];
    }

    private static void swap(double[] a, int i, int j) {
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}
