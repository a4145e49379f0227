package io.flinkgpu.coordinator.rollout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import org.junit.jupiter.api.Test;

/** The statistics the rollout engine judges by. */
class VersionComparisonTest {
    @Test
    void theNormalTailMatchesTheTables() {
        assertThat(VersionComparison.upperTail(0)).isCloseTo(0.5, within(1e-7));
        assertThat(VersionComparison.upperTail(1.6448536)).isCloseTo(0.05, within(1e-6));
        assertThat(VersionComparison.upperTail(2.3263479)).isCloseTo(0.01, within(1e-7));
        assertThat(VersionComparison.upperTail(-1.959964)).isCloseTo(0.975, within(1e-6));
        // far tails keep their relative precision (1 - Phi(6) = 9.8659e-10)
        assertThat(VersionComparison.upperTail(6) / 9.8658765e-10).isCloseTo(1, within(1e-5));
    }

    @Test
    void theZScoreIsTheTwoProportionStatisticWithPooledVariance() {
        // 10/1000 vs 25/1000: pooled 0.0175, sd sqrt(0.0175 x 0.9825 x 0.002) = 0.0058643
        assertThat(VersionComparison.zScore(1000, 10, 1000, 25)).isCloseTo(2.5579, within(1e-3));
        assertThat(VersionComparison.zScore(1000, 25, 1000, 10)).isCloseTo(-2.5579, within(1e-3));
        // no failure (or only failures) on either side: equal rates
        assertThat(VersionComparison.zScore(1000, 0, 50, 0)).isZero();
        assertThat(VersionComparison.zScore(1000, 1000, 50, 50)).isZero();
    }

    @Test
    void theTestIsOneSided() {
        // B worse at p = 0.0053 < 0.01
        VersionComparison.Verdict worse = VersionComparison.compare("1", "2", 1000, 10, 1000, 25, 1000, 1000, 0.01, 0.2);
        assertThat(worse.worse()).isTrue();
        assertThat(worse.errorsWorse()).isTrue();
        assertThat(worse.pValue()).isCloseTo(0.00527, within(1e-4));
        // the same difference the other way round: B better, never "worse"
        VersionComparison.Verdict better = VersionComparison.compare("1", "2", 1000, 25, 1000, 10, 1000, 1000, 0.01, 0.2);
        assertThat(better.worse()).isFalse();
        assertThat(better.pValue()).isGreaterThan(0.99);
        // a difference the samples cannot tell from chance: 2/100 vs 1/100
        assertThat(VersionComparison.compare("1", "2", 100, 1, 100, 2, 1000, 1000, 0.01, 0.2).worse()).isFalse();
        // at a stricter level the first one passes
        assertThat(VersionComparison.compare("1", "2", 1000, 10, 1000, 25, 1000, 1000, 0.001, 0.2).worse()).isFalse();
    }

    @Test
    void latencyIsWorseBeyondTheToleranceAndNotComparedWithoutData() {
        assertThat(VersionComparison.compare("1", "2", 100, 0, 100, 0, 1000, 1200, 0.01, 0.2).latencyWorse()).isFalse();
        VersionComparison.Verdict slow = VersionComparison.compare("1", "2", 100, 0, 100, 0, 1000, 1201, 0.01, 0.2);
        assertThat(slow.latencyWorse()).isTrue();
        assertThat(slow.worse()).isTrue();
        assertThat(slow.errorsWorse()).isFalse();
        VersionComparison.Verdict unknown = VersionComparison.compare("1", "2", 100, 0, 100, 0, Double.NaN, 5000, 0.01,
                0.2);
        assertThat(unknown.worse()).isFalse();
        assertThat(unknown.reason()).contains("p99 not compared (1 has no batch latency)");
    }

    @Test
    void everyLatencyReadingIsJudgedAndASkippedOneSaysWhy() {
        java.util.List<VersionComparison.Latency> readings = java.util.List.of(
                new VersionComparison.Latency("batch time at 2 samples (latency fit)", 9_000, 10_000, null),
                new VersionComparison.Latency("service p99", 1_000, 5_000, "2's batches are the larger"));
        VersionComparison.Verdict verdict = VersionComparison.compare("1", "2", 100, 0, 100, 0, 0.01, 0.2, readings);
        assertThat(verdict.worse()).isFalse();
        assertThat(verdict.reason()).contains("batch time at 2 samples (latency fit) 2 10000 us <= 1 9000 us x 1.20",
                "service p99 not compared (2's batches are the larger)");
        VersionComparison.Verdict slow = VersionComparison.compare("1", "2", 100, 0, 100, 0, 0.01, 0.2,
                java.util.List.of(readings.get(0), new VersionComparison.Latency("service p99", 1_000, 5_000, null)));
        assertThat(slow.latencyWorse()).as("one reading beyond the tolerance is enough").isTrue();
        assertThat(slow.reason()).contains("service p99 2 5000 us > 1 1000 us x 1.20 = 1200 us");
    }

    @Test
    void theExactTestIsFishersOneSidedTail() {
        // Fisher's tea-tasting table: 4 of 4 (and 3 or more of 4) errors in B against A's 0 (1) of 4
        assertThat(VersionComparison.exactUpperTail(4, 0, 4, 4)).isCloseTo(1.0 / 70, within(1e-12));
        assertThat(VersionComparison.exactUpperTail(4, 1, 4, 3)).isCloseTo(17.0 / 70, within(1e-12));
        assertThat(VersionComparison.exactUpperTail(3, 0, 3, 3)).isCloseTo(1.0 / 20, within(1e-12));
        assertThat(VersionComparison.exactUpperTail(1000, 10, 10, 0)).isEqualTo(1);
        // one error in B's first answer among A's 99 clean ones: 1 in 100
        assertThat(VersionComparison.exactUpperTail(99, 0, 1, 1)).isCloseTo(0.01, within(1e-12));
    }
}
