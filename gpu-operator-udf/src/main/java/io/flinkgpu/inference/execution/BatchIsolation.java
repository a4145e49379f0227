package io.flinkgpu.inference.execution;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.Tensor;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;

/**
 * Runs a batch so that one poisonous request cannot fail the requests that merely shared its
 * batch: when the runtime fails the batch, the batch is split in halves and each half retried,
 * recursively, until the failing requests stand alone. The innocent get their outputs, only the
 * culprits get {@link ErrorCode#INFERENCE_FAILED}. Finding one culprit in a batch of {@code b}
 * costs about {@code 2 log2(b)} extra runs; the budget is that times {@code maxCulprits}, and the
 * requests not isolated when it runs out fail together, so a model that fails every input (a
 * broken model, not a bad request) costs a bounded number of runs, not {@code 2b}.
 */
public final class BatchIsolation {

    /** Runs requests as one batch; one output list per request. */
    @FunctionalInterface
    public interface Runner {
        List<List<Tensor>> run(List<InferenceRequest> requests) throws Exception;
    }

    /** Told once per failed batch how many culprits were isolated with how many extra runs. */
    @FunctionalInterface
    public interface Listener {
        void isolated(int culprits, int extraRuns);
    }

    private final Runner runner;
    private final int maxCulprits;

    public BatchIsolation(Runner runner, int maxCulprits) {
        if (maxCulprits < 0) {
            throw new IllegalArgumentException("max culprits must be zero or positive, got " + maxCulprits);
        }
        this.runner = runner;
        this.maxCulprits = maxCulprits;
    }

    /** The extra runs allowed for a failed batch of {@code size} requests. */
    public int budget(int size) {
        return size < 2 ? 0 : maxCulprits * 2 * (32 - Integer.numberOfLeadingZeros(size - 1));
    }

    /**
     * Runs {@code requests}, filling {@code outputs[i]} or {@code errors[i]} for each request.
     *
     * @return whether the batch ran in one piece (its run time then describes the batch)
     * @throws Exception only faults no request can cause: a lost device, a JVM error
     */
    public boolean run(List<InferenceRequest> requests, List<List<Tensor>> outputs, InferenceError[] errors,
            Listener listener) throws Exception {
        int n = requests.size();
        Exception first;
        try {
            fill(runner.run(requests), outputs, 0, n);
            return true;
        } catch (Exception e) {
            rethrowIfFatal(e);
            first = e;
        }
        int budget = budget(n);
        if (budget == 0) {
            fail(errors, 0, n, "the batch failed: " + describe(first));
            return false;
        }
        int runs = 0;
        int culprits = 0;
        Deque<int[]> work = new ArrayDeque<>();
        split(work, 0, n);
        while (!work.isEmpty()) {
            int[] range = work.pop();
            int lo = range[0];
            int hi = range[1];
            if (runs == budget) {
                fail(errors, lo, hi, "the batch failed (" + describe(first) + ") and this request was not isolated "
                        + "within " + budget + " extra runs (inference.execution.max-isolated-culprits)");
                continue;
            }
            runs++;
            try {
                fill(runner.run(requests.subList(lo, hi)), outputs, lo, hi);
            } catch (Exception e) {
                rethrowIfFatal(e);
                if (hi - lo == 1) {
                    culprits++;
                    fail(errors, lo, hi, "this request fails alone: " + describe(e));
                } else {
                    split(work, lo, hi);
                }
            }
        }
        listener.isolated(culprits, runs);
        return false;
    }

    /** Pushes the halves so that the lower one runs first. */
    private static void split(Deque<int[]> work, int lo, int hi) {
        int mid = (lo + hi) >>> 1;
        work.push(new int[] {mid, hi});
        work.push(new int[] {lo, mid});
    }

    private static void fill(List<List<Tensor>> results, List<List<Tensor>> outputs, int lo, int hi) {
        if (results.size() != hi - lo) {
            throw new IllegalStateException("the runner returned " + results.size() + " outputs for " + (hi - lo)
                    + " requests");
        }
        for (int i = lo; i < hi; i++) {
            outputs.set(i, results.get(i - lo));
        }
    }

    private static void fail(InferenceError[] errors, int lo, int hi, String message) {
        InferenceError error = new InferenceError(ErrorCode.INFERENCE_FAILED, message);
        for (int i = lo; i < hi; i++) {
            errors[i] = error;
        }
    }

    private static String describe(Exception e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /** A fault no request caused ({@link Faults}) is not bisected: it fails the whole batch's caller. */
    private static void rethrowIfFatal(Exception e) throws Exception {
        if (Faults.isInfrastructureFault(e)) {
            throw e;
        }
    }
}
