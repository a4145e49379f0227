package io.flinkgpu.sim;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.CycleSchedule;
import io.flinkgpu.coordinator.ParallelismStep;
import io.flinkgpu.coordinator.PlacementStep;
import io.flinkgpu.coordinator.PublishPolicy;
import io.flinkgpu.coordinator.WarmRouting;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.evaluate.DemandEvaluator;
import io.flinkgpu.coordinator.evaluate.DemandForecast;
import io.flinkgpu.coordinator.plan.ParallelismPlanner;
import io.flinkgpu.coordinator.plan.PlacementPlanner;
import io.flinkgpu.coordinator.realize.PlanRealizer;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.ModelInfo;
import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.batching.BatchKey;
import io.flinkgpu.inference.batching.DynamicBatcher;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.cache.SimulatedModelCache;
import io.flinkgpu.inference.control.RoutingTable;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.OptionalLong;
import java.util.PriorityQueue;
import java.util.TreeMap;
import java.util.TreeSet;
import org.HdrHistogram.Histogram;

/**
 * A discrete-event simulation of an inference fleet on a virtual clock ({@link SimClock}).
 *
 * <p>Each device runs the library's own {@link DynamicBatcher} (SLO-aware sizing, deadlines,
 * admission) and the cache's own policy parts ({@link SimulatedModelCache}: memory accounting,
 * LRU eviction, slots, pins), with speeds t(b) = alpha + beta b from the {@link Calibration} (the
 * library's {@link SpeedModel}) and load times from the library's {@code LoadTimeModel}. One
 * executor per device, as one inference subtask per GPU. Under {@link Policy#PLANNER} the
 * coordinator's own {@link Coordinator} loop (its {@link DemandEvaluator}, {@link PlacementStep}
 * with the {@link PlacementPlanner} and DRF, {@link PublishPolicy}, an in-memory state store) runs
 * every cycle on snapshots built from the simulated counters, and its plans are applied as the
 * job applies them: the routing table through the library's {@link RoutingTable} (queue-aware on
 * each device's outstanding requests, as the job's router reads its queue board), LOAD/UNLOAD as
 * pins and unloads. Each device reports every model it has loaded (the operator's {@code loaded}
 * gauge), so the coordinator's {@link WarmRouting} routes a new replica once its load is done. Requests for a model without a route go to the device its name hashes to and
 * load there on demand, as with the job's default hash routing.
 *
 * <p>Deterministic for a given workload and seed: one event order (time, then insertion), every
 * random draw from the seed. Wall-clock time is only measured (coordinator cycles), never used.
 */
public final class FleetSimulator {
    private static final int ARRIVAL = 0;
    private static final int WAKE = 1;
    private static final int COMPLETE = 2;
    private static final int LOAD_DONE = 3;
    private static final int CYCLE = 4;
    private static final int CYCLE_READ = 5;
    private static final int APPLY = 6;
    private static final int FETCH = 7;

    private static final class Event {
        final long t;
        final long seq;
        final int type;
        final int a;
        final int b;
        final Object o;

        Event(long t, long seq, int type, int a, int b, Object o) {
            this.t = t;
            this.seq = seq;
            this.type = type;
            this.a = a;
            this.b = b;
            this.o = o;
        }
    }

    /** One request in a queue. */
    record Req(int model, long arrivalNanos, boolean counted) {}

    private final Workload workload;
    private final FleetConfig config;
    private final Policy policy;
    private final Calibration calibration;
    private final SimClock clock = new SimClock();
    private final PriorityQueue<Event> events = new PriorityQueue<>((x, y) -> x.t != y.t ? Long.compare(x.t, y.t)
            : Long.compare(x.seq, y.seq));
    private long seq;
    private final List<SimModel> models;
    private final ModelId[] ids;
    private final BatchKey[] keys;
    private final ModelRepository.ResolvedModel[] resolved;
    private final Map<ModelId, Integer> indexOf = new HashMap<>();
    private final Dev[] devs;
    private final long horizon;
    private final long warmup;

    // routing
    private RoutingTable table;
    /** The plan's weighted round robin alone (the job's {@code inference.routing.queue-aware} off). */
    private boolean roundRobinRouting;
    private final int[] hashDevice;

    // coordinator
    private Coordinator coordinator;
    /** When the coordinator's cycles run ({@code coordinator.interval}, {@code coordinator.plan.warm-check-interval}). */
    private CycleSchedule schedule;
    private long cycleStartedAt;
    private MetricSnapshot published;
    private MetricSnapshot pending;
    private final List<Double> cycleWallMs = new ArrayList<>();
    private long plansPublished;
    private final List<Map<String, Object>> planLog = new ArrayList<>();

