package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.LevelPolicy;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TimeoutAction;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The queue on its own: what a batch takes, and expiry, without cut rules. */
class RequestQueueTest {
    private static final BatchKey KEY = new BatchKey(new ModelId("m", "1"), "");
    private static final SchedulingConfig TWO_LEVELS =
            new SchedulingConfig(2, 2, 0, false, Map.of(1, new LevelPolicy(TimeoutAction.REJECT, 1, 0)), 0,
                    BatchSizing.FIXED_DELAY, 0);

    private final RequestQueue<String> queue = new RequestQueue<>(t -> 1.0);
    private final RequestQueue.ModelQueue model = new RequestQueue.ModelQueue(TWO_LEVELS);

    private RequestQueue.Lane<String> lane() {
        return queue.lanes().iterator().next();
    }

    private List<String> take(int limit) {
        List<Batch.Queued<String>> out = new ArrayList<>();
        queue.take(lane(), limit, out);
        return out.stream().map(Batch.Queued::item).toList();
    }

    @Test
    void aBatchTakesTheHigherLevelFirstUpToTheLimitAndTheLaneClosesWhenEmpty() {
        queue.add(KEY, model, "low", 1, 2, "t", Long.MAX_VALUE, 0);
        queue.add(KEY, model, "high", 1, 1, "t", Long.MAX_VALUE, 1);
        queue.add(KEY, model, "big", 3, 2, "t", Long.MAX_VALUE, 2);
        assertThat(lane().samples()).isEqualTo(5);
        assertThat(model.queuedRequests(2)).isEqualTo(2);

        assertThat(take(2)).containsExactly("high", "low");
        assertThat(take(2)).as("a first request larger than the limit still goes").containsExactly("big");
        assertThat(queue.lanes()).isEmpty();
        assertThat(queue.queuedRequests()).isZero();
        assertThat(model.queuedSamples()).isZero();
    }

    @Test
    void aPassedDeadlineUnderRejectDropsTheRequest() {
        queue.add(KEY, model, "late", 1, 1, "t", 10, 0);
        queue.add(KEY, model, "patient", 1, 2, "t", Long.MAX_VALUE, 0);
        assertThat(lane().earliestDeadlineNanos()).isEqualTo(10);
        assertThat(model.isFull(1, "t")).as("max_queue_size 1 at level 1").isTrue();
        assertThat(model.isFull(1, "other")).isFalse();

        queue.expireAndAge(10);

        assertThat(queue.takeExpired()).extracting(Batch.Queued::item).containsExactly("late");
        assertThat(queue.takeExpired()).isEmpty();
        assertThat(queue.queued()).extracting(Batch.Queued::item).containsExactly("patient");
        assertThat(model.isFull(1, "t")).isFalse();
    }
}
