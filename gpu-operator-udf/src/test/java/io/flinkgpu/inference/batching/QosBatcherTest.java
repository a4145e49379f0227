package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LevelPolicy;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TimeoutAction;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/** Priorities, deadlines, preemption of queued work, aging, shares and batch sizing, on a fake clock. */
class QosBatcherTest {
    static final ModelId MODEL = new ModelId("m", "1");
    static final BatchKey KEY = new BatchKey(MODEL, "");
    static final long MS = 1_000_000;

    final AtomicLong now = new AtomicLong(1_000 * MS);

    DynamicBatcher<String> batcher(int maxBatch, long delayMs, SchedulingConfig scheduling, Map<String, Double> weights) {
        BatchingConfig batching = new BatchingConfig(maxBatch, Duration.ofMillis(delayMs), null, 1000);
        return new DynamicBatcher<>(m -> batching, m -> scheduling, t -> weights.getOrDefault(t, 1.0), now::get);
    }

    static SchedulingConfig levels(int n, Map<Integer, LevelPolicy> policies, long agingMs) {
        return new SchedulingConfig(n, n, 0, false, policies, agingMs, BatchSizing.FIXED_DELAY, 0);
    }

    static DynamicBatcher.Request at(int level) {
        return new DynamicBatcher.Request(level, "default", Long.MAX_VALUE);
    }

    void offer(DynamicBatcher<String> b, String item, int level) {
        assertThat(b.offer(KEY, item, 1, at(level))).isEqualTo(DynamicBatcher.Admission.ACCEPTED);
    }

    @org.junit.jupiter.api.Test
    void higherPriorityRequestsGoFirstAndSplitAFormingLowPriorityBatch() {
        DynamicBatcher<String> b = batcher(8, 100, levels(3, Map.of(), 0), Map.of());
        for (int i = 0; i < 6; i++) {
            offer(b, "low" + i, 3);
        }
        for (int i = 0; i < 4; i++) {
            offer(b, "high" + i, 1);
        }
        offer(b, "mid", 2);

        Batch<String> first = b.poll();
        assertThat(first.items()).containsExactly("high0", "high1", "high2", "high3", "mid", "low0", "low1", "low2");
        assertThat(b.queuedRequests()).isEqualTo(3); // the low-priority batch was split

        now.addAndGet(100 * MS);
        assertThat(b.poll().items()).containsExactly("low3", "low4", "low5");
    }

    @org.junit.jupiter.api.Test
    void isolatedLevelsKeepLowPriorityOutOfHighPriorityBatches() {
        SchedulingConfig isolated = new SchedulingConfig(3, 3, 0, false, Map.of(), 0, BatchSizing.FIXED_DELAY, 0, true);
        DynamicBatcher<String> b = batcher(8, 100, isolated, Map.of());
        for (int i = 0; i < 6; i++) {
            offer(b, "low" + i, 3);
        }
        offer(b, "high0", 1);
        offer(b, "high1", 1);
        now.addAndGet(100 * MS);
        assertThat(b.poll().items()).containsExactly("high0", "high1");
        assertThat(b.poll().items()).containsExactly("low0", "low1", "low2", "low3", "low4", "low5");
    }

    @org.junit.jupiter.api.Test
    void lowPriorityBatchesStayShortWhileHighPriorityTrafficIsAbout() {
        SchedulingConfig capped = new SchedulingConfig(2, 2, 0, false, Map.of(), 0, BatchSizing.FIXED_DELAY, 0, true, 10);
        DynamicBatcher<String> b = batcher(32, 0, capped, Map.of());
        for (int size = 1; size <= 32; size *= 2) {
            b.recordBatch(MODEL, size, 4 * MS + size * MS / 2); // t(b) = 4 ms + 0.5 ms * b: 12 samples in 10 ms
        }
        for (int i = 0; i < 20; i++) {
            offer(b, "low" + i, 2);
        }
        assertThat(b.poll().samples()).as("no high-priority traffic: a full cut").isEqualTo(20);
        offer(b, "high", 1);
        assertThat(b.poll().items()).containsExactly("high");
        for (int i = 0; i < 20; i++) {
            offer(b, "low" + i, 2);
        }
        assertThat(b.poll().samples()).as("high-priority traffic within the last second").isEqualTo(12);
        now.addAndGet(2_000 * MS);
        assertThat(b.poll().samples()).as("a quiet second later: uncapped again").isEqualTo(8);
    }