    // outcome counters (arrivals in the window)
    private long arrivals;
    private long answered;
    private long withinSlo;
    private long refused;
    private long expired;
    private long unrouted;
    private long noRoom;
    private long arrivalsLat;
    private long withinLat;
    private long arrivalsThr;
    private long withinThr;
    private long arrivalsHash = 1125899906842597L;
    private long loadsInWindow;
    /** Requests in the window the plan routed to a device that did not have the model loaded (yet). */
    private long routedToUnloaded;
    private long evictionsAtWarmup = -1;
    private int maxModelsOnADevice;
    private final Histogram latencyUs = new Histogram(3_600_000_000L, 3);
    private final List<long[]> perSecond = new ArrayList<>(); // [second, answered, withinSlo, arrivals]
    private final Map<Integer, Histogram> windowLatency = new TreeMap<>();
    private final Map<Integer, Long> windowFailures = new TreeMap<>();
    private final boolean recordWindows;
    private long pathLatencyNanos;
    private double rateWindowSeconds;
    /** Each model's scheduling block, read by the batchers when a model first queues. */
    private final Map<String, SchedulingConfig> scheduling = new HashMap<>();
    /** Requests carry a deadline (arrival + the model's SLO); off for models without a scheduling block. */
    private boolean deadlines = true;
    /** Every cycle's demand, routes and utilisation per device (for investigations; off by default). */
    private List<Map<String, Object>> cycleTrace;
    /** Per model, in the window: arrivals, answered within SLO, and the misses by cause (refused, expired, no room). */
    private final long[][] perModel;

    public FleetSimulator(Workload workload, FleetConfig config, Policy policy, Calibration calibration) {
        this(workload, config, policy, calibration, false);
    }

