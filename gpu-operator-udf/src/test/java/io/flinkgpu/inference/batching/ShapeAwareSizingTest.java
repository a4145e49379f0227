package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.ShapeStats;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

/**
 * Latency models per input shape, and SLO-aware sizing's cap where batching stops paying: a model
 * with variable-size inputs (a text model's sequence buckets) runs its shapes at very different
 * speeds, and on a device where a batch's time grows in proportion to its size a larger batch only
 * holds every request in it for the whole run.
 */
class ShapeAwareSizingTest {
    static final ModelId MODEL = new ModelId("text", "1");
    static final BatchKey SHORT = new BatchKey(MODEL, "[16]");
    static final BatchKey LONG = new BatchKey(MODEL, "[128]");
    static final long MS = 1_000_000;

    final AtomicLong now = new AtomicLong(1_000 * MS);

    static SchedulingConfig sizing(BatchSizing sizing) {
        return new SchedulingConfig(1, 1, 0, false, Map.of(), 0, sizing, 0);
    }

    DynamicBatcher<String> batcher(int maxBatch, BatchSizing sizing) {
        BatchingConfig batching = new BatchingConfig(maxBatch, Duration.ZERO, null, 1000);
        return new DynamicBatcher<>(m -> batching, m -> sizing(sizing), t -> 1.0, now::get);
    }

    /** Teaches the batcher that batches of {@code key} take alpha + beta * b. */
    static void learn(DynamicBatcher<String> b, BatchKey key, long alphaNanos, long betaNanos) {
        for (int size = 1; size <= 8; size *= 2) {
            b.recordBatch(key, size, alphaNanos + size * betaNanos);
        }
    }

    /** Offers {@code n} requests of {@code key}, {@code gapMs} apart, without cutting. */
    void arrive(DynamicBatcher<String> b, BatchKey key, String name, int n, long gapMs) {
        for (int i = 0; i < n; i++) {
            assertThat(b.offer(key, name + i, 1, DynamicBatcher.Request.DEFAULT))
                    .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
            now.addAndGet(gapMs * MS);
        }
    }

    @Test
    void eachShapeIsPredictedFromItsOwnBatches() {
        DynamicBatcher<String> b = batcher(32, BatchSizing.FIXED_DELAY);
        learn(b, SHORT, 0, 5 * MS);
        learn(b, LONG, 0, 40 * MS);

        assertThat(b.latencyModel(SHORT).predictNanos(2)).isEqualTo(10 * MS);
        assertThat(b.latencyModel(LONG).predictNanos(2)).isEqualTo(80 * MS);
        assertThat(b.latencyModel(new BatchKey(MODEL, "[64]")))
                .as("a shape that never ran reads the model-wide model")
                .isSameAs(b.latencyModel(MODEL));
        assertThat(b.latencyModel(MODEL).observations()).isEqualTo(8);

        long deadline = now.get() + 20 * MS;
        assertThat(b.offer(SHORT, "short", 1, new DynamicBatcher.Request(1, "t", deadline)))
                .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
        assertThat(b.offer(LONG, "long", 1, new DynamicBatcher.Request(1, "t", deadline)))
                .as("40 ms alone cannot meet a 20 ms deadline")
                .isEqualTo(DynamicBatcher.Admission.DEADLINE_INFEASIBLE);
    }

    @Test
    void aFixedShapeModelKeepsOneModel() {
        DynamicBatcher<String> b = batcher(32, BatchSizing.FIXED_DELAY);
        BatchKey fixed = new BatchKey(MODEL, "");
        learn(b, fixed, MS, MS / 10);
        assertThat(b.latencyModel(fixed)).isSameAs(b.latencyModel(MODEL));
        assertThat(b.latencyModel(fixed).predictNanos(10)).isEqualTo(2 * MS);
    }

    @Test
    void theShapeModelsAreBoundedLeastRecentlyUsedFirst() {
        ShapeStats latency = new ShapeStats();
        for (int s = 0; s < ShapeStats.MAX_SHAPES + 10; s++) {
            latency.record("[" + s + "]", 1, (s + 1) * MS);
        }
        assertThat(latency.shapes()).isEqualTo(ShapeStats.MAX_SHAPES);
        assertThat(latency.forShape("[0]")).as("dropped: the model-wide one").isSameAs(latency.overall());
        int last = ShapeStats.MAX_SHAPES + 9;
        assertThat(latency.forShape("[" + last + "]").predictNanos(1)).isEqualTo((last + 1) * MS);
    }

    @Test
    void eachShapeHasItsOwnArrivalRate() {
        ShapeStats stats = new ShapeStats();
        for (int i = 0; i < 5; i++) {
            stats.recordArrival("[16]", 1, i * 10 * MS);
            stats.recordArrival("[128]", 2, i * 100 * MS);
        }
        assertThat(stats.meanGapNanosPerSample("[16]")).isEqualTo(10 * MS);
        assertThat(stats.meanGapNanosPerSample("[128]")).as("per sample").isEqualTo(50 * MS);
        assertThat(stats.meanGapNanosPerSample("[64]")).isZero();
        stats.recordArrival("", 1, 0);
        stats.recordArrival("", 1, 4 * MS);
        assertThat(stats.meanGapNanosPerSample("")).as("a fixed-shape model's").isEqualTo(4 * MS);
    }

