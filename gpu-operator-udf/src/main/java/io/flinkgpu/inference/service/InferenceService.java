package io.flinkgpu.inference.service;

import io.flinkgpu.inference.admission.RequestAdmission;
import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.batching.DynamicBatcher;
import io.flinkgpu.inference.batching.Ticker;
import io.flinkgpu.inference.cache.LeasedBatch;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelReloader;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.execution.Faults;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.operator.ExecutionSlots;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.qos.TenantGate;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inference runtime of one device in one JVM (a TaskManager), shared by every caller that
 * uses it with the same settings: one model repository, one {@link ModelCache}, one
 * {@link DynamicBatcher} and one pool of execution threads, reference-counted. Callers submit one
 * request at a time from any thread and get a future of its response; concurrent submissions of
 * the same model meet in the same batch, whichever task they come from. This is what the SQL
 * model provider's {@code ML_PREDICT} function runs on; the DataStream operator keeps its own
 * runtime per subtask because it runs on its mailbox thread and checkpoints its queue.
 *
 * <p>Every submitted request is answered exactly once: with outputs, or with an error response
 * (refused by admission, timed out in the queue, failed in the model). Only faults that no
 * request can cause (device lost, out of memory) complete the future exceptionally, so that the
 * caller's task fails and restarts. Nothing here holds requests across a failure: the caller's
 * checkpoint does (Flink's async operator keeps every in-flight row in its state and issues it
 * again after a restore).
 */
public final class InferenceService {
    private static final Logger LOG = LoggerFactory.getLogger(InferenceService.class);

    /** The runtimes of this JVM by settings and device slot; each lives while someone holds it. */
    private static final Map<Key, InferenceService> SHARED = new HashMap<>();

    private record Key(InferenceSettings settings, String deviceId) {}

    /** What a caller learns about the requests it submitted, for its own metrics. */
    public interface Listener {
        Listener NONE = new Listener() {};

        /** A request was refused before it queued; {@code badInput}: the request itself is at fault. */
        default void refused(ModelId model, ErrorCode code, boolean badInput) {}

        /**
         * A batch holding at least one of this caller's requests finished (reported to the first
         * request's caller); {@code serviceMs}: {@code inferenceMs} less the time the batch waited
         * for a device busy with other batches.
         */
        default void batchCompleted(ModelId model, int samples, double inferenceMs, double serviceMs) {}

        /** One of this caller's requests was answered after {@code queueMs} in the queue. */
        default void answered(ModelId model, double queueMs, ErrorCode error) {}
    }

    private final Key key;
    private final InferenceSettings settings;
    private final Ticker ticker = Ticker.SYSTEM;
    private final ModelRepository repository;
    private final Device device;
    private final ModelCache cache;
    private final ModelReloader reloader;
    private final RequestAdmission admission;
    private final DynamicBatcher<Pending> batcher;
    private final ExecutorService executor;
    private final ScheduledExecutorService timer;
    private final CopyOnWriteArrayList<ModelCache.Listener> cacheListeners = new CopyOnWriteArrayList<>();
    private final Object lock = new Object();
    private int executing;
    /** Of the batches executing, those on the core kept for the tasks ({@link ExecutionSlots}). */
    private int onReservedCore;
    private int references;
    private ScheduledFuture<?> armed;
    private long armedAtNanos = Long.MAX_VALUE;
    private long batchesRun;
    /** Batches executed at once: the option, or sized from the device. */
    private final ExecutionSlots slots;
    private long timerWakeups;

    private record Pending(RequestAdmission.Admitted admitted, CompletableFuture<InferenceResponse> future,
            Listener listener) {}

