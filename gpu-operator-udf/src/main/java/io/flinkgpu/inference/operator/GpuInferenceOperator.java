package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.batching.BatchKey;
import io.flinkgpu.inference.batching.BatchingConfig;
import io.flinkgpu.inference.batching.DynamicBatcher;
import io.flinkgpu.inference.batching.Ticker;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.GpuExternalResourceDriverFactory;
import io.flinkgpu.inference.metrics.DeviceMetrics;
import io.flinkgpu.inference.metrics.InferenceMetrics;
import io.flinkgpu.inference.model.ModelCache;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelLease;
import io.flinkgpu.inference.model.ModelReloader;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.qos.LatencyModel;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TenantGate;
import io.flinkgpu.inference.validation.RequestValidator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.externalresource.ExternalResourceInfo;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The inference operator. Requests queue in a {@link DynamicBatcher}; batches run on a small
 * pool of execution threads, never on the mailbox thread; results come back to the mailbox
 * thread and are emitted there. Every request is answered exactly once per run: with outputs,
 * or with an error response that says why.
 *
 * <p>Checkpoints hold every request that has not been answered yet (queued or executing), and a
 * restore queues them again, so a failure loses nothing (responses emitted after the checkpoint
 * may be repeated: at-least-once, with request ids to detect duplicates). End of input drains
 * everything, so a bounded stream loses no tail. When a model's queue holds
 * {@code max_enqueued_batches} full batches the operator stops taking input until batches
 * complete, which Flink turns into backpressure on the source.
 */
