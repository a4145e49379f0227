package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.Target;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.service.InferenceService;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A target whose answers are counted, beside the batches the SQL query's shared runtime ran: the
 * rows of {@code ML_PREDICT} carry no timings, so a point's mean batch size is measured as rows
 * answered without error / batches run while the point ran. That is the batch-weighted mean
 * (rows per batch); the other configurations report the request-weighted mean (the mean size of
 * the batch each request ran in), which is the same where every batch has one size and larger
 * where sizes vary.
 *
 * <p>The runtime is found by acquiring it with the query's settings
 * ({@link SqlPredict#runtimeSettings}): the query's local cluster runs in this JVM, so that is the
 * query's runtime, held one reference longer until {@link #close}. If that finds no runtime that
 * has run a batch (a settings mismatch), the meter reports NaN.
 */
public final class RowsPerBatch implements Target, AutoCloseable {
    private final Target target;
    private final InferenceService runtime;
    private final AtomicLong rows = new AtomicLong();

    private RowsPerBatch(Target target, InferenceService runtime) {
        this.target = target;
        this.runtime = runtime;
    }

    /** {@code target}, counted, with the runtime of {@code settings} (call once the query answered). */
    public static RowsPerBatch attach(Target target, InferenceSettings settings) {
        int before = InferenceService.openRuntimes();
        InferenceService s = InferenceService.acquire(settings, 0);
        if (InferenceService.openRuntimes() > before || s.batchesRun() == 0) {
            // opened here, or one that never ran a batch: not the query's
            s.release();
            s = null;
        }
        return new RowsPerBatch(target, s);
    }

    /** Whether the query's runtime was found. */
    public boolean attached() {
        return runtime != null;
    }

    /** Rows answered and batches run so far. */
    public long[] mark() {
        return new long[] {rows.get(), runtime == null ? 0 : runtime.batchesRun()};
    }

    /** Rows per batch since {@code mark}, or NaN when the runtime is unknown or ran no batch. */
    public double since(long[] mark) {
        long[] now = mark();
        long batches = now[1] - mark[1];
        return runtime == null || batches <= 0 ? Double.NaN : (double) (now[0] - mark[0]) / batches;
    }

    @Override
    public void begin(int runId, Completions completions) {
        target.begin(runId, new Completions() {
            @Override
            public void complete(int seq, long receivedNanos, boolean error, int batchSize, double queueMs,
                    double inferenceMs) {
                if (!error) {
                    rows.incrementAndGet();
                }
                completions.complete(seq, receivedNanos, error, batchSize, queueMs, inferenceMs);
            }

            @Override
            public void complete(int seq, long receivedNanos, String errorCode, int batchSize, double queueMs,
                    double inferenceMs) {
                if (errorCode == null) {
                    rows.incrementAndGet();
                }
                completions.complete(seq, receivedNanos, errorCode, batchSize, queueMs, inferenceMs);
            }
        });
    }

    @Override
    public void send(int seq) throws Exception {
        target.send(seq);
    }

    @Override
    public io.flinkgpu.bench.load.RequestClasses requestClasses() {
        return target.requestClasses();
    }

    @Override
    public void close() {
        if (runtime != null) {
            runtime.release();
        }
    }
}
