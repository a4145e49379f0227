package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LatencyModel;
import io.flinkgpu.inference.qos.LevelPolicy;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TimeoutAction;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.PriorityQueue;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

/**
 * Windowed dynamic batching with priorities, deadlines and tenant fairness.
 *
 * <p><b>Queues.</b> Requests queue per {@link BatchKey} (model version and input shapes), and
 * within it per priority level and per tenant. A batch is cut when an executor asks for one
 * ({@link #poll()}) and some queue is ready:
 * <ol>
 *   <li>it holds a full batch ({@code maxBatchSize}, or the AIMD cap), or
 *   <li>it holds at least a preferred batch size (the largest such size is cut), or
 *   <li>its oldest request waited {@code maxQueueDelay}, or, with {@link BatchSizing#SLO_AWARE}:
 *       it holds the smallest batch that keeps up with the arrival rate under the latency model
 *       (one request at low load: no waiting), or filling that batch would miss the earliest
 *       queued deadline.
 * </ol>
 * Cutting on demand rather than eagerly means that while every executor is busy, queues keep
 * growing towards full batches, so batch size adapts to load by itself.
 *
 * <p><b>Which requests go into a batch.</b> Priority level 1 first, then 2, and so on, then
 * requests demoted by a {@link TimeoutAction#DELAY} policy. So a high-priority request that
 * arrives while low-priority work is queued overtakes it: the low-priority "forming batch" is
 * split, its rest waits for the next cut. A batch already executing is never interrupted. Within a
 * level, tenants share by deficit round robin with their weights (sample-accurate, O(1) per
 * request, no per-request virtual-time bookkeeping). Anti-starvation: a queued request is
 * treated one level higher for every {@code aging_ms} it waited, and a level whose share of
 * recently executed samples is below its {@code min_share} is served first.
 *
 * <p><b>Admission.</b> {@link #offer} refuses a request when its tenant's queue at its level for
 * the model is full ({@code max_queue_size}) or when the latency model predicts that even running it alone,
 * now, would miss its deadline. Queued requests whose deadline passes are rejected ({@link
 * #takeExpired()}) or demoted, by their level's policy.
 *
 * <p>A model is backpressured when it has {@code maxEnqueuedBatches} full batches' worth of
 * samples queued. Plain Java, single-threaded (the caller serialises access), clock injected.
 */
public final class DynamicBatcher<T> {
    /**
     * Scheduling attributes of one request, as admission decided them: {@code level} 1 is the
     * highest, 0 stands for the model's default level.
     */
    public record Request(int level, String tenant, long deadlineNanos) {
        /** The model's default level, the default tenant, no deadline. */
        public static final Request DEFAULT = new Request(0, "default", Long.MAX_VALUE);
    }

    /** Outcome of {@link #offer}. */
    public enum Admission {
        ACCEPTED,
        QUEUE_FULL,
        DEADLINE_INFEASIBLE,
        /** More samples than the model's batches hold: admission should have refused it. */
        TOO_LARGE
    }

    private static final double SHARE_DECAY_PER_SAMPLE = 1.0 - 1.0 / 1024;
    private static final double ARRIVAL_EWMA = 0.1;
    private static final double AIMD_BACKOFF = 0.9;
    /** SLO-aware sizing sizes batches to keep up with this multiple of the measured arrival rate. */
    static final double KEEP_UP_HEADROOM = 1.2;
    /** How recently a level-1 request must have arrived for {@code low_priority_batch_ms} to apply. */
    static final long TOP_LEVEL_RECENT_NANOS = 1_000_000_000L;

    private final Function<ModelId, BatchingConfig> configs;
    private final Function<ModelId, SchedulingConfig> scheduling;
    private final ToDoubleFunction<String> tenantWeights;
    private final Ticker ticker;
    private final Map<BatchKey, Lane<T>> lanes = new LinkedHashMap<>();
    // Concurrent: the operator's metric gauges read per-model state from the metric reporter's
    // thread, and a HashMap written by the mailbox thread meanwhile threw ConcurrentModificationException.
    private final Map<ModelId, ModelState> models = new java.util.concurrent.ConcurrentHashMap<>();
    private final List<Batch.Queued<T>> expired = new ArrayList<>();
    private int queuedRequests;
    private long sequence;

