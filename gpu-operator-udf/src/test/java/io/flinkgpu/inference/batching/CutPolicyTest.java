package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.BatchingConfig;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.ShapeStats;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The cut rules on hand-made lane states, without a queue. */
class CutPolicyTest {
    private static final long MS = 1_000_000;
    private static final long NOW = 1_000 * MS;

    record Lane(int requests, int samples, long oldestEnqueuedNanos, long earliestDeadlineNanos, int topLevel)
            implements CutPolicy.LaneState {
        @Override
        public int requestsAt(int level) {
            return level == 1 ? topLevel : 0;
        }
    }

    private static Lane lane(int samples, long waitedNanos) {
        return new Lane(samples, samples, NOW - waitedNanos, Long.MAX_VALUE, samples);
    }

    private static CutPolicy policy(int maxBatch, List<Integer> preferred, SchedulingConfig sched) {
        BatchingConfig batching = new BatchingConfig(maxBatch, Duration.ofMillis(5), preferred, 2);
        return new CutPolicy(batching, sched, new ShapeStats(), new BatchSizeController(maxBatch, sched));
    }

    @Test
    void fixedDelayCutsAFullOrPreferredBatchOrAfterTheQueueDelay() {
        CutPolicy p = policy(8, List.of(2, 4), SchedulingConfig.DEFAULTS);

        assertThat(p.readiness(new Lane(0, 0, NOW, Long.MAX_VALUE, 0), NOW)).isNull();
        assertThat(p.readiness(lane(1, 0), NOW)).isNull();
        assertThat(p.wakeNanos(lane(1, 0))).isEqualTo(NOW + 5 * MS);
        assertThat(p.readiness(lane(1, 5 * MS), NOW)).isEqualTo(Batch.CloseReason.QUEUE_DELAY);
        assertThat(p.readiness(lane(3, 0), NOW)).isEqualTo(Batch.CloseReason.PREFERRED_SIZE);
        assertThat(p.limit(lane(3, 0), Batch.CloseReason.PREFERRED_SIZE, NOW)).as("largest preferred size reached")
                .isEqualTo(2);
        assertThat(p.limit(lane(7, 0), Batch.CloseReason.PREFERRED_SIZE, NOW)).isEqualTo(4);
        assertThat(p.readiness(lane(8, 0), NOW)).isEqualTo(Batch.CloseReason.MAX_SIZE);
        assertThat(p.limit(lane(9, 0), Batch.CloseReason.MAX_SIZE, NOW)).isEqualTo(8);
    }

    @Test
    void aFlushIgnoresTheAimdCap() {
        SchedulingConfig aimd = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.AIMD, 10);
        CutPolicy p = policy(32, List.of(), aimd);

        assertThat(p.readiness(lane(8, 0), NOW)).as("the AIMD cap starts at a quarter").isEqualTo(Batch.CloseReason.MAX_SIZE);
        assertThat(p.limit(lane(20, 0), Batch.CloseReason.MAX_SIZE, NOW)).isEqualTo(8);
        assertThat(p.limit(lane(20, 0), Batch.CloseReason.FLUSH, NOW)).isEqualTo(32);
    }

    @Test
    void sloAwareSizingCutsAtOnceWhileNothingIsKnown() {
        SchedulingConfig slo = new SchedulingConfig(1, 1, 0, false, Map.of(), 0, BatchSizing.SLO_AWARE, 50);
        CutPolicy p = policy(32, List.of(), slo);

        assertThat(p.batchToKeepUp(lane(1, 0), new io.flinkgpu.inference.qos.LatencyModel())).isEqualTo(1);
        assertThat(p.readiness(lane(1, 0), NOW)).isEqualTo(Batch.CloseReason.LOW_LOAD);
        assertThat(p.wakeNanos(lane(1, 0))).as("the queue delay comes before the SLO").isEqualTo(NOW + 5 * MS);
        assertThat(p.wakeNanos(new Lane(1, 1, NOW, NOW + 3 * MS, 1))).as("a queued deadline before the queue delay")
                .isEqualTo(NOW + 3 * MS);
    }
}