    @Test
    void sloAwareSizingRunsAProportionalShapeOneAtATimeWhileItKeepsUp() {
        DynamicBatcher<String> slo = batcher(32, BatchSizing.SLO_AWARE_CAPPED);
        DynamicBatcher<String> fixed = batcher(32, BatchSizing.FIXED_DELAY);
        DynamicBatcher<String> uncapped = batcher(32, BatchSizing.SLO_AWARE);
        for (DynamicBatcher<String> b : List.of(slo, fixed, uncapped)) {
            learn(b, LONG, 0, 20 * MS); // 20 ms per sequence, whatever the batch: batching does not pay
        }
        // 4 requests 50 ms apart queue while the thread is busy elsewhere: 24/s x 20 ms keeps up
        long start = now.get();
        arrive(slo, LONG, "r", 4, 50);
        now.set(start);
        arrive(fixed, LONG, "r", 4, 50);
        now.set(start);
        arrive(uncapped, LONG, "r", 4, 50);
        assertThat(uncapped.poll().items()).as("SLO_AWARE without the cap takes all it has")
                .containsExactly("r0", "r1", "r2", "r3");

        Batch<String> one = slo.poll();
        assertThat(one.items()).containsExactly("r0");
        assertThat(slo.poll().items()).containsExactly("r1");
        assertThat(fixed.poll().items()).as("the fixed delay takes all it has").containsExactly("r0", "r1", "r2", "r3");
    }

    @Test
    void sloAwareSizingStillBatchesWhereBatchingPays() {
        DynamicBatcher<String> b = batcher(32, BatchSizing.SLO_AWARE_CAPPED);
        learn(b, SHORT, 10 * MS, MS / 10); // 10 ms fixed, 0.1 ms per sample: a batch of 32 costs 1.3x one
        arrive(b, SHORT, "r", 6, 50);
        assertThat(b.poll().items()).hasSize(6);
    }

    @Test
    void sloAwareSizingTakesWhatKeepsUpWhenOneAtATimeCannot() {
        DynamicBatcher<String> b = batcher(32, BatchSizing.SLO_AWARE_CAPPED);
        learn(b, LONG, MS, 20 * MS); // worthwhile: ceil(1 / (0.1 x 20)) = 1
        arrive(b, LONG, "r", 12, 10); // 100/s against 20 ms each: one at a time falls behind
        Batch<String> batch = b.poll();
        assertThat(batch.items()).as("1.2 x 100/s x 20 ms >= 1: no batch keeps up, so the cap").hasSize(12);
    }

    @Test
    void worthwhileBatchFollowsTheLatencyModel() {
        SchedulingConfig slo = sizing(BatchSizing.SLO_AWARE_CAPPED);
        BatchingConfig batching = new BatchingConfig(64, Duration.ZERO, null, 4);
        ShapeStats latency = new ShapeStats();
        CutPolicy p = new CutPolicy(batching, slo, latency, new BatchSizeController(64, slo));

        latency.record("[a]", 1, 20 * MS);
        latency.record("[a]", 4, 80 * MS);
        assertThat(p.worthwhileBatch(latency.forShape("[a]"))).as("proportional").isEqualTo(1);
        latency.record("[b]", 1, 2 * MS);
        latency.record("[b]", 11, 12 * MS); // alpha 1 ms, beta 1 ms: b >= 1 / 0.1 = 10
        assertThat(p.worthwhileBatch(latency.forShape("[b]"))).isEqualTo(10);
        latency.record("[c]", 1, 5 * MS);
        latency.record("[c]", 8, 5 * MS); // flat: a larger batch costs nothing more
        assertThat(p.worthwhileBatch(latency.forShape("[c]"))).isEqualTo(64);

        // the largest batch that runs within a millisecond
        assertThat(p.shortRunBatch(latency.forShape("[a]"))).isEqualTo(1);
        assertThat(p.shortRunBatch(latency.forShape("[b]"))).as("alpha alone takes the millisecond").isEqualTo(1);
        assertThat(p.shortRunBatch(latency.forShape("[c]"))).isEqualTo(1);
        latency.record("[d]", 1, 130_000);
        latency.record("[d]", 11, 430_000); // alpha 0.1 ms, beta 0.03 ms: 30 run in 1 ms
        assertThat(p.shortRunBatch(latency.forShape("[d]"))).isEqualTo(30);
        assertThat(p.worthwhileBatch(latency.forShape("[d]"))).isEqualTo(34);
    }

    @Test
    void sloAwareSizingDoesNotSplitABatchThatRunsWithinAMillisecond() {
        DynamicBatcher<String> b = batcher(32, BatchSizing.SLO_AWARE_CAPPED);
        learn(b, SHORT, 10_000, 20_000); // an image model on a CPU: 10 us + 20 us per sample
        arrive(b, SHORT, "r", 20, 50);
        assertThat(b.poll().items()).as("worthwhile at 5, but 20 run in 0.41 ms").hasSize(20);
    }

