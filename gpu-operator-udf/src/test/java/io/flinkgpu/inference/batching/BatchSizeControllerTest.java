package io.flinkgpu.inference.batching;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BatchSizeControllerTest {
    private static final long MS = 1_000_000;

    private static SchedulingConfig sizing(BatchSizing sizing, double sloMs) {
        return new SchedulingConfig(1, 1, 0, false, Map.of(), 0, sizing, sloMs);
    }

    @Test
    void aimdStartsAtAQuarterGrowsByOneWithinTheSloAndBacksOffByATenth() {
        BatchSizeController c = new BatchSizeController(32, sizing(BatchSizing.AIMD, 10));
        assertThat(c.cap()).isEqualTo(8);

        c.record(5 * MS);
        c.record(10 * MS);
        assertThat(c.cap()).isEqualTo(10);

        c.record(11 * MS);
        assertThat(c.cap()).as("floor(10 * 0.9)").isEqualTo(9);
        for (int i = 0; i < 100; i++) {
            c.record(MS);
        }
        assertThat(c.cap()).as("never above the max batch size").isEqualTo(32);
        for (int i = 0; i < 100; i++) {
            c.record(100 * MS);
        }
        assertThat(c.cap()).as("never below 1").isEqualTo(1);
    }

    @Test
    void withoutAimdOrAnSloTheCapDoesNotMove() {
        BatchSizeController fixed = new BatchSizeController(32, sizing(BatchSizing.FIXED_DELAY, 10));
        fixed.record(100 * MS);
        assertThat(fixed.cap()).isEqualTo(32);

        BatchSizeController noSlo = new BatchSizeController(32, sizing(BatchSizing.AIMD, 0));
        noSlo.record(MS);
        assertThat(noSlo.cap()).isEqualTo(8);
    }
}