    /** @param recordWindows keep per-1-s-window p99s (validation runs) */
    public FleetSimulator(Workload workload, FleetConfig config, Policy policy, Calibration calibration,
            boolean recordWindows) {
        this.workload = workload;
        this.config = config;
        this.policy = policy;
        this.calibration = calibration;
        this.recordWindows = recordWindows;
        this.models = workload.models();
        int m = models.size();
        ids = new ModelId[m];
        keys = new BatchKey[m];
        resolved = new ModelRepository.ResolvedModel[m];
        Map<String, BatchingConfig> batching = new HashMap<>();
        for (SimModel s : models) {
            ids[s.index()] = new ModelId(s.name(), "1");
            keys[s.index()] = new BatchKey(ids[s.index()], "");
            indexOf.put(ids[s.index()], s.index());
            BatchingConfig b = new BatchingConfig(s.maxBatchSamples(),
                    Duration.ofNanos((long) (s.maxQueueDelayMs() * 1e6)), List.of(), 4);
            SchedulingConfig sc = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.SLO_AWARE, s.sloMs());
            batching.put(s.name(), b);
            scheduling.put(s.name(), sc);
            ModelConfig mc = new ModelConfig(s.name(), "onnxruntime", s.maxBatchSamples(),
                    List.of(new TensorSpec("input", DataType.FP32, new long[] {-1, 1}, null)), null, b, sc, null,
                    s.memoryBytes(), null, null, null, 0.0, null, null, null);
            resolved[s.index()] = new ModelRepository.ResolvedModel(ids[s.index()], mc, Path.of(s.name()));
        }
        horizon = (long) (config.horizonSeconds() * 1e9);
        warmup = (long) (config.warmupSeconds() * 1e9);
        devs = new Dev[config.devices()];
        for (int i = 0; i < devs.length; i++) {
            devs[i] = new Dev(i, config.deviceKinds().get(i), batching, scheduling);
        }
        perModel = new long[m][5];
        hashDevice = new int[m];
        for (int i = 0; i < m; i++) {
            hashDevice[i] = Math.floorMod(ids[i].name().hashCode(), devs.length);
        }
    }

    /**
     * Adds a fixed latency to every response: the part of a real request's path the simulation has
     * no model of (Kafka hops, Flink's network buffers), for comparisons with measured end-to-end runs.
     */
    public FleetSimulator withPathLatency(double ms) {
        pathLatencyNanos = (long) (ms * 1e6);
        return this;
    }

    /**
     * The planner's requests go to the routed devices by the plan's weighted round robin alone, as
     * the job routes with {@code inference.routing.queue-aware} off (or across TaskManagers),
     * instead of queue-aware. Call before {@link #run}.
     */
    public FleetSimulator withRoundRobinRouting() {
        roundRobinRouting = true;
        return this;
    }

    /**
     * Every model as a model config without a {@code scheduling} block runs in the job: the default
     * batch sizing ({@link SchedulingConfig#DEFAULTS}: cut when the executor is free, no SLO-aware
     * sizing) and requests without a deadline, which queue until served instead of expiring. The
     * models' SLOs still judge the answers. Call before {@link #run}.
     */
    public FleetSimulator withoutScheduling() {
        scheduling.replaceAll((k, v) -> SchedulingConfig.DEFAULTS);
        deadlines = false;
        return this;
    }

    /**
     * The coordinator measures request rates over {@code coordinator.rate-window} (against the newest
     * collection at least this old) and widens its forecast's errors by it, as the service's
     * coordinator does; the default 0 measures over one cycle. Call before {@link #run}.
     */
    public FleetSimulator withRateWindow(double seconds) {
        if (!(seconds >= 0)) {
            throw new IllegalArgumentException("rate window >= 0");
        }
        rateWindowSeconds = seconds;
        return this;
    }

    /** Keeps a record of every coordinator cycle in the result's {@code cycle_trace} (large: for investigations). */
    FleetSimulator withCycleTrace() {
        cycleTrace = new ArrayList<>();
        return this;
    }

    // ---------------------------------------------------------------- devices

    /** One GPU: its batcher, its cache, its executor and the counters its metrics report. */
    final class Dev {
        final int index;
        final String id;
        final String kind;
        final SimulatedDevice device;
        final SimulatedModelCache cache;
        final DynamicBatcher<Req> batcher;
        final SpeedModel[] speeds;
        boolean busy;
        Batch<Req> running;
        long runningNanos;
        /** Batches cut for a model still loading; other models' batches run meanwhile (the copy is not the compute). */
        final Map<Integer, List<Batch<Req>>> parked = new TreeMap<>();
        final java.util.ArrayDeque<Batch<Req>> runnable = new java.util.ArrayDeque<>();
        int parkedRequests;
        long wakeAt = Long.MAX_VALUE;
        long busyInWindow;
        long busyTotal;
        long busyAtLastSnapshot;
        long lastSnapshotAt;
        final double[] requestsIn;
        final double[] responsesOut;
        final double[] batches;
        /** Per model, the last batches' sizes and times, as the operator's batch-size and latency histograms hold. */
        final BatchWindow[] recent;
        final TreeSet<Integer> seen = new TreeSet<>();

        Dev(int index, String kind, Map<String, BatchingConfig> batching, Map<String, SchedulingConfig> scheduling) {
            this.index = index;
            this.id = String.format(Locale.ROOT, "sim-%03d", index);
            this.kind = kind;
            this.device = new SimulatedDevice(id, config.deviceMemoryBytes(), SpeedModel.linear(1, 0));
            int maxModels = switch (policy) {
                case STATIC -> 1;
                case NO_EVICTION, LRU_MEMORY -> Integer.MAX_VALUE;
                case LRU_COUNT -> 3;
                case PLANNER -> config.maxModelsPerDevice();
            };
            Duration timeout = policy == Policy.PLANNER ? Duration.ofSeconds(config.evictionTimeoutSeconds())
                    : Duration.ZERO;
            ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withMaxModels(maxModels)
                    .withEvictionTimeout(timeout).withBackgroundEviction(false);
            boolean mayEvict = policy == Policy.LRU_COUNT || policy == Policy.LRU_MEMORY || policy == Policy.PLANNER;
            this.cache = new SimulatedModelCache(device, settings, clock, mayEvict);
            this.batcher = new DynamicBatcher<>(mid -> batching.get(mid.name()), mid -> scheduling.get(mid.name()),
                    t -> 1.0, clock);
            int m = models.size();
            speeds = new SpeedModel[m];
            for (SimModel s : models) {
                speeds[s.index()] = calibration.speed(s.arch(), kind);
            }
            requestsIn = new double[m];
            responsesOut = new double[m];
            batches = new double[m];
            recent = new BatchWindow[m];
        }

        void offer(Req r) {
            SimModel s = models.get(r.model());
            long deadline = deadlines ? r.arrivalNanos() + (long) (s.sloMs() * 1e6) : Long.MAX_VALUE;
            DynamicBatcher.Admission a = batcher.offer(keys[r.model()], r, s.samples(),
                    new DynamicBatcher.Request(0, "default", deadline));
            if (a != DynamicBatcher.Admission.ACCEPTED) {
                if (r.counted()) {
                    refused++;
                    perModel[r.model()][2]++;
                    failed(r);
                }
                return;
            }
            requestsIn[r.model()]++;
            seen.add(r.model());
            kick();
        }

        long queued() {
            return batcher.queuedRequests() + (busy ? 1 : 0) + parkedRequests;
        }

        /**
         * What this device holds, as the job's inference subtask publishes it on its queue board:
         * the requests queued or cut and waiting (parked for a load, runnable), plus one for the
         * batch executing (a new request waits for that batch to end, not for each of its requests).
         */
        long outstanding() {
            long n = batcher.queuedRequests() + parkedRequests + (running == null ? 0 : 1);
            for (Batch<Req> b : runnable) {
                n += b.size();
            }
            return n;
        }

        /** Runs the next batch if the executor is free. */
        void kick() {
            for (Batch.Queued<Req> q : batcher.takeExpired()) {
                if (q.item().counted()) {
                    expired++;
                    perModel[q.item().model()][3]++;
                    failed(q.item());
                }
            }
            if (busy) {
                return;
            }
            while (!runnable.isEmpty()) {
                Batch<Req> b = runnable.poll();
                parkedRequests -= b.size();
                int model = indexOf.get(b.key().model());
                if (dispatch(b, model)) {
                    return;
                }
            }
            while (true) {
                Batch<Req> b = batcher.poll();
                for (Batch.Queued<Req> q : batcher.takeExpired()) {
                    if (q.item().counted()) {
                        expired++;
                        perModel[q.item().model()][3]++;
                        failed(q.item());
                    }
                }
                if (b == null) {
                    OptionalLong next = batcher.nextReadyNanos();
                    if (next.isPresent()) {
                        long t = Math.max(next.getAsLong(), clock.nanos() + 1);
                        if (t < wakeAt) {
                            wakeAt = t;
                            schedule(t, WAKE, index, 0, null);
                        }
                    }
                    return;
                }
                int model = indexOf.get(b.key().model());
                if (dispatch(b, model)) {
                    return;
                }
            }
        }

        /** Starts the batch (true), or parks it behind its model's load, or drops it for lack of room (false). */
        boolean dispatch(Batch<Req> b, int model) {
            SimulatedModelCache.Outcome o = ensureLoaded(model);
            if (o == SimulatedModelCache.Outcome.READY) {
                start(b, model);
                return true;
            }
            if (o == SimulatedModelCache.Outcome.LOADING) {
                parked.computeIfAbsent(model, k -> new ArrayList<>()).add(b);
                parkedRequests += b.size();
                return false;
            }
            for (Batch.Queued<Req> q : b.entries()) {
                if (q.item().counted()) {
                    noRoom++;
                    perModel[q.item().model()][4]++;
                    failed(q.item());
                }
            }
            return false;
        }

        /** Loaded, or a load under way (started now if need be). */
        SimulatedModelCache.Outcome ensureLoaded(int model) {
            long before = cache.loads();
            SimulatedModelCache.Outcome o = cache.ensure(resolved[model], models.get(model).arch().fileBytes());
            if (cache.loads() > before) {
                if (clock.nanos() >= warmup && clock.nanos() < horizon) {
                    loadsInWindow++;
                }
                maxModelsOnADevice = Math.max(maxModelsOnADevice, cache.placedCount());
                long bytes = models.get(model).memoryBytes();
                schedule(clock.nanos() + config.loadTime().loadNanos(bytes), LOAD_DONE, index, model, null);
            }
            return o;
        }

        void start(Batch<Req> b, int model) {
            cache.hold(ids[model]);
            long d = speeds[model].latencyNanos(b.samples(), 0);
            busy = true;
            running = b;
            runningNanos = d;
            long now = clock.nanos();
            long from = Math.max(now, warmup);
            long to = Math.min(now + d, horizon);
            if (to > from) {
                busyInWindow += to - from;
            }
            busyTotal += d;
            schedule(now + d, COMPLETE, index, model, null);
        }

        void complete(int model) {
            Batch<Req> b = running;
            running = null;
            busy = false;
            long now = clock.nanos();
            SimModel s = models.get(model);
            for (Batch.Queued<Req> q : b.entries()) {
                Req r = q.item();
                responsesOut[model]++;
                if (r.counted()) {
                    long lat = now - r.arrivalNanos() + pathLatencyNanos;
                    answered++;
                    latencyUs.recordValue(Math.max(1, Math.min(lat / 1000, latencyUs.getHighestTrackableValue())));
                    boolean ok = lat <= (long) (s.sloMs() * 1e6);
                    if (ok) {
                        withinSlo++;
                        perModel[model][1]++;
                        if (s.latencyBound()) {
                            withinLat++;
                        } else {
                            withinThr++;
                        }
                    }
                    if (recordWindows) {
                        int w = (int) Math.floorDiv(r.arrivalNanos(), 1_000_000_000L);
                        windowLatency.computeIfAbsent(w, k -> new Histogram(3_600_000_000L, 3))
                                .recordValue(Math.max(1, lat / 1000));
                    }
                }
            }
            batches[model]++;
            if (recent[model] == null) {
                recent[model] = new BatchWindow(MetricNames.HISTOGRAM_WINDOW);
            }
            recent[model].add(b.samples(), runningNanos);
            batcher.recordBatch(ids[model], b.samples(), runningNanos);
            cache.release(ids[model]);
            kick();
        }

        void loadDone(int model) {
            cache.loaded(ids[model]);
            List<Batch<Req>> waiting = parked.remove(model);
            if (waiting != null) {
                runnable.addAll(waiting);
                kick();
            }
        }

        SubtaskSample sample(long now) {
            double seconds = Math.max(1e-9, (now - lastSnapshotAt) / 1e9);
            double util = Math.min(1, (busyTotal - busyAtLastSnapshot) / 1e9 / seconds);
            busyAtLastSnapshot = busyTotal;
            lastSnapshotAt = now;
            List<ModelSample> ms = new ArrayList<>();
            // the models that had requests here, and those loaded here ahead of them (a LOAD): each with its
            // loaded gauge, as the operator registers it once a load completes
            TreeSet<Integer> reported = new TreeSet<>(seen);
            for (ModelId id : cache.residentModels()) {
                if (cache.isLoaded(id)) {
                    reported.add(indexOf.get(id));
                }
            }
            for (int m : reported) {
                // the means of the operator's histograms: over its last batches, however long ago they ran
                BatchWindow w = recent[m];
                double meanBatch = w == null ? Double.NaN : w.meanSamples() / models.get(m).samples();
                double meanUs = w == null ? Double.NaN : w.meanNanos() / 1000;
                var lm = batcher.latencyModel(ids[m]);
                // the operator reports its latency model per request of this model: alpha, and beta per request
                double alphaUs = lm.hasData() ? lm.alphaNanos() / 1000 : Double.NaN;
                double betaUs = lm.hasData() ? lm.betaNanos() * models.get(m).samples() / 1000 : Double.NaN;
                // and its batch cap (the batcher's, in samples) in requests, as its mean batch
                double cap = (double) batcher.batchCap(ids[m]) / models.get(m).samples();
                ms.add(ModelSample.builder(ids[m].name(), ids[m].version())
                        .counts(requestsIn[m], responsesOut[m], batches[m]).queuedSamples(batcher.queuedSamples(ids[m]))
                        .batchSizeMean(meanBatch).inferenceLatencyUsMean(meanUs).latencyModel(alphaUs, betaUs)
                        .loaded(cache.isLoaded(ids[m]) ? 1 : 0).batchCap(cap).build());
            }
            return new SubtaskSample(index, id, cache.reservedBytes(), config.deviceMemoryBytes(), util, util * 1000,
                    0, batcher.queuedRequests(), ms);
        }
    }

    // ---------------------------------------------------------------- routing

    private int route(int model) {
        switch (policy) {
            case STATIC:
            case NO_EVICTION: {
                return table == null ? -1 : table.select(ids[model].name());
            }
            case LRU_COUNT:
            case LRU_MEMORY: {
                // cache-aware: the least queued device holding the model, unless all holders are backed up
                int best = -1;
                long bestQ = Long.MAX_VALUE;
                for (Dev d : devs) {
                    if (d.cache.holds(ids[model])) {
                        long q = d.queued();
                        if (q < bestQ) {
                            bestQ = q;
                            best = d.index;
                        }
                    }
                }
                // a replica that has it, unless every one has four full batches queued: then load another
                SimModel s = models.get(model);
                long spill = Math.max(4, 4L * s.maxBatchSamples() / s.samples());
                if (best >= 0 && bestQ < spill) {
                    return best;
                }
                int least = 0;
                long leastQ = Long.MAX_VALUE;
                for (Dev d : devs) {
                    long q = d.queued();
                    if (q < leastQ) {
                        leastQ = q;
                        least = d.index;
                    }
                }
                return best >= 0 && bestQ <= leastQ ? best : least;
            }
            case PLANNER: {
                // as the job's router: queue-aware on what each device holds (one JVM, nothing in transit)
                int s = table == null ? RoutingTable.NO_ROUTE
                        : roundRobinRouting ? table.select(ids[model].name())
                        : table.select(ids[model].name(), d -> devs[d].outstanding());
                return s == RoutingTable.NO_ROUTE ? hashDevice[model] : s;
            }
            default:
                throw new IllegalStateException();
        }
    }

    /** Static and no-eviction placements, loaded before the first arrival. */
    private void placeUpFront() {
        Map<Integer, List<Integer>> holders = new TreeMap<>();
        if (policy == Policy.STATIC) {
            int[] replicas = StaticPlacement.replicas(models, devs.length, calibration, devs[0].kind);
            int d = 0;
            for (int m = 0; m < models.size(); m++) {
                for (int r = 0; r < replicas[m]; r++) {
                    holders.computeIfAbsent(m, k -> new ArrayList<>()).add(d);
                    preload(devs[d], m);
                    d++;
                }
            }
        } else {
            int n = models.size();
            for (Dev dev : devs) {
                int offset = (int) ((long) dev.index * n / devs.length);
                for (int k = 0; k < n; k++) {
                    int m = (offset + k) % n;
                    if (dev.device.freeMemoryBytes() >= models.get(m).memoryBytes()) {
                        if (preload(dev, m)) {
                            holders.computeIfAbsent(m, x -> new ArrayList<>()).add(dev.index);
                        }
                    }
                }
            }
        }
        List<ModelRoute> routes = new ArrayList<>();
        holders.forEach((m, ds) -> {
            List<RouteTarget> targets = new ArrayList<>();
            ds.forEach(d -> targets.add(new RouteTarget(d, 1.0)));
            routes.add(new ModelRoute(ids[m].name(), targets, policy.label()));
        });
        table = new RoutingTable(ControlMessage.of(1, 0, devs.length, routes, List.of(), policy.label()), devs.length);
    }

    private boolean preload(Dev d, int m) {
        SimulatedModelCache.Outcome o = d.cache.ensure(resolved[m], models.get(m).arch().fileBytes());
        if (o == SimulatedModelCache.Outcome.NO_ROOM) {
            return false;
        }
        d.cache.loaded(ids[m]);
        d.cache.pin(ids[m]);
        maxModelsOnADevice = Math.max(maxModelsOnADevice, d.cache.placedCount());
        return true;
    }

    // ---------------------------------------------------------------- coordinator

    private void startCoordinator() {
        InMemoryStateStore store = new InMemoryStateStore();
        for (SimModel s : models) {
            store.putModel(new ModelInfo(s.name(), null, s.memoryBytes(), (long) s.sloMs(), true));
        }
        var p = config.planner();
        PlacementStep step = new PlacementStep(new PlacementPlanner(p), config.deviceMemoryBytes(),
                config.maxModelsPerDevice(), 8.0, 0.1, 1.0, Duration.ofSeconds(30));
        ParallelismStep parallelism = new ParallelismStep(new ParallelismPlanner(4, devs.length, 0.8,
                p.targetUtilization(), p.hysteresis(), Duration.ofMinutes(5)), null);
        MetricSource source = () -> pending;
        PlanRealizer realizer = plan -> {
            plansPublished++;
            schedule(clock.nanos() + (long) (config.controlDelaySeconds() * 1e9), APPLY, 0, 0, plan);
        };
        WarmRouting warm = new WarmRouting(config.warmBeforeRoute(),
                Duration.ofMillis(Math.round(config.warmTimeoutSeconds() * 1000)));
        // the forecast as coordinator.forecast.* configures it: the horizon of the fleet, the other settings' defaults
        DemandForecast forecast = new DemandForecast(config.forecastHorizonSeconds(),
                CoordinatorOptions.FORECAST_WINDOW.defaultValue().toMillis() / 1000.0,
                CoordinatorOptions.FORECAST_SIGNIFICANCE.defaultValue(), rateWindowSeconds);
        DemandEvaluator evaluator = new DemandEvaluator(256L << 20, 100, Math.round(rateWindowSeconds * 1000),
                forecast);
        coordinator = new Coordinator(source, evaluator, step, parallelism, warm,
                new PublishPolicy(0.2), realizer, store, new CoordinatorMetrics(), clock.asClock());
        schedule = new CycleSchedule(Duration.ofNanos((long) (config.cycleSeconds() * 1e9)),
                Duration.ofNanos((long) (config.warmCheckSeconds() * 1e9)));
        schedule((long) (config.cycleSeconds() * 1e9), CYCLE, 0, 0, null);
        if (config.metricsFetchSeconds() > 0) {
            schedule(0, FETCH, 0, 0, null);
        }
    }

    private MetricSnapshot snapshot() {
        List<SubtaskSample> subs = new ArrayList<>();
        long now = clock.nanos();
        for (Dev d : devs) {
            subs.add(d.sample(now));
        }
        return new MetricSnapshot(clock.millis(), "sim-job", "sim-vertex", devs.length, subs);
    }

    private void cycleRead() {
        pending = config.metricsFetchSeconds() > 0 ? published : snapshot();
        if (pending == null) {
            return;
        }
        long t0 = System.nanoTime();
        Coordinator.CycleResult r = coordinator.runOnce(false);
        cycleWallMs.add((System.nanoTime() - t0) / 1e6);

        if (cycleTrace != null) {
            Map<String, Object> c = new LinkedHashMap<>();
            c.put("t_s", clock.nanos() / 1e9);
            c.put("published", r.published());
            c.put("skipped", r.skipped());
            if (r.demand() != null) {
                Map<String, Object> load = new TreeMap<>();
                r.demand().models().values().forEach(md -> load.put(md.model(), List.of(md.ratePerSecond(),
                        md.deviceSecondsPerSecond(), md.batchSize())));
                c.put("demand", load);
            }
            if (r.placement() != null) {
                Map<String, Object> placed = new TreeMap<>();
                r.placement().placement().devicesByModel().forEach((mm, ds) -> placed.put(mm, ds.size()));
                c.put("placed", placed);
                c.put("device_load", r.placement().deviceLoad());
            }
            if (r.plan() != null) {
                Map<String, Object> routed = new TreeMap<>();
                r.plan().routes().forEach(route -> routed.put(route.model(), route.targets().size()));
                c.put("routed", routed);
            }
            List<Double> util = new ArrayList<>();
            pending.subtasks().forEach(sub -> util.add(sub.utilization()));
            c.put("util", util);
            cycleTrace.add(c);
        }
        if (r.published() && r.plan() != null) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("t_s", clock.nanos() / 1e9);
            e.put("epoch", r.plan().epoch());
            e.put("reason", r.plan().reason());
            e.put("routes", r.plan().routes().size());
            if (recordWindows) {
                Map<String, List<Integer>> subtasks = new TreeMap<>();
                for (ModelRoute route : r.plan().routes()) {
                    subtasks.put(route.model(), route.targets().stream().map(RouteTarget::subtask).sorted().toList());
                }
                e.put("subtasks", subtasks);
                e.put("rate_estimates", r.demand().models().values().stream().collect(java.util.stream.Collectors
                        .toMap(md -> md.model(), md -> md.ratePerSecond(), (x, y) -> x, TreeMap::new)));
            }
            planLog.add(e);
        }
        for (Dev d : devs) {
            d.cache.evictIdle(clock.nanos());
        }
    }

    private void apply(ControlMessage plan) {
        table = new RoutingTable(plan, devs.length);
        for (SubtaskCommand c : plan.commands()) {
            if (c.subtask() < 0 || c.subtask() >= devs.length || c.model() == null) {
                continue;
            }
            Integer m = indexOf.get(new ModelId(c.model(), "1"));
            if (m == null) {
                continue;
            }
            Dev d = devs[c.subtask()];
            if (c.action() == SubtaskCommand.Action.LOAD) {
                d.cache.pin(ids[m]);
                d.ensureLoaded(m);
            } else {
                d.cache.unload(ids[m]);
            }
        }
    }

    // ---------------------------------------------------------------- loop

    private void schedule(long t, int type, int a, int b, Object o) {
        events.add(new Event(t, seq++, type, a, b, o));
    }

    /** Runs the trace to its horizon, drains, and reports. */
    public SimResult run() {
        List<Workload.Arrivals> streams = new ArrayList<>();
        for (SimModel s : models) {
            Workload.Arrivals a = workload.arrivals(s);
            streams.add(a);
            double t = a.next();
            if (t * 1e9 < horizon) {
                schedule((long) (t * 1e9), ARRIVAL, s.index(), 0, null);
            }
        }
        if (policy == Policy.STATIC || policy == Policy.NO_EVICTION) {
            placeUpFront();
        }
        if (policy == Policy.PLANNER) {
            startCoordinator();
        }
        Event e;
        while ((e = events.poll()) != null) {
            clock.advanceTo(e.t);
            if (evictionsAtWarmup < 0 && e.t >= warmup) {
                evictionsAtWarmup = totalEvictions();
            }
            switch (e.type) {
                case ARRIVAL -> {
                    int m = e.a;
                    boolean counted = e.t >= warmup;
                    if (counted) {
                        arrivals++;
                        perModel[m][0]++;
                        arrivalsHash = arrivalsHash * 31 + m * 1_000_003L + e.t;
                        if (models.get(m).latencyBound()) {
                            arrivalsLat++;
                        } else {
                            arrivalsThr++;
                        }
                    }
                    int d = route(m);
                    if (d < 0) {
                        if (counted) {
                            unrouted++;
                            failed(new Req(m, e.t, true));
                        }
                    } else {
                        if (counted && policy == Policy.PLANNER && table != null && table.routes(ids[m].name())
                                && !devs[d].cache.isLoaded(ids[m])) {
                            routedToUnloaded++;
                        }
                        devs[d].offer(new Req(m, e.t, counted));
                    }
                    double next = streams.get(m).next();
                    if (next * 1e9 < horizon) {
                        schedule((long) (next * 1e9), ARRIVAL, m, 0, null);
                    }
                }
                case WAKE -> {
                    Dev d = devs[e.a];
                    if (d.wakeAt == e.t) {
                        d.wakeAt = Long.MAX_VALUE;
                    }
                    d.kick();
                }
                case COMPLETE -> devs[e.a].complete(e.b);
                case LOAD_DONE -> devs[e.a].loadDone(e.b);
                case CYCLE -> {
                    if (e.t < horizon) {
                        cycleStartedAt = e.t;
                        schedule(e.t + (long) (config.metricsSettleSeconds() * 1e9), CYCLE_READ, 0, 0, null);
                    }
                }
                case CYCLE_READ -> {
                    cycleRead();
                    // the next cycle as the service's loop schedules it (sooner while a route waits for its load)
                    long delay = schedule.delayAfter(coordinator.metrics().routesWarming()).toNanos();
                    schedule(Math.max(e.t, cycleStartedAt + delay), CYCLE, 0, 0, null);
                }
                case FETCH -> {
                    published = snapshot();
                    if (e.t < horizon) {
                        schedule(e.t + (long) (config.metricsFetchSeconds() * 1e9), FETCH, 0, 0, null);
                    }
                }
                case APPLY -> apply((ControlMessage) e.o);
                default -> throw new IllegalStateException("event " + e.type);
            }
        }
        long inFlight = 0;
        for (Dev d : devs) {
            if (!d.batcher.isEmpty()) {
                for (Batch.Queued<Req> q : d.batcher.queued()) {
                    inFlight += q.item().counted() ? 1 : 0;
                }
            }
        }
        return result(inFlight);
    }

    private void failed(Req r) {
        if (recordWindows) {
            windowFailures.merge((int) Math.floorDiv(r.arrivalNanos(), 1_000_000_000L), 1L, Long::sum);
        }
    }

    private long totalEvictions() {
        long n = 0;
        for (Dev d : devs) {
            n += d.cache.evictions();
        }
        return n;
    }

    private SimResult result(long inFlight) {
        double window = (horizon - warmup) / 1e9;
        long busy = 0;
        for (Dev d : devs) {
            busy += d.busyInWindow;
        }
        double util = busy / 1e9 / (window * devs.length);
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("plans", planLog);
        if (cycleTrace != null) {
            extra.put("cycle_trace", cycleTrace);
        }
        extra.put("plan_routed_to_unloaded", routedToUnloaded);
        if (recordWindows) {
            Map<Integer, Double> p99 = new TreeMap<>();
            windowLatency.forEach((w, h) -> p99.put(w, h.getValueAtPercentile(99) / 1000.0));
            extra.put("window_p99_ms", p99);
            extra.put("window_failures", new TreeMap<>(windowFailures));
        }
        int[] perDevice = new int[devs.length];
        for (Dev d : devs) {
            perDevice[d.index] = d.cache.residentModels().size();
        }
        extra.put("models_resident_at_end", Arrays.stream(perDevice).boxed().toList());
        Map<String, Object> byModel = new LinkedHashMap<>();
        for (SimModel s : models) {
            long[] c = perModel[s.index()];
            byModel.put(s.name(), Map.of("arrivals", c[0], "within_slo", c[1], "refused", c[2], "expired", c[3],
                    "no_room", c[4]));
        }
        extra.put("per_model", byModel);
        double offered = 0;
        for (SimModel s : models) {
            offered += s.meanRate();
        }
        return new SimResult(policy.label(), workload.spec().load(), devs.length, models.size(),
                config.horizonSeconds(), config.warmupSeconds(), arrivals, answered, withinSlo, refused, expired,
                unrouted, noRoom, inFlight, pct(50), pct(95), pct(99), ratio(withinSlo, arrivals),
                ratio(withinLat, arrivalsLat), ratio(withinThr, arrivalsThr), util, withinSlo / window / devs.length,
                offered, loadsInWindow / (window / 60), loadsInWindow,
                totalEvictions() - Math.max(0, evictionsAtWarmup), maxModelsOnADevice, List.copyOf(cycleWallMs),
                plansPublished, arrivalsHash, extra);
    }

    private double pct(double p) {
        return latencyUs.getTotalCount() == 0 ? Double.NaN : latencyUs.getValueAtPercentile(p) / 1000.0;
    }

    private static double ratio(long a, long b) {
        return b == 0 ? 1.0 : (double) a / b;
    }
}