public class GpuInferenceOperator extends AbstractStreamOperator<InferenceResponse>
        implements OneInputStreamOperator<InferenceRequest, InferenceResponse>, BoundedOneInput {

    private static final long serialVersionUID = 1L;
    static final String STATE_NAME = "gpu-inference-pending-requests";
    /** Union state: each subtask's applied plan epoch and the models its LOAD commands pinned. */
    static final String CONTROL_STATE_NAME = "gpu-inference-control";
    /** The external resource name under which Flink hands out GPUs (external-resources: gpu). */
    static final String GPU_RESOURCE = "gpu";

    private final InferenceSettings settings;
    private final transient MailboxExecutor mailbox;
    private final transient Ticker ticker = Ticker.SYSTEM;

    private transient ModelRepository repository;
    private transient RequestValidator validator;
    private transient Device device;
    private transient ModelCache cache;
    private transient ModelReloader reloader;
    private transient DynamicBatcher<Pending> batcher;
    private transient ExecutorService executor;
    private transient Map<Long, Executing> executing;
    private transient long batchSequence;
    private transient long timerAtMillis;
    private transient ListState<InferenceRequest> pendingState;
    private transient List<InferenceRequest> restored;
    private transient InferenceMetrics metrics;
    private transient TenantGate tenants;
    private transient ListState<String> controlState;
    private transient List<String> restoredControl;
    private transient ModelCommands commands;

    /** A validated, admitted request waiting for, or in, a batch. */
    record Pending(InferenceRequest request, ModelRepository.ResolvedModel model) {
        String tenant() {
            return request.parameters().tenant();
        }
    }

    /** A batch handed to an execution thread, with the latency model's prediction for it. */
    private record Executing(Batch<Pending> batch, long predictedNanos) {}

    public GpuInferenceOperator(StreamOperatorParameters<InferenceResponse> parameters, InferenceSettings settings) {
        super(parameters);
        this.settings = settings;
        this.mailbox = parameters.getMailboxExecutor();
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        pendingState = context.getOperatorStateStore().getListState(
                new ListStateDescriptor<>(STATE_NAME, CodecSerializer.RequestSerializer.INSTANCE));
        controlState = context.getOperatorStateStore().getUnionListState(
                new ListStateDescriptor<>(CONTROL_STATE_NAME, org.apache.flink.api.common.typeinfo.Types.STRING));
        restored = new ArrayList<>();
        restoredControl = new ArrayList<>();
        if (context.isRestored()) {
            for (InferenceRequest r : pendingState.get()) {
                restored.add(r);
            }
            for (String c : controlState.get()) {
                restoredControl.add(c);
            }
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        repository = ModelRepository.open(Path.of(settings.modelRepository()));
        validator = new RequestValidator(repository, settings.limits());
        device = settings.createDevice(subtask, assignedGpus());
        DeviceMetrics deviceMetrics = new DeviceMetrics(getMetricGroup(), device);
        cache = settings.createCache(device, deviceMetrics);
        deviceMetrics.watch(cache);
        // Hot reload: new default versions are loaded and warmed up on this device before they serve.
        reloader = new ModelReloader(repository, cache)
                .startPolling(settings.repositoryPollInterval(), "model-reload-" + subtask);
        commands = new ModelCommands(subtask, repository, cache);
        commands.registerMetrics(getMetricGroup());
        commands.restore(restoredControl);
        restoredControl.clear();
        tenants = new TenantGate(settings.tenants());
        batcher = new DynamicBatcher<>(
                id -> {
                    BatchingConfig effective = settings.batchingFor(repository.resolveConfig(id));
                    LOG.info("Batching {} with {} (the model's dynamic_batching over the operator's defaults), {}",
                            id, effective, repository.resolveConfig(id).scheduling());
                    return effective;
                },
                id -> repository.resolveConfig(id).scheduling(),
                tenants::weight,
                ticker);
        executing = new LinkedHashMap<>();
        timerAtMillis = Long.MAX_VALUE;
        AtomicInteger threadNumber = new AtomicInteger();
        String threadPrefix = "gpu-inference-" + subtask + "-";
        executor = Executors.newFixedThreadPool(settings.executionThreads(), r -> {
            Thread t = new Thread(r, threadPrefix + threadNumber.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        metrics = new InferenceMetrics(getMetricGroup(), batcher::queuedRequests, () -> executing.size(),
                cache::loadedCount, new InferenceMetrics.ModelGauges() {
                    @Override
                    public long queuedSamples(ModelId model) {
                        return batcher.queuedSamples(model);
                    }

                    @Override
                    public LatencyModel latencyModel(ModelId model) {
                        return batcher.latencyModel(model);
                    }

                    @Override
                    public int batchCap(ModelId model) {
                        return batcher.batchCap(model);
                    }
                });
        if (!restored.isEmpty()) {
            LOG.info("Re-queueing {} requests restored from the last checkpoint", restored.size());
            for (InferenceRequest r : restored) {
                accept(r);
            }
            restored.clear();
            dispatch();
        }
    }

    /** This subtask's model cache (for tests). */
    ModelCache cache() {
        return cache;
    }

    /** This subtask's side of the coordinator's plans (for tests). */
    ModelCommands commands() {
        return commands;
    }

    /** CUDA ordinals that Flink's external-resource framework gave this TaskManager ("gpu"). */
    private List<Integer> assignedGpus() {
        List<Integer> ordinals = new ArrayList<>();
        for (ExternalResourceInfo info : getRuntimeContext().getExternalResourceInfos(GPU_RESOURCE)) {
            info.getProperty(GpuExternalResourceDriverFactory.GpuInfo.INDEX).ifPresent(index -> {
                try {
                    ordinals.add(Integer.parseInt(index.trim()));
                } catch (NumberFormatException e) {
                    LOG.warn("Ignoring GPU external resource with index '{}'", index);
                }
            });
        }
        return ordinals;
    }

    @Override
    public void processElement(StreamRecord<InferenceRequest> element) throws Exception {
        InferenceRequest request = element.getValue();
        // Backpressure: while the model has max_enqueued_batches full batches waiting, run mail
        // (batch completions, timers) instead of taking more input.
        while (batcher.isBackpressured() && !executing.isEmpty()) {
            mailbox.yield();
        }
        accept(request);
        dispatch();
    }

    /**
     * A record from the coordinator's control topic (see {@link ControlledGpuInferenceOperator}):
     * this subtask's LOAD/UNLOAD commands of a newer plan are applied, anything else is ignored.
     */
    protected void processControl(byte[] record) {
        commands.offer(record);
    }

    private void accept(InferenceRequest request) {
        RequestValidator.Validated v;
        try {
            v = validator.check(request);
        } catch (ProtocolException e) {
            metrics.requestIn(null);
            emit(InferenceResponse.failure(request.id(), request.modelName(), request.modelVersion(), e.toError(),
                    Timings.NONE), null);
            return;
        }
        ModelId id = v.model().id();
        metrics.requestIn(id);
        InferenceRequest r = v.request();
        metrics.tenantRequestIn(id, r.parameters().tenant());
        long now = ticker.nanos();
        ErrorCode refused = tenants.admit(r.parameters().tenant(), r.modelName(), now);
        if (refused != null) {
            emit(InferenceResponse.failure(r, refused, refused == ErrorCode.FORBIDDEN_MODEL
                    ? "tenant '" + r.parameters().tenant() + "' may not use model '" + r.modelName() + "'"
                    : "tenant '" + r.parameters().tenant() + "' is over its rate or in-flight limit"), id);
            return;
        }
        SchedulingConfig scheduling = v.model().config().scheduling();
        long deadline = deadlineNanos(r, scheduling, now);
        int level = batcher.levelFor(id, r.parameters().priority());
        DynamicBatcher.Admission admission = batcher.offer(new BatchKey(id, shapeSignature(v)), new Pending(r, v.model()),
                r.batchSize(), new DynamicBatcher.Request(level, r.parameters().tenant(), deadline));
        if (admission != DynamicBatcher.Admission.ACCEPTED) {
            tenants.release(r.parameters().tenant());
            emit(admission == DynamicBatcher.Admission.QUEUE_FULL
                    ? InferenceResponse.failure(r, ErrorCode.QUEUE_FULL, "priority level " + level + " of model '"
                            + id + "' has " + scheduling.level(level).maxQueueSize() + " requests queued")
                    : InferenceResponse.failure(r, ErrorCode.DEADLINE_INFEASIBLE, deadline <= ticker.nanos()
                            ? "the deadline passed before the request was queued"
                            : "predicted run time " + batcher.latencyModel(id).predictNanos(r.batchSize()) / 1000
                                    + " us exceeds the " + (deadline - now) / 1000 + " us left to the deadline"), id);
        }
    }

    /**
     * The request's deadline on the ticker's clock: arrival plus the model's default timeout,
     * shortened (never extended, unless the config allows it) by the request's {@code timeout_ms}
     * and by an absolute {@code deadline_unix_ms}.
     */
    static long deadlineNanos(InferenceRequest r, SchedulingConfig scheduling, long nowNanos) {
        long defaultTimeoutMs = scheduling.defaultTimeoutMs();
        long byDefault = defaultTimeoutMs > 0 ? nowNanos + defaultTimeoutMs * 1_000_000 : Long.MAX_VALUE;
        long requested = Long.MAX_VALUE;
        if (r.parameters().timeoutMs() > 0) {
            requested = nowNanos + r.parameters().timeoutMs() * 1_000_000;
        }
        if (r.parameters().deadlineEpochMs() > 0) {
            long leftMs = r.parameters().deadlineEpochMs() - System.currentTimeMillis();
            requested = Math.min(requested, nowNanos + leftMs * 1_000_000);
        }
        if (requested == Long.MAX_VALUE) {
            return byDefault;
        }
        return scheduling.allowTimeoutOverride() ? requested : Math.min(requested, byDefault);
    }

    /** Non-batch dimensions of every input, in config order: requests sharing them stack. */
    private static String shapeSignature(RequestValidator.Validated v) {
        boolean variable = false;
        for (TensorSpec spec : v.model().config().inputs()) {
            variable |= spec.hasVariableDimension();
        }
        if (!variable) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (TensorSpec spec : v.model().config().inputs()) {
            long[] shape = v.request().input(spec.name()).shape();
            sb.append('[');
            for (int i = 1; i < shape.length; i++) {
                sb.append(i > 1 ? "," : "").append(shape[i]);
            }
            sb.append(']');
        }
        return sb.toString();
    }

    /** Starts ready batches while execution threads are free; arms a timer for the next one. */
    private void dispatch() {
        while (executing.size() < settings.executionThreads()) {
            Batch<Pending> batch = batcher.poll();
            emitExpired();
            if (batch == null) {
                break;
            }
            submit(batch);
        }
        emitExpired();
        armTimer();
    }

    /** Answers requests whose deadline passed in the queue (queue policy REJECT). */
    private void emitExpired() {
        for (Batch.Queued<Pending> q : batcher.takeExpired()) {
            InferenceRequest r = q.item().request();
            tenants.release(q.item().tenant());
            double waitedMs = (ticker.nanos() - q.enqueuedNanos()) / 1e6;
            emit(InferenceResponse.failure(r.id(), r.modelName(), r.modelVersion(), new InferenceError(ErrorCode.TIMEOUT,
                    String.format("deadline passed after %.1f ms in the queue", waitedMs)),
                    new Timings(waitedMs, 0, 0)), q.item().model().id());
        }
    }

    private void armTimer() {
        OptionalLong next = batcher.nextReadyNanos();
        if (next.isEmpty()) {
            return;
        }
        long delayMillis = Math.max(0, (next.getAsLong() - ticker.nanos() + 999_999) / 1_000_000);
        long at = getProcessingTimeService().getCurrentProcessingTime() + delayMillis;
        if (at < timerAtMillis) {
            timerAtMillis = at;
            getProcessingTimeService().registerTimer(at, time -> {
                if (time >= timerAtMillis) {
                    timerAtMillis = Long.MAX_VALUE;
                }
                dispatch();
            });
        }
    }

    private void submit(Batch<Pending> batch) {
        long seq = batchSequence++;
        executing.put(seq, new Executing(batch, batcher.latencyModel(batch.key().model()).predictNanos(batch.samples())));
        long dispatchedNanos = ticker.nanos();
        executor.execute(() -> {
            List<InferenceResponse> responses = execute(batch, dispatchedNanos);
            mailbox.execute(() -> complete(seq, batch, responses), "gpu-inference batch results");
        });
    }

    /** Runs on an execution thread. Never throws: failures become error responses. */
    private List<InferenceResponse> execute(Batch<Pending> batch, long dispatchedNanos) {
        List<Pending> items = batch.items();
        ModelRepository.ResolvedModel model = items.get(0).model();
        long started = ticker.nanos();
        List<List<Tensor>> outputs = null;
        InferenceError error = null;
        try {
            List<InferenceRequest> requests = new ArrayList<>(items.size());
            for (Pending p : items) {
                requests.add(p.request());
            }
            // The lease keeps the model on the device (never evicted) while this batch runs.
            try (ModelLease lease = cache.acquire(model)) {
                outputs = lease.model().run(requests);
            }
        } catch (ModelCache.ModelLoadException e) {
            error = new InferenceError(ErrorCode.MODEL_LOAD_FAILED, e.getMessage());
        } catch (Exception | LinkageError e) {
            error = new InferenceError(ErrorCode.INFERENCE_FAILED, String.valueOf(e.getMessage()));
        }
        double inferenceMs = (ticker.nanos() - started) / 1e6;
        List<InferenceResponse> responses = new ArrayList<>(items.size());
        for (int i = 0; i < items.size(); i++) {
            InferenceRequest r = items.get(i).request();
            Timings timings = new Timings((dispatchedNanos - batch.entries().get(i).enqueuedNanos()) / 1e6,
                    inferenceMs, batch.samples());
            responses.add(error == null
                    ? InferenceResponse.success(r.id(), r.modelName(), model.id().version(), outputs.get(i), timings)
                    : InferenceResponse.failure(r.id(), r.modelName(), model.id().version(), error, timings));
        }
        return responses;
    }

    private void complete(long seq, Batch<Pending> batch, List<InferenceResponse> responses) {
        Executing done = executing.remove(seq);
        ModelId id = batch.key().model();
        if (!responses.isEmpty()) {
            double inferenceMs = responses.get(0).timings().inferenceMs();
            metrics.batchCompleted(id, batch.samples(), inferenceMs);
            if (!responses.get(0).isError()) {
                long actual = Math.round(inferenceMs * 1e6);
                if (batcher.latencyModel(id).hasData()) {
                    metrics.predicted(id, done.predictedNanos(), actual);
                }
                batcher.recordBatch(id, batch.samples(), actual);
            }
        }
        for (int i = 0; i < responses.size(); i++) {
            tenants.release(batch.entries().get(i).item().tenant());
            metrics.queued(id, responses.get(i).timings().queueMs());
            emit(responses.get(i), id);
        }
        dispatch();
    }

    private void emit(InferenceResponse response, ModelId id) {
        metrics.responseOut(id, response.isError() ? response.error().code() : null);
        output.collect(new StreamRecord<>(response));
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        List<InferenceRequest> pending = new ArrayList<>(batcher.queuedRequests());
        for (Executing e : executing.values()) {
            for (Pending p : e.batch().items()) {
                pending.add(p.request());
            }
        }
        for (Batch.Queued<Pending> q : batcher.queued()) {
            pending.add(q.item().request());
        }
        pendingState.update(pending);
        controlState.update(commands.snapshot());
    }

    @Override
    public void endInput() throws Exception {
        drain();
    }

    @Override
    public void finish() throws Exception {
        drain();
        super.finish();
    }

    /** Runs everything queued and waits for every executing batch. */
    private void drain() throws InterruptedException {
        List<Batch<Pending>> rest = batcher.flush();
        emitExpired();
        for (Batch<Pending> batch : rest) {
            submit(batch);
        }
        while (!executing.isEmpty()) {
            mailbox.yield();
        }
    }

    @Override
    public void close() throws Exception {
        try {
            if (reloader != null) {
                reloader.close();
            }
            if (commands != null) {
                commands.close();
            }
            if (executor != null) {
                executor.shutdownNow();
                executor.awaitTermination(10, TimeUnit.SECONDS);
            }
            if (cache != null) {
                cache.close();
            }
            if (device != null) {
                device.close();
            }
        } finally {
            super.close();
        }
    }
}
