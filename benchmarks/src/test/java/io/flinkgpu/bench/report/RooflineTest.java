package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.sut.Ceiling;
import java.util.List;
import org.junit.jupiter.api.Test;

class RooflineTest {
    private static final List<Ceiling.Point> CEILING = List.of(
            new Ceiling.Point("raw", 8, 8000, 1, 1, 10, 0),
            new Ceiling.Point("onnxmodel", 8, 1, 1, 1, 10, 0), // another path: ignored
            new Ceiling.Point("raw", 1, 1000, 1, 1, 10, 0),
            new Ceiling.Point("raw", 32, 10000, 1, 1, 10, 0));

    @Test
    void theCeilingIsInterpolatedLinearlyBetweenMeasuredBatchSizesAndClampedAtTheEnds() {
        assertThat(Roofline.ceilingAt(CEILING, 1)).isEqualTo(1000);
        assertThat(Roofline.ceilingAt(CEILING, 8)).isEqualTo(8000);
        assertThat(Roofline.ceilingAt(CEILING, 4.5)).isCloseTo(4500, within(1e-9));
        assertThat(Roofline.ceilingAt(CEILING, 20)).isCloseTo(9000, within(1e-9));
        assertThat(Roofline.ceilingAt(CEILING, 0.5)).isEqualTo(1000);
        assertThat(Roofline.ceilingAt(CEILING, 128)).isEqualTo(10000);
        assertThat(Roofline.ceilingAt(CEILING, Double.NaN)).isEqualTo(1000); // no batch reported: batch 1
        assertThat(Roofline.ceilingAt(List.of(new Ceiling.Point("onnxmodel", 1, 5, 1, 1, 1, 0)), 1)).isNaN();
    }

    @Test
    void theBoundAddsThePipelinesAndInferencesCostPerRequest() {
        // 1/2000 + 1/2000 s per request: 1000 req/s
        assertThat(Roofline.bound(2000, 2000)).isCloseTo(1000, within(1e-9));
        assertThat(Roofline.bound(3000, 6000)).isCloseTo(2000, within(1e-9));
        // always below both
        assertThat(Roofline.bound(10_000, 4500)).isLessThan(4500);
        assertThat(Roofline.bound(0, 4500)).isNaN();
        assertThat(Roofline.bound(4500, Double.NaN)).isNaN();
        assertThat(Roofline.bound(Double.POSITIVE_INFINITY, 4500)).isNaN();
    }

    private static PointResult point(String mode, double rate, boolean pass) {
        return new PointResult(mode, rate, 1, 10, 10, 0, 0, 0, rate, 1, 1, 1, 1, 1, 1, 1, 50, 1, pass, true, List.of(),
                1, 0, 0, List.of(), 1, 0, null, List.of(), null, Double.NaN);
    }

    @Test
    void aGoodputIsBracketedByTheLowestRateAboveItThatFailed() {
        // the grid walked 1000, 2000, 4000 (failed twice), then bisected at 2828 (failed)
        List<PointResult> points = List.of(point("open", 1000, true), point("open", 2000, true),
                point("open", 4000, false), point("open", 4000, false), point("open", 2828, false),
                point("closed", 2500, false)); // a closed-loop point is no rate
        assertThat(Roofline.firstFailAbove(points, 2000)).isEqualTo(2828);
        // a failure below goodput (a retried point that then passed) does not bound it
        assertThat(Roofline.firstFailAbove(List.of(point("open", 1000, false), point("open", 1000, true),
                point("open", 2000, true)), 2000)).isInfinite();
    }

    @Test
    void theSharesRangeFollowsBothSweepsResolution() {
        // job in [3000, 4000), passthrough in [6000, 8000), ceiling 12000
        double[] range = Roofline.shareRange(3000, 4000, 6000, 8000, 12_000);
        assertThat(range[0]).isCloseTo(3000 / Roofline.bound(8000, 12_000), within(1e-9)); // 0.625
        assertThat(range[1]).isCloseTo(4000 / Roofline.bound(6000, 12_000), within(1e-9)); // 1.0
        assertThat(range[0]).isLessThan(3000 / Roofline.bound(6000, 12_000)).isLessThan(range[1]);
        // a passthrough that never failed: R is at most the ceiling itself
        assertThat(Roofline.shareRange(3000, 4000, 6000, Double.POSITIVE_INFINITY, 12_000)[0])
                .isCloseTo(3000 / 12_000.0, within(1e-9));
        // a job that never failed: no upper end
        assertThat(Roofline.shareRange(3000, Double.POSITIVE_INFINITY, 6000, 8000, 12_000)[1]).isInfinite();
        assertThat(Roofline.shareRange(3000, 4000, 0, 8000, 12_000)).containsOnly(Double.NaN);
    }

    @Test
    void aJobRunningSeveralBatchesAtOnceIsBoundedBySeveralCeilings() {
        String key = "inference.execution-threads";
        // unset: what the operator sizes from the CPU device, the cores less one over the intra-op threads
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 2)).isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 4)).isEqualTo(3);
        assertThat(Targets.parallelSessions(java.util.Map.of("inference.device.intra-op-threads", "2"),
                java.util.Map.of(), 4)).isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(key, "2"), java.util.Map.of(), 2)).isEqualTo(2);
        // the configuration's own option wins over the run's -D option; never more than the cores
        assertThat(Targets.parallelSessions(java.util.Map.of(key, "1"), java.util.Map.of(key, "4"), 8)).isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(key, "4"), 8)).isEqualTo(4);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(key, "4"), 2)).isEqualTo(2);
        assertThat(Targets.parallelSessions(java.util.Map.of(key, "x"), java.util.Map.of(), 2)).isEqualTo(1);
    }

    @Test
    void aModelOfLongBatchesAlsoCountsTheCoreKeptForTheTask() {
        long ms = 1_000_000;
        // unset on 2 cores: one thread, and the core kept for the task for batches of at least 1 ms per sample
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 2, 5 * ms)).isEqualTo(2);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 2, ms / 50)).isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 4, 5 * ms)).isEqualTo(4);
        // the threshold as configured; 0 ms: any batch
        String threshold = "inference.execution-threads.reserved-core-min-sample-time";
        assertThat(Targets.parallelSessions(java.util.Map.of(threshold, "10 ms"), java.util.Map.of(), 2, 5 * ms))
                .isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(threshold, "0 ms"), 2, 0)).isEqualTo(2);
        // a set thread count is never lent the core; one core has none to lend
        assertThat(Targets.parallelSessions(java.util.Map.of("inference.execution-threads", "1"), java.util.Map.of(), 2,
                5 * ms)).isEqualTo(1);
        assertThat(Targets.parallelSessions(java.util.Map.of(), java.util.Map.of(), 1, 5 * ms)).isEqualTo(1);
    }
}