    @org.junit.jupiter.api.Test
    void lanesWithHigherPriorityWorkAreServedFirst() {
        DynamicBatcher<String> b = batcher(2, 0, levels(2, Map.of(), 0), Map.of());
        BatchKey other = new BatchKey(new ModelId("other", "1"), "");
        b.offer(other, "other-low", 1, at(2));
        now.addAndGet(MS);
        b.offer(KEY, "m-high", 1, at(1));
        assertThat(b.poll().items()).containsExactly("m-high");
        assertThat(b.poll().items()).containsExactly("other-low");
    }

    @org.junit.jupiter.api.Test
    void timedOutRequestsAreRejectedUnderRejectPolicy() {
        DynamicBatcher<String> b = batcher(8, 50, levels(1, Map.of(1, new LevelPolicy(TimeoutAction.REJECT, 0, 0)), 0),
                Map.of());
        b.offer(KEY, "late", 1, new DynamicBatcher.Request(1, "t", now.get() + 10 * MS));
        b.offer(KEY, "patient", 1, new DynamicBatcher.Request(1, "t", now.get() + 1000 * MS));
        assertThat(b.nextReadyNanos()).hasValue(now.get() + 10 * MS); // wakes for the deadline

        now.addAndGet(10 * MS);
        assertThat(b.poll()).isNull();
        assertThat(b.takeExpired()).extracting(Batch.Queued::item).containsExactly("late");
        assertThat(b.takeExpired()).isEmpty();
        now.addAndGet(40 * MS);
        assertThat(b.poll().items()).containsExactly("patient");
    }

    @org.junit.jupiter.api.Test
    void timedOutRequestsAreDemotedBehindOtherWorkUnderDelayPolicy() {
        DynamicBatcher<String> b = batcher(1, 0,
                levels(2, Map.of(1, new LevelPolicy(TimeoutAction.DELAY, 0, 0)), 0), Map.of());
        b.offer(KEY, "urgent-but-late", 1, new DynamicBatcher.Request(1, "t", now.get() + 5 * MS));
        now.addAndGet(6 * MS);
        b.offer(KEY, "normal", 1, at(2));

        assertThat(b.poll().items()).containsExactly("normal");
        assertThat(b.poll().items()).containsExactly("urgent-but-late");
        assertThat(b.takeExpired()).isEmpty();
    }

    @org.junit.jupiter.api.Test
    void aTightDeadlineIsServedBeforeOlderRequestsThatCanStillWait() {
        BatchKey loose = new BatchKey(new ModelId("loose", "1"), "");
        BatchKey tight = new BatchKey(new ModelId("tight", "1"), "");
        DynamicBatcher<String> b = batcher(8, 0, levels(1, Map.of(), 0), Map.of());
        b.offer(loose, "loose0", 1, new DynamicBatcher.Request(1, "default", now.get() + 200 * MS));
        now.addAndGet(MS);
        b.offer(tight, "tight0", 1, new DynamicBatcher.Request(1, "default", now.get() + 50 * MS));

        assertThat(b.poll().items()).as("least slack first, not oldest first").containsExactly("tight0");
        assertThat(b.poll().items()).containsExactly("loose0");

        // without deadlines the oldest request still goes first
        b.add(loose, "loose1", 1);
        now.addAndGet(MS);
        b.add(tight, "tight1", 1);
        assertThat(b.poll().items()).containsExactly("loose1");
    }

