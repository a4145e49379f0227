package io.flinkgpu.sql;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.operator.metrics.DeviceMetrics;
import io.flinkgpu.inference.operator.metrics.InferenceMetrics;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.service.InferenceService;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.functions.AsyncPredictFunction;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.PredictFunction;

/**
 * {@code ML_PREDICT}'s function for an {@code onnx} model: each row becomes one request to the
 * TaskManager's shared {@link InferenceService} for the model's settings and device, where
 * concurrent rows (Flink's async operator keeps up to {@code max-concurrent-operations} in flight per
 * task) and the rows of other tasks meet in one batch. Rows in flight at a checkpoint are in the
 * async operator's state and are predicted again after a restore.
 *
 * <p>A row the model cannot take (a null or mis-shaped input, a refusal, a timeout, a failure in
 * the model) follows {@code on-error}: null outputs (the default), null outputs with the error in
 * the error column, or a failed query. Only a fault no row causes (device lost) fails the task in
 * every mode.
 */
public final class OnnxPredictFunction extends AsyncPredictFunction {
    private static final long serialVersionUID = 1L;

    /** Everything a parallel instance needs, checked at planning time. */
    record Spec(InferenceSettings settings, ModelBinding binding, String model, String version, int priority,
            long timeoutMs, String tenant, OnnxModelOptions.OnError onError) implements Serializable {}

    private final Core core;

    OnnxPredictFunction(Spec spec) {
        this.core = new Core(spec);
    }

    @Override
    public void open(FunctionContext context) throws Exception {
        super.open(context);
        core.open(context);
    }

    @Override
    public CompletableFuture<Collection<RowData>> asyncPredict(RowData row) {
        return core.predict(row).thenApply(List::of);
    }

    @Override
    public void close() throws Exception {
        core.close();
        super.close();
    }

    /** The synchronous flavour ({@code 'async' = 'false'}): one row at a time per task, batched only across tasks. */
    public static final class Sync extends PredictFunction {
        private static final long serialVersionUID = 1L;
        private final Core core;

        Sync(Spec spec) {
            this.core = new Core(spec);
        }

        @Override
        public void open(FunctionContext context) throws Exception {
            super.open(context);
            core.open(context);
        }

        @Override
        public Collection<RowData> predict(RowData row) {
            try {
                return List.of(core.predict(row).get());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while predicting", e);
            } catch (ExecutionException e) {
                throw new IllegalStateException("inference failed", e.getCause());
            }
        }

        @Override
        public void close() throws Exception {
            core.close();
            super.close();
        }
    }

    /** Thrown into the query with {@code on-error = FAIL}. */
    public static final class RowFailedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        RowFailedException(String message) {
            super(message);
        }
    }

    /** The part both flavours share. */
    static final class Core implements Serializable {
        private static final long serialVersionUID = 1L;
        private final Spec spec;
        private transient InferenceService service;
        private transient InferenceMetrics metrics;
        private transient DeviceMetrics deviceMetrics;
        private transient InferenceService.Listener listener;
        private transient String idPrefix;
        private transient long sequence;
        private transient RequestParameters parameters;

        Core(Spec spec) {
            this.spec = spec;
        }

        void open(FunctionContext context) {
            int subtask = context.getTaskInfo().getIndexOfThisSubtask();
            service = InferenceService.acquire(spec.settings(), subtask,
                    context.getTaskInfo().getNumberOfParallelSubtasks());
            InferenceService s = service;
            metrics = new InferenceMetrics(context.getMetricGroup(), s::queuedRequests, s::executingBatches,
                    () -> s.cache().loadedCount(),
                    InferenceMetrics.ModelGauges.of(s::queuedSamples, s::latencyModel, s::batchCap,
                            model -> s.cache().isLoaded(model)));
            deviceMetrics = new DeviceMetrics(context.getMetricGroup(), s.device()).watch(s.cache());
            s.addCacheListener(deviceMetrics);
            InferenceMetrics m = metrics;
            // Called from the runtime's threads: the metrics are updated under their own lock.
            listener = new InferenceService.Listener() {
                @Override
                public void refused(ModelId model, ErrorCode code, boolean badInput) {
                    synchronized (m) {
                        if (badInput) {
                            m.deadLettered();
                        }
                        m.responseOut(model, code);
                    }
                }

                @Override
                public void batchCompleted(ModelId model, int samples, double inferenceMs, double serviceMs) {
                    synchronized (m) {
                        m.batchCompleted(model, samples, inferenceMs, serviceMs);
                    }
                }

                @Override
                public void answered(ModelId model, double queueMs, ErrorCode error) {
                    synchronized (m) {
                        m.queued(model, queueMs);
                        m.responseOut(model, error);
                    }
                }
            };
            idPrefix = "sql-" + spec.model() + "-" + subtask + "-";
            parameters = new RequestParameters(spec.priority(), spec.timeoutMs(), spec.tenant());
        }

        CompletableFuture<RowData> predict(RowData row) {
            List<TensorColumn> columns = spec.binding().inputs;
            List<Tensor> inputs = new ArrayList<>(columns.size());
            String id = idPrefix + sequence++;
            try {
                for (int i = 0; i < columns.size(); i++) {
                    inputs.add(columns.get(i).toTensor(row, i));
                }
            } catch (TensorColumn.BadValue e) {
                synchronized (metrics) {
                    metrics.requestIn(null);
                    metrics.deadLettered();
                    metrics.responseOut(null, e.code);
                }
                try {
                    return CompletableFuture.completedFuture(failed(new InferenceError(e.code, e.getMessage())));
                } catch (CompletionException failure) {
                    return CompletableFuture.failedFuture(failure.getCause());
                }
            }
            synchronized (metrics) {
                metrics.requestIn(null);
            }
            InferenceRequest request = new InferenceRequest(id, spec.model(), spec.version(), inputs, parameters);
            return service.submit(request, listener).thenApply(this::toRow);
        }

        private RowData toRow(InferenceResponse response) {
            if (response.isError()) {
                return failed(response.error());
            }
            List<TensorColumn> outputs = spec.binding().outputs;
            GenericRowData out = new GenericRowData(outputs.size());
            for (int i = 0; i < outputs.size(); i++) {
                TensorColumn c = outputs.get(i);
                if (c == null) {
                    continue;
                }
                Tensor t = ModelBinding.find(response.outputs(), c.spec.name());
                if (t == null) {
                    return failed(new InferenceError(ErrorCode.INFERENCE_FAILED,
                            "the model returned no output '" + c.spec.name() + "'"));
                }
                out.setField(i, c.toField(t));
            }
            return out;
        }

        /** The row of a request that got an error, by {@code on-error}. */
        private RowData failed(InferenceError error) {
            if (spec.onError() == OnnxModelOptions.OnError.FAIL) {
                throw new CompletionException(new RowFailedException("ML_PREDICT with model '" + spec.model()
                        + "' failed on a row (on-error = FAIL): " + error.code() + ": " + error.message()));
            }
            GenericRowData out = new GenericRowData(spec.binding().outputs.size());
            if (spec.binding().errorColumn >= 0) {
                out.setField(spec.binding().errorColumn, StringData.fromString(error.code() + ": " + error.message()));
            }
            return out;
        }

        void close() {
            if (service != null) {
                service.removeCacheListener(deviceMetrics);
                service.release();
                service = null;
            }
        }
    }
}