    private InferenceService(Key key, InferenceSettings settings, int subtaskIndex, Device device) {
        this.key = key;
        this.settings = settings;
        this.device = device;
        this.repository = ModelRepository.open(Path.of(settings.modelRepository()));
        this.cache = settings.createCache(device, new ModelCache.Listener() {
            @Override
            public void loaded(ModelId id, long nanos, boolean fromHost) {
                cacheListeners.forEach(l -> l.loaded(id, nanos, fromHost));
            }

            @Override
            public void evicted(ModelId id, String reason) {
                cacheListeners.forEach(l -> l.evicted(id, reason));
            }

            @Override
            public void loadFailed(ModelId id, String reason) {
                cacheListeners.forEach(l -> l.loadFailed(id, reason));
            }
        });
        this.reloader = new ModelReloader(repository, cache)
                .startPolling(settings.repositoryPollInterval(), "model-reload-shared-" + device.id());
        this.admission = new RequestAdmission(repository, settings.limits(),
                settings.maxBatchSizeLookup(), "max-batch-size",
                new TenantGate(settings.tenants()), ticker::nanos);
        this.batcher = new DynamicBatcher<>(id -> settings.batchingFor(repository.resolveConfig(id)),
                id -> settings.schedulingFor(repository.resolveConfig(id)), admission::tenantWeight, ticker);
        AtomicInteger threadNumber = new AtomicInteger();
        String prefix = "gpu-inference-shared-" + device.id() + "-";
        // shared by the TaskManager's subtasks on this device: it counts the TaskManager's cores
        this.slots = settings.executionSlots(device.kind(), InferenceSettings.coresPerSlot(1));
        this.executor = Executors.newFixedThreadPool(slots.poolSize(), r -> daemon(r,
                prefix + threadNumber.incrementAndGet()));
        this.timer = Executors.newSingleThreadScheduledExecutor(r -> daemon(r, prefix + "timer"));
        LOG.info("Shared inference runtime on {} opened (first user: subtask {}), batching {}, {} execution threads{}",
                device.id(), subtaskIndex, settings.batching(), slots.threads(), slots.reserved() == 0 ? ""
                        : String.format(", and on the core kept for the tasks one more batch of at least %.3f ms per "
                                + "sample while they are busy", slots.minReservedSampleNanos() / 1e6));
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /**
     * The runtime for {@code settings} on the device of subtask {@code subtaskIndex}, opened on first
     * use; every call must be matched by one {@link #release()}.
     */
    public static InferenceService acquire(InferenceSettings settings, int subtaskIndex) {
        return acquire(settings, subtaskIndex, 0);
    }

    /**
     * As {@link #acquire(InferenceSettings, int)} for subtask {@code subtaskIndex} of
     * {@code parallelism} (0: unknown), whose device the slot weights choose.
     */
    public static InferenceService acquire(InferenceSettings settings, int subtaskIndex, int parallelism) {
        Device device = settings.createDevice(subtaskIndex, parallelism, java.util.List.of());
        Key key = new Key(settings, device.id());
        synchronized (SHARED) {
            InferenceService service = SHARED.get(key);
            if (service == null) {
                service = new InferenceService(key, settings, subtaskIndex, device);
                SHARED.put(key, service);
            } else if (service.device != device) {
                // The CPU device is made per subtask: the shared runtime keeps its own.
                closeQuietly(device);
            }
            service.references++;
            return service;
        }
    }

    /** How many shared runtimes this JVM holds open (for tests). */
    public static int openRuntimes() {
        synchronized (SHARED) {
            return SHARED.size();
        }
    }

    /** Gives back one {@link #acquire}; the last one closes the runtime. */
    public void release() {
        synchronized (SHARED) {
            if (--references > 0) {
                return;
            }
            SHARED.remove(key);
        }
        close();
    }

    public ModelRepository repository() {
        return repository;
    }

    public Device device() {
        return device;
    }

    public ModelCache cache() {
        return cache;
    }

    /** Batches run since the runtime opened. */
    public long batchesRun() {
        synchronized (lock) {
            return batchesRun;
        }
    }

    /** How often the queue-delay timer fired (for tests). */
    long timerWakeups() {
        synchronized (lock) {
            return timerWakeups;
        }
    }

    /** Requests waiting in the batcher. */
    public int queuedRequests() {
        synchronized (lock) {
            return batcher.queuedRequests();
        }
    }

    /** Batches executing now. */
    public int executingBatches() {
        synchronized (lock) {
            return executing;
        }
    }

    /** Samples of {@code model} waiting in the batcher. */
    public long queuedSamples(ModelId model) {
        synchronized (lock) {
            return batcher.queuedSamples(model);
        }
    }

    /** The batcher's latency model of {@code model} on this device. */
    public io.flinkgpu.inference.qos.LatencyModel latencyModel(ModelId model) {
        synchronized (lock) {
            return batcher.latencyModel(model);
        }
    }

    /** The batch size cap the batcher applies to {@code model} now. */
    public int batchCap(ModelId model) {
        synchronized (lock) {
            return batcher.batchCap(model);
        }
    }

    public void addCacheListener(ModelCache.Listener listener) {
        cacheListeners.add(listener);
    }

    public void removeCacheListener(ModelCache.Listener listener) {
        cacheListeners.remove(listener);
    }

    /**
     * Admits and queues one request. The future completes with its response on an execution
     * thread (or at once when admission refuses it), exceptionally only for an infrastructure fault.
     */
    public CompletableFuture<InferenceResponse> submit(InferenceRequest request, Listener listener) {
        CompletableFuture<InferenceResponse> future = new CompletableFuture<>();
        InferenceResponse refusal = null;
        RuntimeException fatal = null;
        List<Runnable> answers;
        synchronized (lock) {
            try {
                RequestAdmission.Decision decision = admission.admit(request);
                if (decision instanceof RequestAdmission.Refused refused) {
                    listener.refused(refused.model(), refused.code(), refused.badInput());
                    refusal = failure(request, refused.error());
                } else {
                    RequestAdmission.Admitted a = (RequestAdmission.Admitted) decision;
                    DynamicBatcher.Admission queued;
                    try {
                        queued = batcher.offer(a.key(), new Pending(a, future, listener), a.samples(), a.scheduling());
                    } catch (RuntimeException e) {
                        admission.release(a);
                        throw e;
                    }
                    if (queued != DynamicBatcher.Admission.ACCEPTED) {
                        RequestAdmission.Refused refused = admission.refuseQueued(a, queued,
                                a.model().config().scheduling().level(a.level()).maxQueueSize(),
                                batcher.latencyModel(a.key()).predictNanos(a.samples()));
                        listener.refused(refused.model(), refused.code(), false);
                        refusal = failure(request, refused.error());
                    }
                }
            } catch (RuntimeException e) {
                if (Faults.isInfrastructureFault(e)) {
                    fatal = e;
                } else {
                    LOG.warn("Handling request {} of model '{}' failed; answering INTERNAL", request.id(),
                            request.modelName(), e);
                    listener.refused(null, ErrorCode.INTERNAL, true);
                    refusal = failure(request, new InferenceError(ErrorCode.INTERNAL,
                            e.getClass().getName() + ": " + e.getMessage()));
                }
            }
            answers = fatal == null ? dispatch() : List.of();
        }
        if (fatal != null) {
            future.completeExceptionally(fatal);
            return future;
        }
        answers.forEach(Runnable::run);
        if (refusal != null) {
            future.complete(refusal);
        }
        return future;
    }

    private static InferenceResponse failure(InferenceRequest r, InferenceError error) {
        return InferenceResponse.failure(r.id(), r.modelName(), r.modelVersion(), error, Timings.NONE);
    }

    /**
     * Starts ready batches while execution threads are free and arms the timer for the next one. Holds
     * the lock. Returns the answers of requests whose deadline passed in the queue, for the caller to
     * run once it has released the lock: a caller's callback on its future must never run under the
     * runtime's lock, which every other task's requests and the execution threads need.
     */
    private List<Runnable> dispatch() {
        List<Runnable> answers = new ArrayList<>();
        long minSample;
        while ((minSample = slots.minSampleNanos(executing, onReservedCore)) != ExecutionSlots.NONE) {
            Batch<Pending> batch = batcher.poll(minSample);
            collectExpired(answers);
            if (batch == null) {
                break;
            }
            boolean reserved = slots.threadsBusy(executing, onReservedCore);
            executing++;
            onReservedCore += reserved ? 1 : 0;
            long dispatchedNanos = ticker.nanos();
            executor.execute(() -> execute(batch, dispatchedNanos, reserved));
        }
        if (minSample == ExecutionSlots.NONE) {
            batcher.expire(); // no batch can start, but a request whose deadline passed is answered now
        }
        collectExpired(answers);
        arm(minSample);
        return answers;
    }

    private void collectExpired(List<Runnable> answers) {
        for (Batch.Queued<Pending> q : batcher.takeExpired()) {
            Pending p = q.item();
            admission.release(p.admitted());
            double waitedMs = (ticker.nanos() - q.enqueuedNanos()) / 1e6;
            InferenceRequest r = p.admitted().request();
            InferenceResponse response = InferenceResponse.failure(r.id(), r.modelName(), r.modelVersion(),
                    new InferenceError(ErrorCode.TIMEOUT, String.format("deadline passed after %.1f ms in the queue",
                            waitedMs)), new Timings(waitedMs, 0, 0));
            answers.add(() -> {
                p.listener().answered(p.admitted().model().id(), waitedMs, ErrorCode.TIMEOUT);
                p.future().complete(response);
            });
        }
    }

    /**
     * Arms the timer for the next time {@link #dispatch()} has something to do, where a batch must run
     * {@code minSample} per sample to start ({@link ExecutionSlots#minSampleNanos}). While every
     * execution slot is busy ({@link ExecutionSlots#NONE}), a completion dispatches the next batch, so
     * only a queued deadline needs the timer (its request is answered TIMEOUT at the deadline, not at
     * the next completion): a timer for a ready queue would fire at once and find no free thread, again
     * and again; while only the reserved core is free, only the queues that could take it count.
     */
    private void arm(long minSample) {
        OptionalLong next = minSample == ExecutionSlots.NONE ? batcher.nextDeadlineNanos()
                : batcher.nextReadyNanos(minSample);
        if (next.isEmpty()) {
            return;
        }
        long at = next.getAsLong();
        if (armed != null && !armed.isDone() && armedAtNanos <= at) {
            return;
        }
        if (armed != null) {
            armed.cancel(false);
        }
        armedAtNanos = at;
        long delay = Math.max(0, at - ticker.nanos());
        armed = timer.schedule(() -> {
            List<Runnable> answers;
            synchronized (lock) {
                timerWakeups++;
                armedAtNanos = Long.MAX_VALUE;
                answers = dispatch();
            }
            answers.forEach(Runnable::run);
        }, delay, TimeUnit.NANOSECONDS);
    }

    /** Runs on an execution thread; answers every request of the batch. */
    private void execute(Batch<Pending> batch, long dispatchedNanos, boolean onReserved) {
        List<Pending> items = batch.items();
        int n = items.size();
        ModelRepository.ResolvedModel model = items.get(0).admitted().model();
        LeasedBatch.Outcome outcome = LeasedBatch.run(cache, model, batch, p -> p.admitted().request(),
                dispatchedNanos, settings.maxIsolatedCulprits(), (culprits, extraRuns) -> { }, ticker::nanos);
        Throwable fatal = outcome.fatal();
        synchronized (lock) {
            executing--;
            onReservedCore -= onReserved ? 1 : 0;
            batchesRun++;
            for (Pending p : items) {
                admission.release(p.admitted());
            }
            if (fatal == null && outcome.ranWhole()) {
                batcher.recordBatch(batch.key(), batch.samples(), outcome.elapsedNanos());
            }
        }
        if (fatal == null) {
            items.get(0).listener().batchCompleted(model.id(), batch.samples(), outcome.inferenceMs(),
                    outcome.serviceMs());
        }
        for (int i = 0; i < n; i++) {
            Pending p = items.get(i);
            if (fatal != null) {
                p.future().completeExceptionally(fatal);
                continue;
            }
            InferenceResponse response = outcome.responses().get(i);
            p.listener().answered(model.id(), response.timings().queueMs(),
                    response.isError() ? response.error().code() : null);
            p.future().complete(response);
        }
        List<Runnable> answers;
        synchronized (lock) {
            answers = dispatch();
        }
        answers.forEach(Runnable::run);
    }

    private void close() {
        LOG.info("Shared inference runtime on {} closing after {} batches", device.id(), batchesRun());
        reloader.close();
        timer.shutdownNow();
        executor.shutdownNow();
        try {
            executor.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        List<Pending> left = new ArrayList<>();
        synchronized (lock) {
            for (Batch<Pending> batch : batcher.flush()) {
                left.addAll(batch.items());
            }
        }
        // Whatever is still queued is answered (outside the lock): the callers' checkpoints hold them anyway.
        for (Pending p : left) {
            p.future().completeExceptionally(new IllegalStateException("the inference runtime closed"));
        }
        cache.close();
        closeQuietly(device);
    }

    private static void closeQuietly(Device d) {
        try {
            d.close();
        } catch (RuntimeException e) {
            LOG.warn("Closing device {} failed", d.id(), e);
        }
    }
}
