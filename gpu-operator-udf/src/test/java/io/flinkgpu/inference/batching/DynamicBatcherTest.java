package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.model.ModelId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;

class DynamicBatcherTest {
    private static final ModelId MODEL = new ModelId("m", "1");
    private static final ModelId MODEL_V2 = new ModelId("m", "2");
    private static final ModelId OTHER = new ModelId("other", "1");
    private static final BatchKey KEY = new BatchKey(MODEL, "");
    private static final long DELAY_NANOS = Duration.ofMillis(5).toNanos();

    private final AtomicLong now = new AtomicLong(1_000_000L);
    private final Ticker ticker = now::get;

    private static BatchingConfig config(int maxBatchSize, int... preferred) {
        return new BatchingConfig(maxBatchSize, Duration.ofNanos(DELAY_NANOS), Arrays.stream(preferred).boxed().toList(), 2);
    }

    private DynamicBatcher<String> batcher(BatchingConfig config) {
        return new DynamicBatcher<>(m -> config, ticker);
    }

    private void advance(long nanos) {
        now.addAndGet(nanos);
    }

    @Test
    void closesBatchAsSoonAsMaxBatchSizeSamplesAreQueued() {
        DynamicBatcher<String> b = batcher(config(4));
        for (int i = 0; i < 3; i++) {
            b.add(KEY, "r" + i, 1);
        }
        assertThat(b.poll()).as("3 of 4 samples, no time passed").isNull();
        b.add(KEY, "r3", 1);
        b.add(KEY, "r4", 1);

        Batch<String> batch = b.poll();

        assertThat(batch).isNotNull();
        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.MAX_SIZE);
        assertThat(batch.items()).containsExactly("r0", "r1", "r2", "r3");
        assertThat(batch.samples()).isEqualTo(4);
        assertThat(batch.key()).isEqualTo(KEY);
        assertThat(b.queuedRequests()).isEqualTo(1);
        assertThat(b.poll()).as("the remaining single sample is not ready yet").isNull();
    }

    @Test
    void closesBatchWhenOldestRequestWaitedMaxQueueDelayAndNotOneNanosecondBefore() {
        DynamicBatcher<String> b = batcher(config(8));
        b.add(KEY, "first", 1);
        advance(DELAY_NANOS / 2);
        b.add(KEY, "second", 1);
        advance(DELAY_NANOS / 2 - 1);

        assertThat(b.poll()).as("oldest waited max delay - 1ns").isNull();

        advance(1);
        Batch<String> batch = b.poll();

        assertThat(batch).isNotNull();
        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.QUEUE_DELAY);
        assertThat(batch.items()).containsExactly("first", "second");
        assertThat(batch.closedAtNanos()).isEqualTo(now.get());
        assertThat(b.isEmpty()).isTrue();
    }

    @Test
    void zeroQueueDelayMakesEveryRequestReadyImmediately() {
        DynamicBatcher<String> b = new DynamicBatcher<>(m -> new BatchingConfig(8, Duration.ZERO, null, 2), ticker);
        b.add(KEY, "a", 1);

        Batch<String> batch = b.poll();

        assertThat(batch).isNotNull();
        assertThat(batch.items()).containsExactly("a");
    }

    @Test
    void nextReadyNanosIsOldestEnqueueTimePlusMaxDelay() {
        DynamicBatcher<String> b = batcher(config(8));
        assertThat(b.nextReadyNanos()).isEqualTo(OptionalLong.empty());

        long firstAt = now.get();
        b.add(KEY, "a", 1);
        advance(1_000);
        BatchKey otherKey = new BatchKey(OTHER, "");
        b.add(otherKey, "b", 1);

        assertThat(b.nextReadyNanos()).isEqualTo(OptionalLong.of(firstAt + DELAY_NANOS));

        advance(firstAt + DELAY_NANOS - now.get());
        Batch<String> batch = b.poll();
        assertThat(batch.items()).containsExactly("a");
        assertThat(b.nextReadyNanos()).isEqualTo(OptionalLong.of(firstAt + 1_000 + DELAY_NANOS));
    }

    @Test
    void nextReadyNanosIsNowWhenAQueueIsAlreadyFull() {
        DynamicBatcher<String> b = batcher(config(2));
        b.add(KEY, "a", 1);
        b.add(KEY, "b", 1);

        assertThat(b.nextReadyNanos()).isEqualTo(OptionalLong.of(now.get()));
    }

    @Test
    void preferredBatchSizeCutsTheLargestPreferredSizeReached() {
        DynamicBatcher<String> b = batcher(config(16, 8, 4));
        for (int i = 0; i < 3; i++) {
            b.add(KEY, "r" + i, 1);
        }
        assertThat(b.poll()).as("3 samples reach no preferred size").isNull();
        for (int i = 3; i < 10; i++) {
            b.add(KEY, "r" + i, 1);
        }

        Batch<String> batch = b.poll();

        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.PREFERRED_SIZE);
        assertThat(batch.samples()).as("10 queued: 8 is the largest preferred size reached").isEqualTo(8);
        assertThat(batch.items()).containsExactly("r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7");

        Batch<String> rest = b.poll();
        assertThat(rest).as("2 left reach no preferred size and have not waited").isNull();
        assertThat(b.queuedRequests()).isEqualTo(2);
    }

    @Test
    void preferredBatchSizeCutsTheSmallerPreferredSizeWhenOnlyItIsReached() {
        DynamicBatcher<String> b = batcher(config(16, 4, 8));
        for (int i = 0; i < 6; i++) {
            b.add(KEY, "r" + i, 1);
        }

        Batch<String> batch = b.poll();

        assertThat(batch.reason()).isEqualTo(Batch.CloseReason.PREFERRED_SIZE);
        assertThat(batch.samples()).isEqualTo(4);
    }

    @Test
    void neverMixesModelVersionsInOneBatch() {
        DynamicBatcher<String> b = batcher(config(4));
        BatchKey v1 = new BatchKey(MODEL, "");
        BatchKey v2 = new BatchKey(MODEL_V2, "");
        b.add(v1, "v1-a", 1);
        b.add(v2, "v2-a", 1);
        b.add(v1, "v1-b", 1);
        b.add(v2, "v2-b", 1);
        advance(DELAY_NANOS);

        Batch<String> first = b.poll();
        Batch<String> second = b.poll();

        assertThat(first.key()).isEqualTo(v1);
        assertThat(first.items()).containsExactly("v1-a", "v1-b");
        assertThat(second.key()).isEqualTo(v2);
        assertThat(second.items()).containsExactly("v2-a", "v2-b");
        assertThat(b.poll()).isNull();
    }

    @Test
    void neverMixesShapeSignaturesInOneBatch() {
        DynamicBatcher<String> b = batcher(config(2));
        BatchKey short5 = new BatchKey(MODEL, "[5]");
        BatchKey long7 = new BatchKey(MODEL, "[7]");
        b.add(short5, "s1", 1);
        b.add(long7, "l1", 1);
        assertThat(b.poll()).as("one sample per shape: neither queue is full").isNull();
        b.add(long7, "l2", 1);

        Batch<String> batch = b.poll();

        assertThat(batch.key()).isEqualTo(long7);
        assertThat(batch.items()).containsExactly("l1", "l2");
        assertThat(b.queued()).extracting(Batch.Queued::item).containsExactly("s1");
    }

    @Test
    void multiSampleItemsNeverOverflowMaxBatchSize() {
        DynamicBatcher<String> b = batcher(config(8));
        b.add(KEY, "three", 3);
        b.add(KEY, "four", 4);
        b.add(KEY, "two", 2); // 9 samples queued: over the max, so a batch is ready

        Batch<String> first = b.poll();

        assertThat(first.reason()).isEqualTo(Batch.CloseReason.MAX_SIZE);
        assertThat(first.items()).containsExactly("three", "four");
        assertThat(first.samples()).isEqualTo(7);
        assertThat(b.queuedSamples(MODEL)).isEqualTo(2);
        advance(DELAY_NANOS);
        Batch<String> second = b.poll();
        assertThat(second.items()).containsExactly("two");
        assertThat(second.samples()).isEqualTo(2);
    }

    @Test
    void anItemOfExactlyMaxBatchSizeFormsItsOwnBatch() {
        DynamicBatcher<String> b = batcher(config(4));
        b.add(KEY, "one", 1);
        b.add(KEY, "four", 4);

        Batch<String> first = b.poll();
        Batch<String> second = b.poll();

        assertThat(first.items()).as("'four' does not fit next to 'one'").containsExactly("one");
        assertThat(first.samples()).isEqualTo(1);
        assertThat(second).as("the big item alone is a full batch").isNotNull();
        assertThat(second.items()).containsExactly("four");
        assertThat(second.reason()).isEqualTo(Batch.CloseReason.MAX_SIZE);
        assertThat(b.isEmpty()).isTrue();
    }

    @Test
    void backpressuresOnceMaxEnqueuedBatchesOfSamplesAreQueuedAndReleasesAfterPolling() {
        DynamicBatcher<String> b = batcher(config(4)); // maxEnqueuedBatches 2 -> capacity 8 samples
        for (int i = 0; i < 7; i++) {
            b.add(KEY, "r" + i, 1);
        }
        assertThat(b.isBackpressured(MODEL)).isFalse();
        assertThat(b.isBackpressured()).isFalse();

        b.add(KEY, "r7", 1);

        assertThat(b.isBackpressured(MODEL)).isTrue();
        assertThat(b.isBackpressured()).isTrue();
        assertThat(b.isBackpressured(OTHER)).as("another model is not affected").isFalse();

        assertThat(b.poll()).isNotNull();

        assertThat(b.isBackpressured(MODEL)).isFalse();
        assertThat(b.isBackpressured()).isFalse();
        assertThat(b.queuedSamples(MODEL)).isEqualTo(4);
    }

    @Test
    void backpressureCountsAllShapeSignaturesOfOneModel() {
        DynamicBatcher<String> b = batcher(config(4));
        for (int i = 0; i < 4; i++) {
            b.add(new BatchKey(MODEL, "[" + i + "]"), "r" + i, 2);
        }

        assertThat(b.queuedSamples(MODEL)).isEqualTo(8);
        assertThat(b.isBackpressured(MODEL)).isTrue();
    }

    @Test
    void flushEmptiesEveryQueueWithReasonFlush() {
        DynamicBatcher<String> b = batcher(config(3));
        BatchKey other = new BatchKey(OTHER, "");
        for (int i = 0; i < 5; i++) {
            b.add(KEY, "m" + i, 1);
        }
        b.add(other, "o0", 2);

        List<Batch<String>> batches = b.flush();

        assertThat(batches).allSatisfy(batch -> {
            assertThat(batch.reason()).isEqualTo(Batch.CloseReason.FLUSH);
            assertThat(batch.samples()).isLessThanOrEqualTo(3);
        });
        List<String> all = new ArrayList<>();
        batches.forEach(batch -> all.addAll(batch.items()));
        assertThat(all).containsExactlyInAnyOrder("m0", "m1", "m2", "m3", "m4", "o0");
        assertThat(b.isEmpty()).isTrue();
        assertThat(b.queuedRequests()).isZero();
        assertThat(b.queuedSamples(MODEL)).isZero();
        assertThat(b.nextReadyNanos()).isEmpty();
        assertThat(b.poll()).isNull();
        assertThat(b.flush()).isEmpty();
    }

    @Test
    void pollsTheReadyQueueWhoseOldestRequestIsOldestFirst() {
        DynamicBatcher<String> b = batcher(config(2));
        BatchKey a = new BatchKey(MODEL, "");
        BatchKey c = new BatchKey(OTHER, "");
        BatchKey d = new BatchKey(MODEL_V2, "");
        b.add(a, "a0", 1);     // lane a created first, but its oldest is younger below
        b.poll();              // not ready; nothing happens
        advance(DELAY_NANOS);  // a0 is ready by delay
        b.add(a, "a1", 1);
        // a is now full (2 samples) with oldest a0
        advance(10);
        b.add(c, "c0", 2);     // c is full, its oldest is younger than a0
        b.add(d, "d0", 1);     // d not ready

        Batch<String> first = b.poll();
        Batch<String> second = b.poll();

        assertThat(first.items()).containsExactly("a0", "a1");
        assertThat(second.items()).containsExactly("c0");
        assertThat(b.poll()).isNull();
    }

    @Test
    void pollPrefersAnOlderRequestOverAQueueCreatedEarlier() {
        DynamicBatcher<String> b = batcher(config(2));
        BatchKey first = new BatchKey(MODEL, "");
        BatchKey second = new BatchKey(OTHER, "");
        // Restored items carry their original enqueue time: the lane created second holds the
        // oldest request.
        b.add(first, "young", 2, now.get() - 10);
        b.add(second, "old", 2, now.get() - 1_000);

        assertThat(b.poll().items()).containsExactly("old");
        assertThat(b.poll().items()).containsExactly("young");
    }

    @Test
    void queuedReturnsEveryItemQueueByQueueInArrivalOrder() {
        DynamicBatcher<String> b = batcher(config(8));
        BatchKey x = new BatchKey(MODEL, "");
        BatchKey y = new BatchKey(OTHER, "");
        long t0 = now.get();
        b.add(x, "x0", 1);
        advance(1);
        b.add(y, "y0", 2);
        advance(1);
        b.add(x, "x1", 3);
        advance(1);
        b.add(y, "y1", 1);

        List<Batch.Queued<String>> queued = b.queued();

        assertThat(queued).extracting(Batch.Queued::item).containsExactly("x0", "x1", "y0", "y1");
        assertThat(queued).extracting(Batch.Queued::samples).containsExactly(1, 3, 2, 1);
        assertThat(queued).extracting(Batch.Queued::enqueuedNanos).containsExactly(t0, t0 + 2, t0 + 1, t0 + 3);
        assertThat(b.queuedRequests()).isEqualTo(4);
    }

    @Test
    void rejectsAnItemLargerThanMaxBatchSize() {
        DynamicBatcher<String> b = batcher(config(4));

        assertThatThrownBy(() -> b.add(KEY, "huge", 5)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.add(KEY, "empty", 0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(b.isEmpty()).as("a rejected item is not queued").isTrue();
        assertThat(b.queuedSamples(MODEL)).isZero();
    }

    @Test
    void usesEachModelsOwnConfig() {
        Map<ModelId, BatchingConfig> configs = Map.of(MODEL, config(2), OTHER, config(8));
        DynamicBatcher<String> b = new DynamicBatcher<>(configs::get, ticker);
        b.add(new BatchKey(MODEL, ""), "m0", 1);
        b.add(new BatchKey(MODEL, ""), "m1", 1);
        b.add(new BatchKey(OTHER, ""), "o0", 1);
        b.add(new BatchKey(OTHER, ""), "o1", 1);

        Batch<String> batch = b.poll();

        assertThat(batch.items()).containsExactly("m0", "m1");
        assertThat(b.poll()).as("2 of 8 samples for the other model").isNull();
    }

    // ---- property -------------------------------------------------------------------------

    /** One step of a random schedule: add an item of some samples to some key, poll, or wait. */
    record Op(int kind, int keyIndex, int samples, long waitNanos) {}

    @Provide
    Arbitrary<List<Op>> schedules() {
        Arbitrary<Op> add = Arbitraries.integers().between(0, 3).flatMap(k ->
                Arbitraries.integers().between(1, 5).map(s -> new Op(0, k, s, 0)));
        Arbitrary<Op> poll = Arbitraries.just(new Op(1, 0, 0, 0));
        Arbitrary<Op> wait = Arbitraries.longs().between(0, 2 * DELAY_NANOS).map(w -> new Op(2, 0, 0, w));
        return Arbitraries.frequencyOf(
                Tuple.of(5, add), Tuple.of(3, poll), Tuple.of(2, wait))
                .list().ofMaxSize(80);
    }

    @Property(tries = 300)
    void everyAddedItemComesOutExactlyOnceInSingleKeyBatchesNoLargerThanMax(
            @ForAll("schedules") List<Op> ops, @ForAll @IntRange(min = 5, max = 9) int maxBatchSize,
            @ForAll boolean withPreferred) {
        BatchKey[] keys = {
            new BatchKey(MODEL, ""), new BatchKey(MODEL, "[7]"), new BatchKey(MODEL_V2, ""), new BatchKey(OTHER, "")
        };
        BatchingConfig config = new BatchingConfig(maxBatchSize, Duration.ofNanos(DELAY_NANOS),
                withPreferred ? List.of(2, 4) : List.of(), 2);
        Function<ModelId, BatchingConfig> configs = m -> config;
        DynamicBatcher<Integer> b = new DynamicBatcher<>(configs, ticker);
        Map<Integer, BatchKey> keyOf = new HashMap<>();
        Map<Integer, Integer> samplesOf = new HashMap<>();
        List<Integer> out = new ArrayList<>();
        List<Batch<Integer>> batches = new ArrayList<>();
        int next = 0;
        for (Op op : ops) {
            switch (op.kind()) {
                case 0:
                    keyOf.put(next, keys[op.keyIndex()]);
                    samplesOf.put(next, op.samples());
                    b.add(keys[op.keyIndex()], next, op.samples());
                    next++;
                    break;
                case 1:
                    Batch<Integer> batch = b.poll();
                    if (batch != null) {
                        batches.add(batch);
                    }
                    break;
                default:
                    advance(op.waitNanos());
            }
            assertThat(b.queuedRequests()).isEqualTo(next - batches.stream().mapToInt(Batch::size).sum());
        }
        batches.addAll(b.flush());

        for (Batch<Integer> batch : batches) {
            assertThat(batch.entries()).isNotEmpty();
            assertThat(batch.samples()).isLessThanOrEqualTo(maxBatchSize);
            assertThat(batch.samples()).isEqualTo(batch.entries().stream().mapToInt(Batch.Queued::samples).sum());
            for (Batch.Queued<Integer> q : batch.entries()) {
                assertThat(keyOf.get(q.item())).isEqualTo(batch.key());
                assertThat(q.samples()).isEqualTo(samplesOf.get(q.item()));
            }
            out.addAll(batch.items());
        }
        for (BatchKey key : keys) {
            List<Integer> ofKey = out.stream().filter(i -> keyOf.get(i).equals(key)).toList();
            assertThat(ofKey).as("items of one key leave in arrival order").isSorted();
        }
        Set<Integer> unique = new HashSet<>(out);
        assertThat(out).hasSize(next);
        assertThat(unique).hasSize(next);
        assertThat(b.isEmpty()).isTrue();
        for (ModelId m : List.of(MODEL, MODEL_V2, OTHER)) {
            assertThat(b.queuedSamples(m)).isZero();
        }
    }

    @Test
    void aMinimumRunPerSampleCutsOnlyTheQueuesOfModelsThatLongAndNeverOneWithoutData() {
        DynamicBatcher<String> b = batcher(config(4));
        BatchKey slow = KEY;
        BatchKey fast = new BatchKey(OTHER, "");
        BatchKey unknown = new BatchKey(MODEL_V2, "");
        b.recordBatch(slow, 1, 8_000_000); // 8 ms for one sample
        b.recordBatch(slow, 4, 20_000_000); // 5 ms per sample at 4
        b.recordBatch(fast, 1, 50_000);
        b.add(fast, "f", 1);
        b.add(unknown, "u", 1);
        advance(DELAY_NANOS); // both ready
        assertThat(b.nextReadyNanos(1_000_000)).as("only their deadlines count, and they have none").isEmpty();
        assertThat(b.poll(1_000_000)).as("neither model runs 1 ms per sample").isNull();
        for (int i = 0; i < 4; i++) {
            b.add(slow, "s" + i, 1);
        }
        assertThat(b.nextReadyNanos(1_000_000)).isEqualTo(OptionalLong.of(now.get()));
        Batch<String> batch = b.poll(1_000_000);
        assertThat(batch.key()).isEqualTo(slow);
        assertThat(batch.items()).containsExactly("s0", "s1", "s2", "s3");
        // 5 ms per sample at the batch's size is below 6 ms
        b.add(slow, "s4", 1);
        b.add(slow, "s5", 1);
        b.add(slow, "s6", 1);
        b.add(slow, "s7", 1);
        assertThat(b.poll(6_000_000)).isNull();
        // 0: every queue, as poll()
        List<String> rest = new ArrayList<>();
        for (Batch<String> next = b.poll(0); next != null; next = b.poll(0)) {
            rest.addAll(next.items());
        }
        assertThat(rest).containsExactlyInAnyOrder("f", "u", "s4", "s5", "s6", "s7");
    }
}