    public DynamicBatcher(Function<ModelId, BatchingConfig> configs, Ticker ticker) {
        this(configs, m -> SchedulingConfig.DEFAULTS, t -> 1.0, ticker);
    }

    public DynamicBatcher(Function<ModelId, BatchingConfig> configs, Function<ModelId, SchedulingConfig> scheduling,
            ToDoubleFunction<String> tenantWeights, Ticker ticker) {
        this.configs = configs;
        this.scheduling = scheduling;
        this.tenantWeights = tenantWeights;
        this.ticker = ticker;
    }

    /** Per-model state that outlives lanes: policies, latency model, arrival rate, shares. */
    private final class ModelState {
        final BatchingConfig batching;
        final SchedulingConfig sched;
        final LatencyModel latency = new LatencyModel();
        final int levels;
        final int[] queuedPerLevel;
        /** Queued requests per requested priority and tenant: what {@code max_queue_size} bounds. */
        final List<Map<String, int[]>> queuedPerTenant = new ArrayList<>();
        final double[] servedPerLevel;
        long queuedSamples;
        double aimdCap;
        long lastArrivalNanos = Long.MIN_VALUE;
        long lastTopLevelArrivalNanos = Long.MIN_VALUE;
        double meanInterArrivalNanosPerSample;

        ModelState(ModelId id) {
            batching = configs.apply(id);
            sched = scheduling.apply(id);
            levels = sched.priorityLevels();
            queuedPerLevel = new int[levels + 2];
            for (int l = 0; l <= levels; l++) {
                queuedPerTenant.add(new HashMap<>());
            }
            servedPerLevel = new double[levels + 2];
            aimdCap = Math.max(1, batching.maxBatchSize() / 4.0);
        }

        int cap() {
            return sched.batchSizing() == BatchSizing.AIMD
                    ? (int) Math.max(1, Math.min(batching.maxBatchSize(), Math.floor(aimdCap)))
                    : batching.maxBatchSize();
        }

        int delayedLevel() {
            return levels + 1;
        }
    }

    private static final class Entry<T> {
        final T item;
        final int samples;
        final long enqueuedNanos;
        final int priority;
        final String tenant;
        final long sequence;
        long deadlineNanos;
        int level;
        boolean taken;

        Entry(T item, int samples, long enqueuedNanos, int priority, String tenant, long deadlineNanos, long sequence) {
            this.item = item;
            this.samples = samples;
            this.enqueuedNanos = enqueuedNanos;
            this.priority = priority;
            this.level = priority;
            this.tenant = tenant;
            this.deadlineNanos = deadlineNanos;
            this.sequence = sequence;
        }
    }

    private static final Comparator<Entry<?>> BY_AGE =
            Comparator.<Entry<?>>comparingLong(e -> e.enqueuedNanos).thenComparingLong(e -> e.sequence);

    private static final class TenantQueue<T> {
        final String tenant;
        /** Oldest first; aging can move older requests into a level after younger ones. */
        final PriorityQueue<Entry<T>> queue = new PriorityQueue<>(BY_AGE);
        double deficit;
        boolean credited;

        TenantQueue(String tenant) {
            this.tenant = tenant;
        }
    }

    /** One priority level of a lane: tenants in deficit-round-robin order. */
    private static final class Level<T> {
        final Map<String, TenantQueue<T>> byTenant = new HashMap<>();
        final ArrayDeque<TenantQueue<T>> active = new ArrayDeque<>();
        int requests;

        void add(Entry<T> e) {
            TenantQueue<T> tq = byTenant.get(e.tenant);
            if (tq == null) {
                tq = new TenantQueue<>(e.tenant);
                byTenant.put(e.tenant, tq);
                active.addLast(tq);
            }
            tq.queue.add(e);
            requests++;
        }

        void dropIfEmpty(TenantQueue<T> tq) {
            if (tq.queue.isEmpty()) {
                byTenant.remove(tq.tenant);
                active.remove(tq);
            }
        }
    }

