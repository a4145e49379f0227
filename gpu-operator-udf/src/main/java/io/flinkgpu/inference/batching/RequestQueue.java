package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.qos.LevelPolicy;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TimeoutAction;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.function.ToDoubleFunction;

/**
 * The batcher's queued requests, and which of them a batch takes. When a batch is cut and how
 * large is the {@link CutPolicy}'s decision.
 *
 * <p><b>Layout.</b> One {@link Lane} per {@link BatchKey} (model version and input shapes), in the
 * order lanes were opened. A lane holds one level per QoS level of its model, 1 the highest, and
 * one more for requests demoted by a {@link TimeoutAction#DELAY} policy. A level holds one queue
 * per tenant, oldest request first.
 *
 * <p><b>What a batch takes</b> ({@link #take}). Levels below their guaranteed {@code min_share}
 * of recently executed samples first, then level 1, 2, and so on, then demoted requests; with
 * {@code isolate_levels} only the first level that yields any. Within a level, tenants share by
 * deficit round robin with their weights (sample-accurate, O(1) per request, no per-request
 * virtual-time bookkeeping). A request that does not fit the batch stays at its tenant's head and
 * leads the next one.
 *
 * <p><b>Moving requests</b> ({@link #expireAndAge}). A queued request is treated one level
 * higher for every {@code aging_ms} it waited. One whose deadline passes is demoted or, under a
 * {@link TimeoutAction#REJECT} policy, dropped and handed out by {@link #takeExpired()}.
 *
 * <p>Each model's counts (per level, per level and tenant, queued samples) and served shares live
 * in its {@link ModelQueue}. Single-threaded, like the batcher.
 */
final class RequestQueue<T> {
    private static final double SHARE_DECAY_PER_SAMPLE = 1.0 - 1.0 / 1024;
    private static final Comparator<Entry<?>> BY_AGE =
            Comparator.<Entry<?>>comparingLong(e -> e.enqueuedNanos).thenComparingLong(e -> e.sequence);

    private final ToDoubleFunction<String> tenantWeights;
    private final Map<BatchKey, Lane<T>> lanes = new LinkedHashMap<>();
    private final List<Batch.Queued<T>> expired = new ArrayList<>();
    private int queuedRequests;
    private long sequence;

    RequestQueue(ToDoubleFunction<String> tenantWeights) {
        this.tenantWeights = tenantWeights;
    }

    /** One model's part of the queue: its level layout and policies, what it has queued, what it was served. */
    static final class ModelQueue {
        final SchedulingConfig sched;
        final int levels;
        final int[] queuedPerLevel;
        /** Queued requests per requested level and tenant: what {@code max_queue_size} bounds. */
        final List<Map<String, int[]>> queuedPerTenant = new ArrayList<>();
        final double[] servedPerLevel;
        long queuedSamples;

        ModelQueue(SchedulingConfig sched) {
            this.sched = sched;
            levels = sched.priorityLevels();
            queuedPerLevel = new int[levels + 2];
            for (int l = 0; l <= levels; l++) {
                queuedPerTenant.add(new HashMap<>());
            }
            servedPerLevel = new double[levels + 2];
        }

        int delayedLevel() {
            return levels + 1;
        }

        /** The level a request queues at: its own, at most the lowest, or the model's default (level below 1). */
        int levelOf(DynamicBatcher.Request request) {
            return request.level() < 1 ? sched.defaultPriority() : Math.min(request.level(), sched.priorityLevels());
        }

        /** Whether the tenant's queue at the level holds {@code max_queue_size} requests. */
        boolean isFull(int level, String tenant) {
            LevelPolicy policy = sched.level(level);
            int[] tenantQueued = queuedPerTenant.get(level).get(tenant);
            return policy.maxQueueSize() > 0 && tenantQueued != null && tenantQueued[0] >= policy.maxQueueSize();
        }

        long queuedSamples() {
            return queuedSamples;
        }

        /** Requests queued at a level (aging and demotion move them). */
        int queuedRequests(int level) {
            return level < 0 || level >= queuedPerLevel.length ? 0 : queuedPerLevel[level];
        }

        /** Counts served samples towards the level's share, decaying older ones. */
        void served(int level, int samples) {
            double decay = Math.pow(SHARE_DECAY_PER_SAMPLE, samples);
            for (int i = 0; i < servedPerLevel.length; i++) {
                servedPerLevel[i] *= decay;
            }
            servedPerLevel[level] += samples;
        }
    }

