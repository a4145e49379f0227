package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.device.DeviceWait;
import io.flinkgpu.inference.execution.BatchIsolation;
import io.flinkgpu.inference.execution.Faults;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;
import java.util.function.LongSupplier;

/**
 * One batch run on a model leased from the cache, as both the operator and the SQL provider's
 * shared runtime run it, on an execution thread. The lease keeps the model on the device while the
 * batch runs. A request that fails the batch is isolated ({@link BatchIsolation}) and answered
 * alone; a model that cannot be loaded answers every request {@code MODEL_LOAD_FAILED}, any other
 * failure no request caused answers every request {@code INFERENCE_FAILED}. An infrastructure
 * fault (device lost, out of memory; {@link Faults#isInfrastructureFault}) answers nothing: it is
 * the outcome's {@code fatal}, for the caller to fail its task or its futures with.
 */
public final class LeasedBatch {

    /**
     * What a batch run gave: one response per request in order (none when {@code fatal} is set),
     * whether the batch ran as one (its time then measures the batch, for the latency model), the
     * run's wall time and its service time on the device ({@link DeviceWait#serviceMs}).
     */
    public record Outcome(List<InferenceResponse> responses, boolean ranWhole, Throwable fatal, long elapsedNanos,
            double serviceMs) {
        public double inferenceMs() {
            return elapsedNanos / 1e6;
        }
    }

    private LeasedBatch() {}

    /**
     * Runs {@code batch}'s requests on {@code model} and answers each one.
     *
     * @param request the request of one of the batch's items
     * @param dispatchedNanos when the batch was handed to the execution thread, for each request's queue time
     * @param isolated told how many culprits were isolated and with how many extra runs
     * @param clock nanoseconds, on the batcher's clock, for the run's time
     */
    public static <T> Outcome run(ModelCache cache, ModelRepository.ResolvedModel model, Batch<T> batch,
            Function<T, InferenceRequest> request, long dispatchedNanos, int maxIsolatedCulprits,
            BatchIsolation.Listener isolated, LongSupplier clock) {
        int n = batch.size();
        List<InferenceRequest> requests = new ArrayList<>(n);
        for (Batch.Queued<T> q : batch.entries()) {
            requests.add(request.apply(q.item()));
        }
        long started = clock.getAsLong();
        DeviceWait.reset();
        List<List<Tensor>> outputs = new ArrayList<>(Collections.nCopies(n, null));
        InferenceError[] errors = new InferenceError[n];
        boolean ranWhole = false;
        Throwable fatal = null;
        try (ModelLease lease = cache.acquire(model)) {
            ranWhole = new BatchIsolation(lease.model()::run, maxIsolatedCulprits)
                    .run(requests, outputs, errors, isolated);
        } catch (ModelCache.ModelLoadException e) {
            Arrays.fill(errors, new InferenceError(ErrorCode.MODEL_LOAD_FAILED, e.getMessage()));
        } catch (Throwable e) {
            if (Faults.isInfrastructureFault(e)) {
                fatal = e;
            } else {
                Arrays.fill(errors, new InferenceError(ErrorCode.INFERENCE_FAILED,
                        e.getClass().getSimpleName() + ": " + e.getMessage()));
            }
        }
        long elapsed = clock.getAsLong() - started;
        if (fatal != null) {
            return new Outcome(List.of(), false, fatal, elapsed, Double.NaN);
        }
        double inferenceMs = elapsed / 1e6;
        String version = model.id().version();
        List<InferenceResponse> responses = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            InferenceRequest r = requests.get(i);
            double queueMs = (dispatchedNanos - batch.entries().get(i).enqueuedNanos()) / 1e6;
            Timings timings = new Timings(queueMs, inferenceMs, batch.samples());
            responses.add(errors[i] == null
                    ? InferenceResponse.success(r.id(), r.modelName(), version, outputs.get(i), timings)
                    : InferenceResponse.failure(r.id(), r.modelName(), version, errors[i], timings));
        }
        return new Outcome(responses, ranWhole, null, elapsed, DeviceWait.serviceMs(inferenceMs));
    }
}