    private static final class Lane<T> {
        final BatchKey key;
        final DynamicBatcher<T>.ModelState model;
        final List<Level<T>> levels = new ArrayList<>();
        /** Every entry in arrival order; taken entries are dropped lazily from the head. */
        final ArrayDeque<Entry<T>> arrivals = new ArrayDeque<>();
        int samples;
        int requests;
        long nextDeadlineNanos = Long.MAX_VALUE;

        Lane(BatchKey key, DynamicBatcher<T>.ModelState model) {
            this.key = key;
            this.model = model;
            for (int i = 0; i <= model.delayedLevel(); i++) {
                levels.add(new Level<>());
            }
        }

        Entry<T> oldest() {
            while (!arrivals.isEmpty() && arrivals.peekFirst().taken) {
                arrivals.pollFirst();
            }
            return arrivals.peekFirst();
        }

        int highestNonEmptyLevel() {
            for (int l = 1; l < levels.size(); l++) {
                if (levels.get(l).requests > 0) {
                    return l;
                }
            }
            return Integer.MAX_VALUE;
        }
    }

    private ModelState model(ModelId id) {
        return models.computeIfAbsent(id, ModelState::new);
    }

    public BatchingConfig config(ModelId model) {
        return model(model).batching;
    }

    private int levelOf(ModelState m, Request request) {
        return request.level() < 1 ? m.sched.defaultPriority() : Math.min(request.level(), m.sched.priorityLevels());
    }

    /**
     * Queues an item of {@code samples} samples with default scheduling attributes.
     *
     * @throws IllegalArgumentException if it has more samples than the model's max batch size
     */
    public void add(BatchKey key, T item, int samples) {
        add(key, item, samples, ticker.nanos());
    }

    /** Queues an item as if it had been enqueued at {@code enqueuedNanos} (used on restore). */
    public void add(BatchKey key, T item, int samples, long enqueuedNanos) {
        enqueue(key, item, samples, Request.DEFAULT, enqueuedNanos);
    }

    /** Admits and queues an item, or says why not. */
    public Admission offer(BatchKey key, T item, int samples, Request request) {
        long now = ticker.nanos();
        ModelState m = model(key.model());
        if (samples < 1 || samples > m.batching.maxBatchSize()) {
            return Admission.TOO_LARGE;
        }
        int level = levelOf(m, request);
        LevelPolicy policy = m.sched.level(level);
        int[] tenantQueued = m.queuedPerTenant.get(level).get(request.tenant());
        if (policy.maxQueueSize() > 0 && tenantQueued != null && tenantQueued[0] >= policy.maxQueueSize()) {
            return Admission.QUEUE_FULL;
        }
        if (request.deadlineNanos() != Long.MAX_VALUE
                && (request.deadlineNanos() <= now
                        || (m.latency.hasData() && now + m.latency.predictNanos(samples) > request.deadlineNanos()))) {
            return Admission.DEADLINE_INFEASIBLE;
        }
        enqueue(key, item, samples, request, now);
        return Admission.ACCEPTED;
    }

    private void enqueue(BatchKey key, T item, int samples, Request request, long now) {
        ModelState m = model(key.model());
        if (samples < 1 || samples > m.batching.maxBatchSize()) {
            throw new IllegalArgumentException(
                    "an item of " + samples + " samples does not fit batches of " + m.batching.maxBatchSize());
        }
        int level = levelOf(m, request);
        Entry<T> e = new Entry<>(item, samples, now, level, request.tenant(), request.deadlineNanos(), sequence++);
        Lane<T> lane = lanes.computeIfAbsent(key, k -> new Lane<>(k, m));
        lane.levels.get(level).add(e);
        lane.arrivals.addLast(e);
        lane.samples += samples;
        lane.requests++;
        if (m.sched.level(level).timeoutAction() == TimeoutAction.REJECT || e.deadlineNanos != Long.MAX_VALUE) {
            lane.nextDeadlineNanos = Math.min(lane.nextDeadlineNanos, e.deadlineNanos);
        }
        m.queuedPerLevel[level]++;
        m.queuedPerTenant.get(level).computeIfAbsent(e.tenant, t -> new int[1])[0]++;
        m.queuedSamples += samples;
        queuedRequests++;
        if (m.lastArrivalNanos != Long.MIN_VALUE) {
            double gap = (double) Math.max(0, now - m.lastArrivalNanos) / samples;
            m.meanInterArrivalNanosPerSample = m.meanInterArrivalNanosPerSample == 0 ? gap
                    : (1 - ARRIVAL_EWMA) * m.meanInterArrivalNanosPerSample + ARRIVAL_EWMA * gap;
        }
        m.lastArrivalNanos = now;
        if (level == 1) {
            m.lastTopLevelArrivalNanos = now;
        }
    }