    private static final class Entry<T> {
        final T item;
        final int samples;
        final long enqueuedNanos;
        /** The level it was queued at; {@link #level} is where aging or demotion moved it since. */
        final int requestedLevel;
        final String tenant;
        final long sequence;
        long deadlineNanos;
        int level;
        boolean taken;

        Entry(T item, int samples, long enqueuedNanos, int requestedLevel, String tenant, long deadlineNanos,
                long sequence) {
            this.item = item;
            this.samples = samples;
            this.enqueuedNanos = enqueuedNanos;
            this.requestedLevel = requestedLevel;
            this.level = requestedLevel;
            this.tenant = tenant;
            this.deadlineNanos = deadlineNanos;
            this.sequence = sequence;
        }

        Batch.Queued<T> queued() {
            return new Batch.Queued<>(item, samples, enqueuedNanos);
        }
    }

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

    /** One level of a lane: tenants in deficit-round-robin order. */
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

    /** The queued requests of one {@link BatchKey}. */
    static final class Lane<T> implements CutPolicy.LaneState {
        private final BatchKey key;
        private final ModelQueue model;
        private final List<Level<T>> levels = new ArrayList<>();
        /** Every entry in arrival order; taken entries are dropped lazily from the head. */
        private final ArrayDeque<Entry<T>> arrivals = new ArrayDeque<>();
        private int samples;
        private int requests;
        private long nextDeadlineNanos = Long.MAX_VALUE;

        private Lane(BatchKey key, ModelQueue model) {
            this.key = key;
            this.model = model;
            for (int i = 0; i <= model.delayedLevel(); i++) {
                levels.add(new Level<>());
            }
        }

        BatchKey key() {
            return key;
        }

        @Override
        public String shapeSignature() {
            return key.shapeSignature();
        }

        @Override
        public int requests() {
            return requests;
        }

        @Override
        public int samples() {
            return samples;
        }

        @Override
        public long oldestEnqueuedNanos() {
            return oldest().enqueuedNanos;
        }

        @Override
        public long earliestDeadlineNanos() {
            return nextDeadlineNanos;
        }

        @Override
        public int requestsAt(int level) {
            return levels.get(level).requests;
        }

        /**
         * Whether this lane is served before {@code other}: its highest queued level; then, where both
         * lanes' requests carry deadlines, a lane whose earliest deadline can still be met (slack: that
         * deadline less now and the predicted run time of the batch the lane would cut, at least 0)
         * before one whose cannot, and of two that can, the least slack, so a tight-SLO model's requests
         * do not wait behind a loose-SLO model's older ones that can still wait, and a queue that is late
         * anyway does not make the others late too (deadline-first orders cascade under overload);
         * otherwise its oldest request.
         *
         * @param runNanos predicted run time of this lane's next batch (0: unknown)
         * @param otherRunNanos the same for {@code other}
         * @param nowNanos the batcher's clock
         */
        boolean moreUrgentThan(Lane<?> other, long runNanos, long otherRunNanos, long nowNanos) {
            int la = highestNonEmptyLevel();
            int lb = other.highestNonEmptyLevel();
            if (la != lb) {
                return la < lb;
            }
            long da = earliestDeadlineNanos();
            long db = other.earliestDeadlineNanos();
            if (da != Long.MAX_VALUE && db != Long.MAX_VALUE) {
                long sa = da - runNanos - nowNanos;
                long sb = db - otherRunNanos - nowNanos;
                if ((sa >= 0) != (sb >= 0)) {
                    return sa >= 0;
                }
                if (sa >= 0 && sa != sb) {
                    return sa < sb;
                }
            }
            return oldestEnqueuedNanos() < other.oldestEnqueuedNanos();
        }

        private Entry<T> oldest() {
            while (!arrivals.isEmpty() && arrivals.peekFirst().taken) {
                arrivals.pollFirst();
            }
            return arrivals.peekFirst();
        }

        private int highestNonEmptyLevel() {
            for (int l = 1; l < levels.size(); l++) {
                if (levels.get(l).requests > 0) {
                    return l;
                }
            }
            return Integer.MAX_VALUE;
        }
    }

