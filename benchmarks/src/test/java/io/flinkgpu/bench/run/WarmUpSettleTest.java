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
                compileSeconds);
        return new PointResult("open", 1000, seconds, 1000, 1000, 0, 0, 0, 1000, 1, 1, 1, 2, 2, 2, 1, 50, 1, true, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, split, List.of(), null, 1000);
    }

    @Test
    void aWarmUpPhaseEndsTheWarmUpOnceTheCompilersUseAtMostATenthOfACore() {
        assertThat(BenchmarkRunner.settled(0.0)).isTrue();
        assertThat(BenchmarkRunner.settled(PointResult.COMPILING_CORES)).isTrue();
        assertThat(BenchmarkRunner.settled(0.11)).isFalse();
        assertThat(BenchmarkRunner.settled(0.9)).isFalse();
        // a JVM that does not report compilation time: one phase, then on
        assertThat(BenchmarkRunner.settled(Double.NaN)).isTrue();
        assertThat(BenchmarkRunner.MAX_SETTLE_PHASES).isGreaterThan(1);
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