    /** Cuts the most urgent ready batch, or returns null if no queue is ready yet. */
    public Batch<T> poll() {
        long now = ticker.nanos();
        expireAll(now);
        Lane<T> best = null;
        Batch.CloseReason bestReason = null;
        for (Lane<T> lane : lanes.values()) {
            Batch.CloseReason reason = readiness(lane, now);
            if (reason != null && (best == null || more_urgent(lane, best))) {
                best = lane;
                bestReason = reason;
            }
        }
        return best == null ? null : cut(best, bestReason, now);
    }

    private boolean more_urgent(Lane<T> a, Lane<T> b) {
        int la = a.highestNonEmptyLevel();
        int lb = b.highestNonEmptyLevel();
        return la != lb ? la < lb : a.oldest().enqueuedNanos < b.oldest().enqueuedNanos;
    }

    /** Cuts every queue into batches regardless of readiness (end of input, draining). */
    public List<Batch<T>> flush() {
        long now = ticker.nanos();
        expireAll(now);
        List<Batch<T>> batches = new ArrayList<>();
        for (Lane<T> lane : new ArrayList<>(lanes.values())) {
            while (lane.requests > 0) {
                batches.add(cut(lane, Batch.CloseReason.FLUSH, now));
            }
        }
        return batches;
    }

    /** Requests whose deadline passed while queued under a REJECT policy, since the last call. */
    public List<Batch.Queued<T>> takeExpired() {
        if (expired.isEmpty()) {
            return List.of();
        }
        List<Batch.Queued<T>> out = new ArrayList<>(expired);
        expired.clear();
        return out;
    }

    /**
     * The earliest time at which a queue becomes ready by waiting or a queued deadline passes, or
     * empty when nothing is queued. A queue that is already ready reports "now".
     */
    public OptionalLong nextReadyNanos() {
        long now = ticker.nanos();
        long earliest = Long.MAX_VALUE;
        for (Lane<T> lane : lanes.values()) {
            if (readiness(lane, now) != null) {
                return OptionalLong.of(now);
            }
            earliest = Math.min(earliest, Math.min(wakeNanos(lane), lane.nextDeadlineNanos));
        }
        return earliest == Long.MAX_VALUE ? OptionalLong.empty() : OptionalLong.of(earliest);
    }

    /** Feeds a completed batch's run time to the latency model and the AIMD controller. */
    public void recordBatch(ModelId id, int samples, long elapsedNanos) {
        ModelState m = model(id);
        m.latency.record(samples, elapsedNanos);
        if (m.sched.batchSizing() == BatchSizing.AIMD && m.sched.sloMs() > 0) {
            if (elapsedNanos <= m.sched.sloMs() * 1e6) {
                m.aimdCap = Math.min(m.batching.maxBatchSize(), m.aimdCap + 1);
            } else {
                m.aimdCap = Math.max(1, m.aimdCap * AIMD_BACKOFF);
            }
        }
    }

    public LatencyModel latencyModel(ModelId id) {
        return model(id).latency;
    }

    /** The current batch size cap: the AIMD cap, or the max batch size. */
    public int batchCap(ModelId id) {
        return model(id).cap();
    }

    /** Whether the model has {@code maxEnqueuedBatches} full batches' worth of samples queued. */
    public boolean isBackpressured(ModelId model) {
        return queuedSamples(model) >= config(model).queueCapacity();
    }

    /** Whether any model is backpressured. */
    public boolean isBackpressured() {
        for (ModelState m : models.values()) {
            if (m.queuedSamples >= m.batching.queueCapacity()) {
                return true;
            }
        }
        return false;
    }