    /** Queues an item at {@code level} of the model's lane for {@code key}, opening the lane if needed. */
    void add(BatchKey key, ModelQueue m, T item, int samples, int level, String tenant, long deadlineNanos, long now) {
        Entry<T> e = new Entry<>(item, samples, now, level, tenant, deadlineNanos, sequence++);
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
    }

    /** The lanes holding requests, in the order they were opened. */
    Collection<Lane<T>> lanes() {
        return Collections.unmodifiableCollection(lanes.values());
    }

    int queuedRequests() {
        return queuedRequests;
    }

    /** Every queued item, lane by lane, each lane in arrival order. */
    List<Batch.Queued<T>> queued() {
        List<Batch.Queued<T>> all = new ArrayList<>(queuedRequests);
        for (Lane<T> lane : lanes.values()) {
            for (Entry<T> e : lane.arrivals) {
                if (!e.taken) {
                    all.add(e.queued());
                }
            }
        }
        return all;
    }

    /** Requests dropped because their deadline passed under a REJECT policy, since the last call. */
    List<Batch.Queued<T>> takeExpired() {
        if (expired.isEmpty()) {
            return List.of();
        }
        List<Batch.Queued<T>> out = new ArrayList<>(expired);
        expired.clear();
        return out;
    }

    // ---- expiry and aging ---------------------------------------------------------------

    /** Demotes or drops requests whose deadline passed, ages the rest, and closes empty lanes. */
    void expireAndAge(long now) {
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
        ModelQueue m = lane.model;
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
                    if (m.sched.level(e.requestedLevel).timeoutAction() == TimeoutAction.DELAY) {
                        e.deadlineNanos = Long.MAX_VALUE;
                        e.level = m.delayedLevel();
                        lane.levels.get(e.level).add(e);
                        m.queuedPerLevel[e.level]++;
                    } else {
                        take(lane, e);
                        expired.add(e.queued());
                    }
                }
                level.dropIfEmpty(tq);
            }
        }
        lane.nextDeadlineNanos = next;
    }

    /** Promotes requests one level for every aging period they waited. */
    private void age(Lane<T> lane, long now) {
        ModelQueue m = lane.model;
        long agingNanos = m.sched.agingMs() * 1_000_000;
        if (agingNanos <= 0) {
            return;
        }
        for (int l = 2; l <= m.levels; l++) {
            Level<T> level = lane.levels.get(l);
            for (TenantQueue<T> tq : new ArrayList<>(level.active)) {
                while (!tq.queue.isEmpty()) {
                    Entry<T> head = tq.queue.peek(); // the oldest: if it is not due, none is
                    int target = (int) Math.max(1, head.requestedLevel - (now - head.enqueuedNanos) / agingNanos);
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

    // ---- taking a batch -----------------------------------------------------------------

    /**
     * Takes up to {@code limit} samples from the lane into {@code out} (the first request taken
     * may exceed the limit, so that a batch is never empty); closes the lane when it empties.
     *
     * @return the samples taken
     */
    int take(Lane<T> lane, int limit, List<Batch.Queued<T>> out) {
        int samples = 0;
        for (int l : levelOrder(lane)) {
            samples += fillFromLevel(lane, l, limit - samples, out, samples == 0);
            if (samples >= limit || (lane.model.sched.isolateLevels() && samples > 0)) {
                break;
            }
        }
        if (lane.requests == 0) {
            lanes.remove(lane.key);
        }
        return samples;
    }

    /** Levels below their guaranteed share first, then by level, then demoted requests. */
    private List<Integer> levelOrder(Lane<T> lane) {
        ModelQueue m = lane.model;
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
                out.add(head.queued());
                taken += head.samples;
                lane.model.served(l, head.samples);
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

    /** Removes a request from the counts; the caller has removed it from its tenant queue. */
    private void take(Lane<T> lane, Entry<T> e) {
        e.taken = true;
        Map<String, int[]> byTenant = lane.model.queuedPerTenant.get(e.requestedLevel);
        int[] n = byTenant.get(e.tenant);
        if (n != null && --n[0] <= 0) {
            byTenant.remove(e.tenant);
        }
        lane.samples -= e.samples;
        lane.requests--;
        lane.model.queuedSamples -= e.samples;
        queuedRequests--;
    }
}
