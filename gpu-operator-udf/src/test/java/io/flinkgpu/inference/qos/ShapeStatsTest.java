package io.flinkgpu.inference.qos;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ShapeStatsTest {
    @Test
    void theModelWideFitThatTheMetricsReadIsCurrentWhereEveryShapePredictsWithItsOwn() {
        ShapeStats stats = new ShapeStats();
        for (int b = 1; b <= 8; b++) {
            stats.record("16", b, 1_000_000L + 100_000L * b);
            stats.record("128", b, 5_000_000L + 400_000L * b);
        }
        // each shape's batches predict with the shape's own model; nothing predicted with the model-wide one
        assertThat(stats.forShape("16")).isNotSameAs(stats.overall());
        assertThat(stats.forShape("128").predictNanos(2)).isEqualTo(5_800_000);
        LatencyModel.Fit published = stats.overall().published();
        assertThat(published.betaNanos()).as("fitted over both shapes' batches").isPositive();
        assertThat(published).isEqualTo(new LatencyModel.Fit(stats.overall().alphaNanos(),
                stats.overall().betaNanos()));
    }
}