    @org.junit.jupiter.api.Test
    void aQueueThatCanStillMeetItsDeadlineGoesBeforeOneThatCannot() {
        BatchKey late = new BatchKey(new ModelId("late", "1"), "");
        BatchKey onTime = new BatchKey(new ModelId("on-time", "1"), "");
        DynamicBatcher<String> b = batcher(8, 0, levels(1, Map.of(), 0), Map.of());
        for (int size = 1; size <= 8; size *= 2) {
            b.recordBatch(late.model(), size, 30 * MS + size * MS); // a batch of one: 31 ms
            b.recordBatch(onTime.model(), size, 2 * MS + size * MS);
        }
        // the late model's request is due in 40 ms and its batch takes 31 (admitted), but it waits 15 ms: now
        // it misses whatever is cut first; the on-time model's is due in 39 ms with a 3-ms batch: its slack
        // (36 ms) is larger than the late one's (-6 ms), yet it can still be met
        assertThat(b.offer(late, "late0", 1, new DynamicBatcher.Request(1, "default", now.get() + 40 * MS)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        now.addAndGet(15 * MS);
        b.offer(onTime, "onTime0", 1, new DynamicBatcher.Request(1, "default", now.get() + 39 * MS));

        assertThat(b.poll().items()).as("a queue that can still meet its deadline first").containsExactly("onTime0");
        assertThat(b.poll().items()).containsExactly("late0");
    }

    @org.junit.jupiter.api.Test
    void fullQueueRefusesNewRequestsOfThatLevelOnly() {
        DynamicBatcher<String> b = batcher(8, 100, levels(2, Map.of(2, new LevelPolicy(TimeoutAction.REJECT, 2, 0)), 0),
                Map.of());
        offer(b, "a", 2);
        offer(b, "b", 2);
        assertThat(b.offer(KEY, "c", 1, at(2))).isEqualTo(DynamicBatcher.Admission.QUEUE_FULL);
        assertThat(b.offer(KEY, "urgent", 1, at(1))).isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        assertThat(b.queuedRequests(MODEL, 2)).isEqualTo(2);
    }

    @org.junit.jupiter.api.Test
    void queueBoundIsPerTenantSoThatWeightsDecideTheShares() {
        DynamicBatcher<String> b = batcher(8, 100, levels(1, Map.of(1, new LevelPolicy(TimeoutAction.REJECT, 2, 0)), 0),
                Map.of());
        assertThat(b.offer(KEY, "a1", 1, new DynamicBatcher.Request(1, "a", Long.MAX_VALUE)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        assertThat(b.offer(KEY, "a2", 1, new DynamicBatcher.Request(1, "a", Long.MAX_VALUE)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        assertThat(b.offer(KEY, "a3", 1, new DynamicBatcher.Request(1, "a", Long.MAX_VALUE)))
                .isEqualTo(DynamicBatcher.Admission.QUEUE_FULL);
        assertThat(b.offer(KEY, "b1", 1, new DynamicBatcher.Request(1, "b", Long.MAX_VALUE)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        now.addAndGet(100 * MS);
        b.poll(); // serving frees the tenant's queue
        assertThat(b.offer(KEY, "a4", 1, new DynamicBatcher.Request(1, "a", Long.MAX_VALUE)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
    }

    @org.junit.jupiter.api.Test
    void agingPromotesLongWaitingLowPriorityWork() {
        DynamicBatcher<String> b = batcher(1, 0, levels(3, Map.of(), 10), Map.of());
        offer(b, "old-low", 3);
        now.addAndGet(25 * MS); // two aging periods: level 3 -> 1
        offer(b, "fresh-mid", 2);
        assertThat(b.poll().items()).containsExactly("old-low");
        assertThat(b.poll().items()).containsExactly("fresh-mid");
    }

    @org.junit.jupiter.api.Test
    void minimumShareKeepsLowPriorityServedUnderHighPriorityLoad() {
        DynamicBatcher<String> b = batcher(4, 0,
                levels(2, Map.of(2, new LevelPolicy(TimeoutAction.REJECT, 0, 0.25)), 0), Map.of());
        int served = 0;
        int low = 0;
        for (int round = 0; round < 500; round++) {
            while (b.queuedRequests(MODEL, 1) < 8) {
                offer(b, "high", 1);
            }
            while (b.queuedRequests(MODEL, 2) < 8) {
                offer(b, "low", 2);
            }
            for (String item : b.poll().items()) {
                served++;
                low += item.equals("low") ? 1 : 0;
            }
        }
        assertThat((double) low / served).isBetween(0.22, 0.30);
    }

    @org.junit.jupiter.api.Test
    void withoutMinimumShareHighPriorityLoadStarvesLowPriority() {
        DynamicBatcher<String> b = batcher(4, 0, levels(2, Map.of(), 0), Map.of());
        int low = 0;
        for (int round = 0; round < 100; round++) {
            while (b.queuedRequests(MODEL, 1) < 8) {
                offer(b, "high", 1);
            }
            while (b.queuedRequests(MODEL, 2) < 8) {
                offer(b, "low", 2);
            }
            low += (int) b.poll().items().stream().filter("low"::equals).count();
        }
        assertThat(low).isZero();
    }

    @org.junit.jupiter.api.Test
    void rejectsRequestsThatCannotMeetTheirDeadlineEvenIfRunNow() {
        DynamicBatcher<String> b = batcher(8, 5, levels(1, Map.of(), 0), Map.of());
        for (int size = 1; size <= 8; size++) {
            b.recordBatch(MODEL, size, 2 * MS + size * MS / 2); // t(b) = 2 ms + 0.5 ms * b
        }
        assertThat(b.offer(KEY, "hopeless", 2, new DynamicBatcher.Request(1, "t", now.get() + 2 * MS)))
                .isEqualTo(DynamicBatcher.Admission.DEADLINE_INFEASIBLE);
        assertThat(b.offer(KEY, "already-late", 1, new DynamicBatcher.Request(1, "t", now.get() - 1)))
                .isEqualTo(DynamicBatcher.Admission.DEADLINE_INFEASIBLE);
        assertThat(b.offer(KEY, "feasible", 2, new DynamicBatcher.Request(1, "t", now.get() + 4 * MS)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        assertThat(b.queuedRequests()).isEqualTo(1);
    }

    @org.junit.jupiter.api.Test
    void sloAwareSizingDoesNotWaitAtLowLoad() {
        SchedulingConfig slo = new SchedulingConfig(1, 1, 100, false, Map.of(), 0, BatchSizing.SLO_AWARE, 0);
        DynamicBatcher<String> b = batcher(32, 1000, slo, Map.of());
        for (int size = 1; size <= 32; size *= 2) {
            b.recordBatch(MODEL, size, MS + size * MS / 10);
        }
        // requests arrive 50 ms apart: the next one is not expected before the deadline allows
        b.offer(KEY, "a", 1, new DynamicBatcher.Request(1, "t", now.get() + 100 * MS));
        now.addAndGet(50 * MS);
        b.poll();
        b.offer(KEY, "b", 1, new DynamicBatcher.Request(1, "t", now.get() + 100 * MS));
        Batch<String> batch = b.poll();
        assertThat(batch).isNotNull();
        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.LOW_LOAD);
        assertThat(batch.items()).containsExactly("b");
    }

    @org.junit.jupiter.api.Test
    void sloAwareSizingWaitsAtHighLoadOnlyAsLongAsTheDeadlineAllows() {
        SchedulingConfig slo = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.SLO_AWARE, 0);
        DynamicBatcher<String> b = batcher(64, 1000, slo, Map.of());
        for (int size = 1; size <= 64; size *= 2) {
            b.recordBatch(MODEL, size, MS + size * MS / 10); // t(b) = 1 ms + 0.1 ms * b
        }
        long deadline = now.get() + 20 * MS;
        for (int i = 0; i < 10; i++) { // 0.1 ms apart: more arrivals are expected soon
            b.offer(KEY, "r" + i, 1, new DynamicBatcher.Request(1, "t", deadline));
            now.addAndGet(MS / 10);
        }
        assertThat(b.poll()).as("slack remains and requests keep coming").isNull();
        long wake = b.nextReadyNanos().orElseThrow();
        assertThat(wake).isGreaterThan(now.get()).isLessThan(deadline);
        now.set(wake);
        Batch<String> batch = b.poll();
        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.DEADLINE);
        assertThat(batch.samples()).isEqualTo(10);
        assertThat(now.get() + b.latencyModel(MODEL).predictNanos(batch.samples())).isLessThanOrEqualTo(deadline);
    }

    @org.junit.jupiter.api.Test
    void sloAwareSizingCutsTheSmallestBatchThatKeepsUpWithArrivals() {
        SchedulingConfig slo = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.SLO_AWARE, 0);
        DynamicBatcher<String> b = batcher(32, 1000, slo, Map.of());
        for (int size = 1; size <= 32; size *= 2) {
            b.recordBatch(MODEL, size, 4 * MS + size * MS / 10); // t(b) = 4 ms + 0.1 ms * b
        }
        long gap = 2_250_000; // 444 req/s: one at a time (4.1 ms each) would not keep up
        long deadline = now.get() + 500 * MS;
        b.offer(KEY, "r0", 1, new DynamicBatcher.Request(1, "t", deadline));
        now.addAndGet(gap);
        b.offer(KEY, "r1", 1, new DynamicBatcher.Request(1, "t", deadline));
        assertThat(b.poll()).as("2 of the 3 needed: 3 / t(3) = 699/s >= 1.2 x 444/s").isNull();
        now.addAndGet(gap);
        b.offer(KEY, "r2", 1, new DynamicBatcher.Request(1, "t", deadline));
        Batch<String> batch = b.poll();
        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.KEEPS_UP);
        assertThat(batch.items()).containsExactly("r0", "r1", "r2");
    }

    @org.junit.jupiter.api.Test
    void aimdGrowsTheCapWhileUnderTheSloAndBacksOffAboveIt() {
        SchedulingConfig aimd = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.AIMD, 10);
        DynamicBatcher<String> b = batcher(32, 5, aimd, Map.of());
        int start = b.batchCap(MODEL);
        for (int i = 0; i < 5; i++) {
            b.recordBatch(MODEL, b.batchCap(MODEL), 5 * MS);
        }
        assertThat(b.batchCap(MODEL)).isEqualTo(start + 5);
        b.recordBatch(MODEL, b.batchCap(MODEL), 20 * MS);
        assertThat(b.batchCap(MODEL)).isEqualTo((int) Math.floor((start + 5) * 0.9));
        for (int i = 0; i < b.batchCap(MODEL) + 1; i++) {
            offer(b, "r" + i, 1);
        }
        assertThat(b.poll().samples()).isEqualTo(b.batchCap(MODEL));
    }

    /**
     * Models of different speeds and SLOs sharing one batcher, their requests due at different times:
     * the first queue cut is, of those whose earliest deadline can still be met by the batch they
     * would cut, the one with the least slack; if none can, the one with the oldest request.
     */
    @Property(tries = 300)
    void theQueueCutFirstIsTheLeastSlackThatCanStillMakeItElseTheOldest(
            @ForAll @IntRange(min = 2, max = 5) int models, @ForAll @IntRange(min = 1, max = 16) int maxBatch,
            @ForAll long seed) {
        java.util.Random random = new java.util.Random(seed);
        AtomicLong clock = new AtomicLong(1_000 * MS);
        BatchingConfig batching = new BatchingConfig(maxBatch, Duration.ZERO, null, 1000);
        DynamicBatcher<String> b = new DynamicBatcher<>(m -> batching, m -> levels(1, Map.of(), 0), t -> 1.0,
                clock::get);
        List<ModelId> ids = new java.util.ArrayList<>();
        for (int m = 0; m < models; m++) {
            ModelId id = new ModelId("m" + m, "1");
            ids.add(id);
            long alpha = (1 + random.nextInt(30)) * MS;
            long beta = random.nextInt(2_000) * 1_000L;
            for (int size = 1; size <= 16; size *= 2) {
                b.recordBatch(id, size, alpha + size * beta);
            }
        }
        Map<ModelId, Long> earliestDeadline = new HashMap<>();
        Map<ModelId, Long> oldest = new HashMap<>();
        Map<ModelId, Integer> queued = new HashMap<>();
        for (int r = 0; r < 3 * models; r++) {
            ModelId id = ids.get(random.nextInt(models));
            // at least 40 ms ahead: the offers take up to 3 x 5 x 2 ms, and a deadline that passed before the poll
            // would have its request dropped, which the expected cut below does not model
            long deadline = clock.get() + (40 + random.nextInt(200)) * MS;
            DynamicBatcher.Admission a = b.offer(new BatchKey(id, ""), id.name() + "#" + r, 1,
                    new DynamicBatcher.Request(1, "default", deadline));
            if (a == DynamicBatcher.Admission.ACCEPTED) {
                earliestDeadline.merge(id, deadline, Math::min);
                oldest.putIfAbsent(id, clock.get());
                queued.merge(id, 1, Integer::sum);
            }
            clock.addAndGet(random.nextInt(3) * MS);
        }
        if (queued.isEmpty()) {
            return;
        }
        // wait, but not so long that a request expires: some queues can no longer make their deadline
        long firstDeadline = earliestDeadline.values().stream().mapToLong(Long::longValue).min().orElseThrow();
        clock.addAndGet(random.nextInt((int) Math.max(1, (firstDeadline - clock.get()) / MS)) * MS);
        long now = clock.get();
        Map<ModelId, Long> slack = new HashMap<>();
        queued.forEach((id, n) -> slack.put(id, earliestDeadline.get(id) - now
                - b.latencyModel(id).predictNanos(Math.max(1, Math.min(n, b.batchCap(id))))));
        java.util.Set<ModelId> expected = new java.util.HashSet<>();
        long best = slack.values().stream().filter(v -> v >= 0).mapToLong(Long::longValue).min().orElse(-1);
        if (best >= 0) {
            slack.forEach((id, v) -> {
                if (v == best) {
                    expected.add(id);
                }
            });
        } else {
            long first = oldest.values().stream().mapToLong(Long::longValue).min().orElseThrow();
            oldest.forEach((id, t) -> {
                if (t == first) {
                    expected.add(id);
                }
            });
        }
        Batch<String> cut = b.poll();
        assertThat(cut).isNotNull();
        String model = cut.items().get(0).substring(0, cut.items().get(0).indexOf('#'));
        assertThat(expected).extracting(ModelId::name).contains(model);
    }

    /** Tenants share a priority level in proportion to their weights while all are backlogged. */
    @Property(tries = 60)
    void backloggedTenantsShareInProportionToTheirWeights(
            @ForAll @Size(min = 2, max = 4) List<@IntRange(min = 1, max = 5) Integer> weights,
            @ForAll @IntRange(min = 1, max = 16) int maxBatch,
            @ForAll @IntRange(min = 1, max = 3) int maxSamples,
            @ForAll long seed) {
        Map<String, Double> w = new HashMap<>();
        for (int i = 0; i < weights.size(); i++) {
            w.put("t" + i, (double) weights.get(i));
        }
        int cap = Math.max(maxBatch, maxSamples);
        DynamicBatcher<String> b = batcher(cap, 0, levels(1, Map.of(), 0), w);
        java.util.Random random = new java.util.Random(seed);
        Map<String, Integer> queued = new HashMap<>();
        Map<String, Long> served = new HashMap<>();
        long total = 0;
        while (total < 20_000) {
            for (String t : w.keySet()) {
                while (queued.getOrDefault(t, 0) < 2 * cap) {
                    int samples = 1 + random.nextInt(maxSamples);
                    b.offer(KEY, t + ":" + samples, samples, new DynamicBatcher.Request(1, t, Long.MAX_VALUE));
                    queued.merge(t, samples, Integer::sum);
                }
            }
            for (Batch.Queued<String> q : b.poll().entries()) {
                String tenant = q.item().substring(0, q.item().indexOf(':'));
                queued.merge(tenant, -q.samples(), Integer::sum);
                served.merge(tenant, (long) q.samples(), Long::sum);
                total += q.samples();
            }
        }
        double weightSum = w.values().stream().mapToDouble(Double::doubleValue).sum();
        for (Map.Entry<String, Double> e : w.entrySet()) {
            double expected = e.getValue() / weightSum;
            double actual = (double) served.getOrDefault(e.getKey(), 0L) / total;
            assertThat(actual).as("share of %s (weights %s)", e.getKey(), w).isCloseTo(expected,
                    org.assertj.core.data.Percentage.withPercentage(5));
        }
    }
}
