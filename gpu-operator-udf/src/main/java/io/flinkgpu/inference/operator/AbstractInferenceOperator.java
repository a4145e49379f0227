package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.admission.RequestAdmission;
import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.batching.DynamicBatcher;
import io.flinkgpu.inference.batching.Ticker;
import io.flinkgpu.inference.control.QueueBoard;
import io.flinkgpu.inference.cache.LeasedBatch;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelReloader;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceWait;
import io.flinkgpu.inference.operator.resource.GpuExternalResourceDriverFactory;
import io.flinkgpu.inference.execution.Faults;
import io.flinkgpu.inference.operator.metrics.DeviceMetrics;
import io.flinkgpu.inference.operator.metrics.InferenceMetrics;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.qos.TenantGate;
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
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The inference engine of an operator whose inputs each carry one {@link InferenceRequest}:
 * admission, the {@link DynamicBatcher}, the {@link ModelCache}, the execution threads, metrics,
 * the control plane's LOAD/UNLOAD commands and the checkpointing of pending inputs. Subclasses say
 * what request an input makes ({@link #requestOf}), what an answered input emits
 * ({@link #collect}) and how pending inputs are kept in checkpoints ({@link #pendingStateName},
 * {@link #pendingSerializer}); {@link GpuInferenceOperator} is the one whose inputs are requests
 * and whose outputs are responses, {@link EnrichmentOperator} the one that carries a user's record.
 *
 * <p>Inputs queue in the batcher; batches run on a small pool of execution threads, never on
 * the mailbox thread; results come back to the mailbox thread and are emitted there. Every input
 * is answered exactly once per run: with outputs, or with an error that says why.
 *
 * <p>Checkpoints hold every input that has not been answered yet (queued or executing), and a
 * restore queues them again, so a failure loses nothing (answers emitted after the checkpoint
 * may be repeated: at-least-once). End of input drains everything, so a bounded stream loses no
 * tail. When a model's queue holds {@code max_enqueued_batches} full batches the operator stops
 * taking input until batches complete, which Flink turns into backpressure on the source.
 *
 * @param <IN> the operator's input; each makes one request
 * @param <OUT> the operator's main output
 */
public abstract class AbstractInferenceOperator<IN, OUT> extends AbstractStreamOperator<OUT>
        implements OneInputStreamOperator<IN, OUT>, BoundedOneInput {

    private static final long serialVersionUID = 1L;
    /** Union state: each subtask's applied plan epoch and the models its LOAD commands pinned. */
    static final String CONTROL_STATE_NAME = "gpu-inference-control";
    /** The external resource name under which Flink hands out GPUs (external-resources: gpu). */
    static final String GPU_RESOURCE = "gpu";

    private final InferenceSettings settings;
    private final transient MailboxExecutor mailbox;
    private final transient Ticker ticker = Ticker.SYSTEM;

    private transient ModelRepository repository;
    private transient RequestAdmission admission;
    private transient Device device;
    private transient ModelCache cache;
    private transient ModelReloader reloader;
    private transient DynamicBatcher<Pending<IN>> batcher;
    private transient ExecutorService executor;
    /** Batches executed at once: the option, or sized from the device when the subtask opens. */
    private transient ExecutionSlots slots;
    private transient Map<Long, Executing<IN>> executing;
    /** Of {@link #executing}, the batches on the core kept for the task (at most {@link ExecutionSlots#reserved()}). */
    private transient int onReservedCore;
    private transient long batchSequence;
    private transient long timerAtMillis;
    private transient ListState<IN> pendingState;
    private transient List<IN> restored;
    private transient InferenceMetrics metrics;
    private transient ListState<String> controlState;
    private transient List<String> restoredControl;
    private transient ModelCommands commands;
    /** The stage's queue board in this JVM and this subtask's slot on it (null: not queue-aware routed). */
    private transient QueueBoard queueBoard;
    private transient QueueBoard.Slot queueSlot;

    /** An admitted request waiting for, or in, a batch, with the input that made it. */
    record Pending<I>(RequestAdmission.Admitted admitted, I input) {
        InferenceRequest request() {
            return admitted.request();
        }

        ModelRepository.ResolvedModel model() {
            return admitted.model();
        }
    }

    /**
     * A batch handed to an execution thread, with the latency model's prediction for it and whether
     * it took the core kept for the task ({@link ExecutionSlots}).
     */
    private record Executing<I>(Batch<Pending<I>> batch, long predictedNanos, boolean onReservedCore) {}

    /**
     * What an execution thread hands back: a response per request, whether the batch ran in one
     * piece (only then does its time feed the latency model), or a fault that must fail the task;
     * {@code serviceMs}: the batch's run time less the time it waited for a device busy with other
     * batches ({@link DeviceWait}).
     */
    protected AbstractInferenceOperator(StreamOperatorParameters<OUT> parameters, InferenceSettings settings) {
        super(parameters);
        this.settings = settings;
        this.mailbox = parameters.getMailboxExecutor();
    }

    // ---- what a subclass decides -------------------------------------------------------------

    /** The name of the operator state that holds pending inputs; fixed once state exists (savepoints). */
    protected abstract String pendingStateName();

    /** The serializer of pending inputs in checkpoints; changing it breaks restoring older ones. */
    protected abstract TypeSerializer<IN> pendingSerializer();

    /**
     * The request an input makes. An exception is the input's fault: it is answered
     * {@link ErrorCode#INTERNAL} through {@link #failureOf} and {@link #collect}, never fails the task.
     */
    protected abstract InferenceRequest requestOf(IN input);

    /**
     * What a checkpoint keeps of an admitted input (and a restore re-queues): by default the input.
     *
     * @param admitted the request as admitted, pinned to the version that serves it
     */
    protected IN checkpointed(IN input, InferenceRequest admitted) {
        return input;
    }

    /**
     * Emits what one answered input yields, called on the mailbox thread once per input and run
     * with its response, successful or not. Where it throws for a successful response it is
     * called once more, with an {@link ErrorCode#INTERNAL} error response (reason:
     * {@link #emitFailureReason}); an exception for an error response fails the task.
     */
    protected abstract void collect(IN input, InferenceResponse response);

    /** The error response of an input whose handling threw before its request was answered. */
    protected abstract InferenceResponse failureOf(IN input, InferenceError error);

    /**
     * Dead-letters an input refused as bad input, or whose handling threw (it has already been
     * answered through {@link #collect}); counted by the caller.
     *
     * @param refusedAs the request as refused, or null where it threw before one was admitted
     */
    protected abstract void deadLetter(IN input, InferenceRequest refusedAs, ErrorCode code, String reason);

    /** The reason of the INTERNAL error of an input whose handling threw before it was answered. */
    protected String failureReason(RuntimeException e) {
        return e.getClass().getName() + ": " + e.getMessage();
    }

    /** The reason of the INTERNAL error that replaces a successful answer whose emitting threw. */
    protected String emitFailureReason(RuntimeException e) {
        return "the response could not be serialized: " + e.getClass().getName() + ": " + e.getMessage();
    }

    /**
     * The name of the stage's {@link QueueBoard} that this subtask publishes its outstanding
     * requests on for queue-aware routing ({@link PlanRouter}); null (the default): none.
     */
    protected String queueBoardName() {
        return null;
    }

    /** The index of this subtask. */
    protected int subtaskIndex() {
        return getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
    }

    // ---- the engine ---------------------------------------------------------------------------

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        pendingState = context.getOperatorStateStore().getListState(
                new ListStateDescriptor<>(pendingStateName(), pendingSerializer()));
        controlState = context.getOperatorStateStore().getUnionListState(
                new ListStateDescriptor<>(CONTROL_STATE_NAME, org.apache.flink.api.common.typeinfo.Types.STRING));
        restored = new ArrayList<>();
        restoredControl = new ArrayList<>();
        if (context.isRestored()) {
            for (IN r : pendingState.get()) {
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
        int subtask = subtaskIndex();
        repository = ModelRepository.open(Path.of(settings.modelRepository()));
        // the running parallelism, not the one the job was built with: after a rescale it is the new one
        device = settings.createDevice(subtask, getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks(),
                assignedGpus());
        DeviceMetrics deviceMetrics = new DeviceMetrics(getMetricGroup(), device);
        // Each completed load registers the version's metrics (its loaded gauge) at once, before any request for
        // it, so that the coordinator sees a LOAD done ahead of traffic; loads run on other threads than open().
        java.util.concurrent.atomic.AtomicReference<InferenceMetrics> loadTracker =
                new java.util.concurrent.atomic.AtomicReference<>();
        cache = settings.createCache(device, new ModelCache.Listener() {
            @Override
            public void loaded(ModelId id, long nanos, boolean fromHost) {
                deviceMetrics.loaded(id, nanos, fromHost);
                InferenceMetrics m = loadTracker.get();
                if (m != null) {
                    m.track(id);
                }
            }

            @Override
            public void evicted(ModelId id, String reason) {
                deviceMetrics.evicted(id, reason);
            }

            @Override
            public void loadFailed(ModelId id, String reason) {
                deviceMetrics.loadFailed(id, reason);
            }
        });
        deviceMetrics.watch(cache);
        // Hot reload: new default versions are loaded and warmed up on this device before they serve.
        reloader = new ModelReloader(repository, cache)
                .startPolling(settings.repositoryPollInterval(), "model-reload-" + subtask);
        commands = new ModelCommands(subtask, repository, cache);
        commands.registerMetrics(getMetricGroup());
        commands.restore(restoredControl);
        restoredControl.clear();
        admission = new RequestAdmission(repository, settings.limits(),
                settings.maxBatchSizeLookup(), GpuInferenceOptions.MAX_BATCH_SIZE.key(),
                new TenantGate(settings.tenants()), ticker::nanos);
        batcher = new DynamicBatcher<>(
                id -> {
                    BatchingConfig effective = settings.batchingFor(repository.resolveConfig(id));
                    LOG.info("Batching {} with {} (the model's dynamic_batching over the operator's defaults), {}",
                            id, effective, settings.schedulingFor(repository.resolveConfig(id)));
                    return effective;
                },
                id -> settings.schedulingFor(repository.resolveConfig(id)),
                admission::tenantWeight,
                ticker);
        executing = new LinkedHashMap<>();
        timerAtMillis = Long.MAX_VALUE;
        AtomicInteger threadNumber = new AtomicInteger();
        String threadPrefix = "gpu-inference-" + subtask + "-";
        slots = settings.executionSlots(device.kind(), InferenceSettings.coresPerSlot(
                getContainingTask().getEnvironment().getTaskManagerInfo().getConfiguration()
                        .get(TaskManagerOptions.NUM_TASK_SLOTS)));
        LOG.info("Subtask {} executes up to {} batches at once on {}{}{}", subtask, slots.threads(), device.id(),
                settings.executionThreads() == InferenceSettings.THREADS_FROM_DEVICE
                        ? " (" + GpuInferenceOptions.EXECUTION_THREADS.key() + " unset: sized from the device)" : "",
                slots.reserved() == 0 ? "" : String.format(", and on the core kept for the task one more of at least "
                        + "%.3f ms per sample while they are busy", slots.minReservedSampleNanos() / 1e6));
        executor = Executors.newFixedThreadPool(slots.poolSize(), r -> {
            Thread t = new Thread(r, threadPrefix + threadNumber.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        metrics = new InferenceMetrics(getMetricGroup(), batcher::queuedRequests, () -> executing.size(),
                cache::loadedCount, InferenceMetrics.ModelGauges.of(batcher::queuedSamples, batcher::latencyModel,
                        batcher::batchCap, cache::isLoaded));
        metrics.executionThreads(slots.threads());
        loadTracker.set(metrics);
        String boardName = queueBoardName();
        if (boardName != null) {
            queueBoard = QueueBoard.acquire(PlanRouter.boardKey(getRuntimeContext().getJobInfo().getJobId().toString(),
                    boardName), getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
            queueSlot = queueBoard.join(subtask, getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks());
        }
        cache.residentModels().forEach(metrics::track); // loads that completed before the tracker was set
        if (!restored.isEmpty()) {
            LOG.info("Re-queueing {} requests restored from the last checkpoint", restored.size());
            for (IN r : restored) {
                acceptGuarded(r);
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
    public void processElement(StreamRecord<IN> element) throws Exception {
        IN request = element.getValue();
        if (queueSlot != null) {
            queueSlot.arrived();
        }
        // Backpressure: while the model has max_enqueued_batches full batches waiting, run mail
        // (batch completions, timers) instead of taking more input.
        while (batcher.isBackpressured() && !executing.isEmpty()) {
            mailbox.yield();
        }
        acceptGuarded(request);
        dispatch();
    }

    /**
     * A plan the control plane's gate applied (see {@link ControlledGpuInferenceOperator}): this
     * subtask's LOAD/UNLOAD commands of a plan newer than the one applied are carried out.
     */
    protected void processControl(byte[] record) {
        try {
            commands.offer(record);
        } catch (RuntimeException e) {
            if (Faults.isInfrastructureFault(e)) {
                throw e;
            }
            // A control record, like a request, must not fail the task: it is ignored and counted.
            LOG.warn("Applying a control record failed; ignoring it", e);
            metrics.recordFailed();
        }
    }

    /**
     * The last line of defence: nothing that one record does may fail the task. An exception
     * while admitting or queueing it becomes an INTERNAL error response and a refusal carrying
     * the exception; only faults of the infrastructure (device lost, out of memory) propagate.
     */
    private void acceptGuarded(IN input) {
        try {
            accept(input);
        } catch (RuntimeException e) {
            if (Faults.isInfrastructureFault(e)) {
                throw e;
            }
            recordFailed(input, e);
        }
    }

    /** Admits and queues one input's request, or answers it with its refusal (protected for fault-injection tests). */
    protected void accept(IN input) {
        InferenceRequest request = requestOf(input);
        RequestAdmission.Decision decision = admission.admit(request);
        if (decision instanceof RequestAdmission.Refused refused) {
            metrics.requestIn(refused.model());
            refuse(input, refused);
            return;
        }
        RequestAdmission.Admitted a = (RequestAdmission.Admitted) decision;
        ModelId id = a.model().id();
        metrics.requestIn(id);
        metrics.tenantRequestIn(id, a.tenant());
        DynamicBatcher.Admission queued;
        try {
            queued = batcher.offer(a.key(), new Pending<>(a, checkpointed(input, a.request())), a.samples(),
                    a.scheduling());
        } catch (RuntimeException e) {
            admission.release(a);
            throw e;
        }
        if (queued != DynamicBatcher.Admission.ACCEPTED) {
            refuse(input, admission.refuseQueued(a, queued,
                    a.model().config().scheduling().level(a.level()).maxQueueSize(),
                    batcher.latencyModel(a.key()).predictNanos(a.samples())));
        }
    }

    /** Answers a refused request; bad input is also dead-lettered. */
    private void refuse(IN input, RequestAdmission.Refused refused) {
        InferenceRequest r = refused.request();
        emit(input, InferenceResponse.failure(r.id(), r.modelName(), r.modelVersion(), refused.error(), Timings.NONE),
                refused.model());
        if (refused.badInput()) {
            metrics.deadLettered();
            deadLetter(input, r, refused.code(), refused.error().message());
        }
    }

    private void recordFailed(IN input, RuntimeException e) {
        String reason = failureReason(e);
        InferenceResponse failure = failureOf(input, new InferenceError(ErrorCode.INTERNAL, reason));
        LOG.warn("Handling request {} of model '{}' failed; answering INTERNAL", failure.id(), failure.modelName(), e);
        metrics.recordFailed();
        emit(input, failure, null);
        metrics.deadLettered();
        deadLetter(input, null, ErrorCode.INTERNAL, reason);
    }

    /**
     * Starts ready batches while execution slots are free (the reserved core's only for long batches,
     * {@link ExecutionSlots}); arms a timer for the next one.
     */
    private void dispatch() {
        long minSample;
        while ((minSample = slots.minSampleNanos(executing.size(), onReservedCore)) != ExecutionSlots.NONE) {
            Batch<Pending<IN>> batch = batcher.poll(minSample);
            emitExpired();
            if (batch == null) {
                break;
            }
            submit(batch, slots.threadsBusy(executing.size(), onReservedCore));
        }
        if (minSample == ExecutionSlots.NONE) {
            batcher.expire(); // no batch can start, but a request whose deadline passed is answered now
        }
        emitExpired();
        armTimer(minSample);
        if (queueSlot != null) {
            // a request waits for the batches executing to end, not for each of their requests
            queueSlot.publish(batcher.queuedRequests() + executing.size());
        }
    }

    /** Answers requests whose deadline passed in the queue (queue policy REJECT). */
    private void emitExpired() {
        for (Batch.Queued<Pending<IN>> q : batcher.takeExpired()) {
            InferenceRequest r = q.item().request();
            admission.release(q.item().admitted());
            double waitedMs = (ticker.nanos() - q.enqueuedNanos()) / 1e6;
            emit(q.item().input(), InferenceResponse.failure(r.id(), r.modelName(), r.modelVersion(), new InferenceError(ErrorCode.TIMEOUT,
                    String.format("deadline passed after %.1f ms in the queue", waitedMs)),
                    new Timings(waitedMs, 0, 0)), q.item().model().id());
        }
    }

    /**
     * Arms a timer for the next time {@link #dispatch()} has something to do, where a batch must run
     * {@code minSample} per sample to start ({@link ExecutionSlots#minSampleNanos}). While every
     * execution slot is busy ({@link ExecutionSlots#NONE}), a batch's completion dispatches again, so
     * only a queued deadline needs one: a ready queue would otherwise re-arm a timer every millisecond
     * until a thread is free, each one a wake-up of the timer thread and a mail to the mailbox that
     * starts nothing. For the same reason, while only the reserved core is free, only the queues
     * that could take it count, and the others' deadlines.
     */
    private void armTimer(long minSample) {
        OptionalLong next = minSample == ExecutionSlots.NONE ? batcher.nextDeadlineNanos()
                : batcher.nextReadyNanos(minSample);
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

    private void submit(Batch<Pending<IN>> batch, boolean takesReservedCore) {
        long seq = batchSequence++;
        executing.put(seq, new Executing<>(batch, batcher.latencyModel(batch.key()).predictNanos(batch.samples()),
                takesReservedCore));
        if (takesReservedCore) {
            onReservedCore++;
            metrics.reservedCoreBatch();
        }
        long dispatchedNanos = ticker.nanos();
        executor.execute(() -> {
            LeasedBatch.Outcome outcome = execute(batch, dispatchedNanos);
            mailbox.execute(() -> complete(seq, batch, outcome), "gpu-inference batch results");
        });
    }

    /** Runs on an execution thread. Never throws: failures become error responses or a fatal outcome. */
    private LeasedBatch.Outcome execute(Batch<Pending<IN>> batch, long dispatchedNanos) {
        return LeasedBatch.run(cache, batch.entries().get(0).item().model(), batch, Pending::request, dispatchedNanos,
                settings.maxIsolatedCulprits(), metrics::isolated, ticker::nanos);
    }

    private void complete(long seq, Batch<Pending<IN>> batch, LeasedBatch.Outcome outcome) throws Exception {
        if (outcome.fatal() != null) {
            // Device lost or out of memory: the task restarts and re-runs the batch from its checkpoint.
            throw new Exception("inference failed for a reason no request caused", outcome.fatal());
        }
        Executing<IN> done = executing.remove(seq);
        onReservedCore -= done.onReservedCore() ? 1 : 0;
        ModelId id = batch.key().model();
        List<InferenceResponse> responses = outcome.responses();
        if (!responses.isEmpty()) {
            metrics.batchCompleted(id, batch.samples(), outcome.inferenceMs(), outcome.serviceMs());
            if (outcome.ranWhole()) {
                long actual = outcome.elapsedNanos();
                if (batcher.latencyModel(batch.key()).hasData()) {
                    metrics.predicted(id, done.predictedNanos(), actual);
                }
                batcher.recordBatch(batch.key(), batch.samples(), actual);
            }
        }
        for (int i = 0; i < responses.size(); i++) {
            Pending<IN> p = batch.entries().get(i).item();
            admission.release(p.admitted());
            metrics.queued(id, responses.get(i).timings().queueMs());
            emit(p.input(), responses.get(i), id);
        }
        dispatch();
    }

    private void emit(IN input, InferenceResponse response, ModelId id) {
        try {
            collect(input, response);
        } catch (RuntimeException e) {
            // Emitting an answer (serializing an output the encoding cannot carry, a user's
            // function) must not fail the task: the caller gets an INTERNAL error instead.
            if (Faults.isInfrastructureFault(e) || response.isError()) {
                throw e;
            }
            LOG.warn("Emitting the response to {} failed; answering INTERNAL", response.id(), e);
            metrics.recordFailed();
            response = InferenceResponse.failure(response.id(), response.modelName(), response.modelVersion(),
                    new InferenceError(ErrorCode.INTERNAL, emitFailureReason(e)), response.timings());
            collect(input, response);
        }
        metrics.responseOut(id, response.isError() ? response.error().code() : null);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        List<IN> pending = new ArrayList<>(batcher.queuedRequests());
        for (Executing<IN> e : executing.values()) {
            for (Pending<IN> p : e.batch().items()) {
                pending.add(p.input());
            }
        }
        for (Batch.Queued<Pending<IN>> q : batcher.queued()) {
            pending.add(q.item().input());
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
        List<Batch<Pending<IN>>> rest = batcher.flush();
        emitExpired();
        for (Batch<Pending<IN>> batch : rest) {
            submit(batch, false);
        }
        while (!executing.isEmpty()) {
            mailbox.yield();
        }
    }

    @Override
    public void close() throws Exception {
        try {
            if (queueBoard != null) {
                queueBoard.leave(subtaskIndex(), queueSlot);
                queueBoard.release();
                queueBoard = null;
            }
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
