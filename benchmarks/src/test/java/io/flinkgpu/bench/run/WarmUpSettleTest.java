package io.flinkgpu.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.load.CpuSplit;
import io.flinkgpu.bench.load.PointResult;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A warm-up ends when the JIT compilers have settled; a measured point during which they were still
 * busy is marked as compiling.
 */
class WarmUpSettleTest {
    private static PointResult point(double compileSeconds, double seconds) {
        CpuSplit split = new CpuSplit(1000, seconds, 100, 50, Map.of("job_source", 50.0), 10, 0.1, 0, 0,
                compileSeconds, Map.of(), null, null);
        return new PointResult("open", 1000, seconds, 1000, 1000, 0, 0, 0, 1000, 1, 1, 1, 2, 2, 2, 1, 50, 1, true, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, split, List.of(), null, 1000);
    }

    @Test
    void aWarmUpPhaseEndsTheWarmUpOnceTheCompilersUseAtMostATenthOfACore() {
        assertThat(BenchmarkRunner.settled(0.0)).isTrue();
        assertThat(BenchmarkRunner.settled(PointResult.COMPILING_CORES)).isTrue();
        assertThat(BenchmarkRunner.settled(0.11)).isFalse();
        assertThat(BenchmarkRunner.settled(0.9)).isFalse();
        // a JVM that does not report compilation time cannot tell: counted as quiet
        assertThat(BenchmarkRunner.settled(Double.NaN)).isTrue();
        assertThat(BenchmarkRunner.MAX_SETTLE_PHASES).isGreaterThan(1);
    }

    @Test
    void theWarmUpAlternatesLowLoadAndSaturatedPhasesAndEndsOnlyAfterAQuietRound() {
        assertThat(BenchmarkRunner.settleOutstanding(0, 64)).isEqualTo(BenchmarkRunner.LOW_OUTSTANDING).isEqualTo(1);
        assertThat(BenchmarkRunner.settleOutstanding(1, 64)).isEqualTo(64);
        assertThat(BenchmarkRunner.settleOutstanding(2, 64)).isEqualTo(1);
        assertThat(BenchmarkRunner.settleOutstanding(3, 64)).isEqualTo(64);
        // a quiet low-load phase alone is not a round
        assertThat(BenchmarkRunner.roundSettled(1, Double.NaN, 0.0)).isFalse();
        // a round is quiet only if both of its phases are
        assertThat(BenchmarkRunner.roundSettled(2, 0.05, 0.08)).isTrue();
        assertThat(BenchmarkRunner.roundSettled(2, 0.5, 0.05)).isFalse();
        assertThat(BenchmarkRunner.roundSettled(2, 0.05, 0.5)).isFalse();
        // the saturated phase of one round and the low-load phase of the next are not a round
        assertThat(BenchmarkRunner.roundSettled(3, 0.05, 0.05)).isFalse();
        assertThat(BenchmarkRunner.roundSettled(4, 0.05, 0.05)).isTrue();
        // a JVM without compilation time: one round, then on
        assertThat(BenchmarkRunner.roundSettled(2, Double.NaN, Double.NaN)).isTrue();
        assertThat(BenchmarkRunner.MAX_SETTLE_PHASES % 2).isZero();
        assertThat(BenchmarkRunner.roundCores(0.3, 0.05)).isEqualTo(0.3);
        assertThat(BenchmarkRunner.roundCores(0.05, 0.2)).isEqualTo(0.2);
        assertThat(BenchmarkRunner.roundCores(Double.NaN, 0.2)).isEqualTo(0.2);
        assertThat(BenchmarkRunner.roundCores(0.2, Double.NaN)).isEqualTo(0.2);
    }

    @Test
    void aPointDuringWhichTheCompilersWereBusyIsMarkedAsCompiling() {
        PointResult busy = point(2.0, 4.0); // half a core compiling, as the first configuration saw
        assertThat(busy.compilerCores()).isEqualTo(0.5);
        assertThat(busy.compiling()).isTrue();
        assertThat(busy.line()).contains("COMPILING (the JIT busy 0.50 cores)");

        PointResult quiet = point(0.2, 4.0);
        assertThat(quiet.compilerCores()).isEqualTo(0.05);
        assertThat(quiet.compiling()).isFalse();
        assertThat(quiet.line()).doesNotContain("COMPILING");
    }

    @Test
    void aPointWithoutCpuReadingsIsNotMarked() {
        PointResult none = point(1, 4).withCpuPerRequest(null);
        assertThat(none.compilerCores()).isNaN();
        assertThat(none.compiling()).isFalse();
    }
}