    // ---- the configuration space: sizing, max batch, queue delay and shapes vary with the traffic

    record ShapeSpec(long alphaNanos, long betaNanos) {}

    @Provide
    Arbitrary<List<ShapeSpec>> shapes() {
        Arbitrary<ShapeSpec> shape = Arbitraries.integers().between(0, 3).flatMap(kind -> Arbitraries.integers()
                .between(1, 20).map(betaMs -> new ShapeSpec(kind == 0 ? 0 : kind * betaMs * MS / 2, betaMs * MS / 4)));
        return shape.list().ofMinSize(1).ofMaxSize(4);
    }

    /**
     * A single execution thread serves a few shapes arriving at fixed gaps, the device below half
     * its capacity; whatever the sizing, max batch and queue delay: every request is answered once,
     * every batch holds one shape and at most the max batch; under SLO-aware sizing, once a shape
     * whose run time is proportional to its batch has run, its batches are no larger than run
     * within a millisecond (one request at a time where one takes longer).
     */
    @Property(tries = 100)
    void everyRequestOnceAndProportionalShapesUnbatchedUnderSloAwareSizing(
            @ForAll("shapes") List<ShapeSpec> specs,
            @ForAll @IntRange(min = 1, max = 64) int maxBatch,
            @ForAll @IntRange(min = 0, max = 5) int queueDelayMs,
            @ForAll BatchSizing sizing,
            @ForAll long seed) {
        Random random = new Random(seed);
        AtomicLong clock = new AtomicLong(1_000 * MS);
        BatchingConfig batching = new BatchingConfig(maxBatch, Duration.ofMillis(queueDelayMs), null, 1_000_000);
        SchedulingConfig sched = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, sizing, sizing == BatchSizing.AIMD ? 500 : 0);
        DynamicBatcher<String> b = new DynamicBatcher<>(m -> batching, m -> sched, t -> 1.0, clock::get);

        // each shape's gap gives it at most 0.4 / shapes of the device at one request per batch
        List<BatchKey> keys = new ArrayList<>();
        long[] gap = new long[specs.size()];
        long[] next = new long[specs.size()];
        for (int s = 0; s < specs.size(); s++) {
            keys.add(new BatchKey(MODEL, "[" + s + "]"));
            ShapeSpec spec = specs.get(s);
            gap[s] = (long) ((spec.alphaNanos() + spec.betaNanos()) * specs.size() / 0.4) + random.nextInt(5) * MS;
            next[s] = clock.get() + random.nextInt((int) (gap[s] / MS) + 1) * MS;
        }
        Set<String> answered = new HashSet<>();
        Map<BatchKey, Integer> batchesOfShape = new HashMap<>();
        int offered = 0;
        long busyUntil = clock.get();
        long end = clock.get() + 5_000 * MS;
        while (clock.get() < end) {
            for (int s = 0; s < specs.size(); s++) {
                while (next[s] <= clock.get()) {
                    String item = s + "#" + offered++;
                    assertThat(b.offer(keys.get(s), item, 1, DynamicBatcher.Request.DEFAULT))
                            .isEqualTo(DynamicBatcher.Admission.ACCEPTED);
                    next[s] += gap[s];
                }
            }
            if (clock.get() >= busyUntil) {
                Batch<String> batch = b.poll();
                if (batch != null) {
                    int s = Integer.parseInt(batch.key().shapeSignature().substring(1, 2));
                    assertThat(batch.samples()).isBetween(1, maxBatch);
                    for (String item : batch.items()) {
                        assertThat(item).startsWith(s + "#");
                        assertThat(answered.add(item)).as("answered twice: " + item).isTrue();
                    }
                    ShapeSpec spec = specs.get(s);
                    boolean ranBefore = batchesOfShape.merge(batch.key(), 1, Integer::sum) > 1;
                    if (sizing == BatchSizing.SLO_AWARE_CAPPED && spec.alphaNanos() == 0 && ranBefore) {
                        // no larger than runs within a millisecond (at least one)
                        long shortRun = Math.max(1, Math.min(maxBatch, CutPolicy.SHORT_RUN_NANOS / spec.betaNanos()));
                        assertThat((long) batch.samples()).as("a proportional shape below capacity")
                                .isLessThanOrEqualTo(shortRun);
                    }
                    long run = spec.alphaNanos() + batch.samples() * spec.betaNanos();
                    busyUntil = clock.get() + run;
                    b.recordBatch(batch.key(), batch.samples(), run);
                    continue;
                }
            }
            long wake = Math.max(busyUntil, b.nextReadyNanos().orElse(Long.MAX_VALUE));
            for (long n : next) {
                wake = Math.min(wake, n);
            }
            clock.set(Math.max(clock.get() + 1, Math.min(wake, end)));
        }
        for (Batch<String> batch : b.flush()) {
            for (String item : batch.items()) {
                assertThat(answered.add(item)).isTrue();
            }
        }
        assertThat(answered).hasSize(offered);
    }
}