    public long queuedSamples(ModelId model) {
        ModelState m = models.get(model);
        return m == null ? 0 : m.queuedSamples;
    }

    /** Requests queued for the model at a priority level. */
    public int queuedRequests(ModelId model, int level) {
        ModelState m = models.get(model);
        return m == null || level < 0 || level >= m.queuedPerLevel.length ? 0 : m.queuedPerLevel[level];
    }

    public int queuedRequests() {
        return queuedRequests;
    }

    public boolean isEmpty() {
        return queuedRequests == 0;
    }

    /** Every queued item, queue by queue (for checkpoints). */
    public List<Batch.Queued<T>> queued() {
        List<Batch.Queued<T>> all = new ArrayList<>(queuedRequests);
        for (Lane<T> lane : lanes.values()) {
            for (Entry<T> e : lane.arrivals) {
                if (!e.taken) {
                    all.add(new Batch.Queued<>(e.item, e.samples, e.enqueuedNanos));
                }
            }
        }
        return all;
    }

    // ---- readiness ----------------------------------------------------------------------

    private Batch.CloseReason readiness(Lane<T> lane, long now) {
        if (lane.requests == 0) {
            return null;
        }
        ModelState m = lane.model;
        BatchingConfig c = m.batching;
        if (lane.samples >= m.cap()) {
            return Batch.CloseReason.MAX_SIZE;
        }
        int[] preferred = c.preferredBatchSizes();
        if (preferred.length > 0 && lane.samples >= preferred[0]) {
            return Batch.CloseReason.PREFERRED_SIZE;
        }
        long oldest = lane.oldest().enqueuedNanos;
        if (now - oldest >= c.maxQueueDelay().toNanos()) {
            return Batch.CloseReason.QUEUE_DELAY;
        }
        if (m.sched.batchSizing() == BatchSizing.SLO_AWARE) {
            int needed = batchToKeepUp(m);
            if (lane.samples >= needed) {
                // Large enough to keep up with arrivals (at low load: one request, no waiting).
                return needed == 1 ? Batch.CloseReason.LOW_LOAD : Batch.CloseReason.KEEPS_UP;
            }
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                long slack = deadline - now - m.latency.predictNanos(needed);
                double fill = (needed - lane.samples) * m.meanInterArrivalNanosPerSample;
                if (slack <= 0 || fill >= slack) {
                    return Batch.CloseReason.DEADLINE;
                }
            }
        }
        return null;
    }

    /** When a not-yet-ready lane becomes ready by waiting. */
    private long wakeNanos(Lane<T> lane) {
        ModelState m = lane.model;
        long oldest = lane.oldest().enqueuedNanos;
        long wake = oldest + m.batching.maxQueueDelay().toNanos();
        if (m.sched.batchSizing() == BatchSizing.SLO_AWARE) {
            long deadline = sloDeadline(lane, oldest);
            if (deadline != Long.MAX_VALUE) {
                wake = Math.min(wake, deadline - m.latency.predictNanos(batchToKeepUp(m)));
            }
        }
        return wake;
    }

    /**
     * The smallest batch that keeps up with the arrival rate (with 20% headroom) under the latency
     * model: b / t(b) >= rate, i.e. b >= rate * alpha / (1 - rate * beta). 1 when nothing is
     * known yet or the device is lightly loaded; the cap when no batch size keeps up.
     */
    private static int batchToKeepUp(DynamicBatcher<?>.ModelState m) {
        double gap = m.meanInterArrivalNanosPerSample;
        if (gap <= 0 || !m.latency.hasData()) {
            return 1;
        }
        double rate = KEEP_UP_HEADROOM / gap;
        double beta = m.latency.betaNanos();
        if (rate * beta >= 1) {
            return m.cap();
        }
        double needed = Math.ceil(rate * m.latency.alphaNanos() / (1 - rate * beta));
        return (int) Math.max(1, Math.min(m.cap(), needed));
    }

    /**
     * The earliest deadline in the lane (tracked on enqueue and recomputed when one passes, so
     * it may be earlier than the true one after cuts: conservative), or the oldest request's
     * arrival plus the model's SLO.
     */
    private long sloDeadline(Lane<T> lane, long oldest) {
        long deadline = lane.nextDeadlineNanos;
        if (deadline == Long.MAX_VALUE && lane.model.sched.sloMs() > 0) {
            deadline = oldest + (long) (lane.model.sched.sloMs() * 1e6);
        }
        return deadline;
    }

    // ---- expiry and aging ---------------------------------------------------------------

    private void expireAll(long now) {
        for (Iterator<Lane<T>> it = lanes.values().iterator(); it.hasNext(); ) {
            Lane<T> lane = it.next();
            if (now >= lane.nextDeadlineNanos) {
                expire(lane, now);
            }
            age(lane, now);
            if (lane.requests == 0) {
                it.remove();
            }
        }
    }

    private void expire(Lane<T> lane, long now) {
        ModelState m = lane.model;
        long next = Long.MAX_VALUE;
        for (int l = 1; l <= m.levels; l++) {
            Level<T> level = lane.levels.get(l);
            for (TenantQueue<T> tq : new ArrayList<>(level.active)) {
                for (Iterator<Entry<T>> it = tq.queue.iterator(); it.hasNext(); ) {
                    Entry<T> e = it.next();
                    if (e.deadlineNanos > now) {
                        next = Math.min(next, e.deadlineNanos);
                        continue;
                    }
                    it.remove();
                    level.requests--;
                    m.queuedPerLevel[l]--;
                    if (m.sched.level(e.priority).timeoutAction() == TimeoutAction.DELAY) {
                        e.deadlineNanos = Long.MAX_VALUE;
                        e.level = m.delayedLevel();
                        lane.levels.get(e.level).add(e);
                        m.queuedPerLevel[e.level]++;
                    } else {
                        take(lane, e);
                        expired.add(new Batch.Queued<>(e.item, e.samples, e.enqueuedNanos));
                    }
                }
                level.dropIfEmpty(tq);
            }
        }
        lane.nextDeadlineNanos = next;
    }

    /** Promotes requests one level for every aging period they waited. */
    private void age(Lane<T> lane, long now) {
        ModelState m = lane.model;
        long agingNanos = m.sched.agingMs() * 1_000_000;
        if (agingNanos <= 0) {
            return;
        }
        for (int l = 2; l <= m.levels; l++) {
            Level<T> level = lane.levels.get(l);
            for (TenantQueue<T> tq : new ArrayList<>(level.active)) {
                while (!tq.queue.isEmpty()) {
                    Entry<T> head = tq.queue.peek(); // the oldest: if it is not due, none is
                    int target = (int) Math.max(1, head.priority - (now - head.enqueuedNanos) / agingNanos);
                    if (target >= l) {
                        break;
                    }
                    tq.queue.poll();
                    level.requests--;
                    m.queuedPerLevel[l]--;
                    head.level = target;
                    lane.levels.get(target).add(head);
                    m.queuedPerLevel[target]++;
                }
                level.dropIfEmpty(tq);
            }
        }
    }

    // ---- cutting ------------------------------------------------------------------------

    private Batch<T> cut(Lane<T> lane, Batch.CloseReason reason, long now) {
        ModelState m = lane.model;
        int limit = reason == Batch.CloseReason.FLUSH ? m.batching.maxBatchSize() : m.cap();
        if (reason == Batch.CloseReason.PREFERRED_SIZE) {
            int cap = limit;
            for (int p : m.batching.preferredBatchSizes()) {
                if (p <= lane.samples && p <= cap) {
                    limit = p; // ascending: ends on the largest preferred size reached
                }
            }
        }
        if (m.sched.batchSizing() == BatchSizing.SLO_AWARE && reason != Batch.CloseReason.FLUSH
                && m.latency.hasData()) {
            long deadline = sloDeadline(lane, lane.oldest().enqueuedNanos);
            while (limit > 1 && deadline != Long.MAX_VALUE && now + m.latency.predictNanos(limit) > deadline) {
                limit--; // the largest batch whose predicted completion meets the earliest deadline
            }
        }
        if (m.sched.lowPriorityBatchMs() > 0 && reason != Batch.CloseReason.FLUSH && m.latency.hasData()
                && lane.levels.get(1).requests == 0 && m.lastTopLevelArrivalNanos != Long.MIN_VALUE
                && now - m.lastTopLevelArrivalNanos < TOP_LEVEL_RECENT_NANOS) {
            long budget = (long) (m.sched.lowPriorityBatchMs() * 1e6);
            while (limit > 1 && m.latency.predictNanos(limit) > budget) {
                limit--; // keep a lower-priority batch short while high-priority requests are about
            }
        }
        List<Batch.Queued<T>> entries = new ArrayList<>();
        int samples = 0;
        for (int l : levelOrder(lane)) {
            samples += fillFromLevel(lane, l, limit - samples, entries, samples == 0);
            if (samples >= limit || (m.sched.isolateLevels() && samples > 0)) {
                break;
            }
        }
        if (lane.requests == 0) {
            lanes.remove(lane.key);
        }
        return new Batch<>(lane.key, entries, samples, reason, now);
    }

    /** Levels below their guaranteed share first, then by priority, then demoted requests. */
    private List<Integer> levelOrder(Lane<T> lane) {
        ModelState m = lane.model;
        double total = 0;
        for (double s : m.servedPerLevel) {
            total += s;
        }
        List<Integer> order = new ArrayList<>(m.levels + 1);
        for (int l = 1; l <= m.levels; l++) {
            double minShare = m.sched.level(l).minShare();
            if (minShare > 0 && lane.levels.get(l).requests > 0 && (total == 0 || m.servedPerLevel[l] / total < minShare)) {
                order.add(l);
            }
        }
        for (int l = 1; l <= m.delayedLevel(); l++) {
            if (!order.contains(l)) {
                order.add(l);
            }
        }
        return order;
    }

    /** Deficit round robin over the level's tenants; returns the samples taken. */
    private int fillFromLevel(Lane<T> lane, int l, int room, List<Batch.Queued<T>> out, boolean batchEmpty) {
        Level<T> level = lane.levels.get(l);
        int taken = 0;
        boolean first = batchEmpty;
        while (room - taken > 0 && !level.active.isEmpty()) {
            TenantQueue<T> tq = level.active.peekFirst();
            if (!tq.credited) {
                tq.deficit += tenantWeights.applyAsDouble(tq.tenant);
                tq.credited = true;
            }
            boolean blocked = false;
            while (!tq.queue.isEmpty()) {
                Entry<T> head = tq.queue.peek();
                if (head.samples > room - taken && !(first && taken == 0)) {
                    blocked = true; // does not fit this batch: it leads the next one
                    break;
                }
                if (head.samples > tq.deficit) {
                    break; // its turn is over: it keeps the deficit for the next round
                }
                tq.queue.poll();
                tq.deficit = Math.max(0, tq.deficit - head.samples);
                level.requests--;
                lane.model.queuedPerLevel[l]--;
                take(lane, head);
                out.add(new Batch.Queued<>(head.item, head.samples, head.enqueuedNanos));
                taken += head.samples;
                served(lane.model, l, head.samples);
            }
            if (blocked) {
                break;
            }
            level.active.pollFirst();
            tq.credited = false;
            if (tq.queue.isEmpty()) {
                tq.deficit = 0;
                level.byTenant.remove(tq.tenant);
            } else {
                level.active.addLast(tq);
            }
        }
        return taken;
    }

    private void take(Lane<T> lane, Entry<T> e) {
        e.taken = true;
        Map<String, int[]> byTenant = lane.model.queuedPerTenant.get(e.priority);
        int[] n = byTenant.get(e.tenant);
        if (n != null && --n[0] <= 0) {
            byTenant.remove(e.tenant);
        }
        lane.samples -= e.samples;
        lane.requests--;
        lane.model.queuedSamples -= e.samples;
        queuedRequests--;
    }

    private static void served(DynamicBatcher<?>.ModelState m, int level, int samples) {
        double decay = Math.pow(SHARE_DECAY_PER_SAMPLE, samples);
        for (int i = 0; i < m.servedPerLevel.length; i++) {
            m.servedPerLevel[i] *= decay;
        }
        m.servedPerLevel[level] += samples;
    }
}
