package io.flinkgpu.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.load.ArrivalSchedule;
import org.junit.jupiter.api.Test;

/** Each point's arrival schedule: the same in every run, another one when the sweep retries a rate. */
class PointSeedTest {
    @Test
    void aRetryAtTheSameRateDrawsAnotherScheduleAndEveryRunTheSameOnes() {
        long first = BenchmarkRunner.seed("nlp", "passthrough", 50, 0);
        long retry = BenchmarkRunner.seed("nlp", "passthrough", 50, 1);
        assertThat(BenchmarkRunner.seed("nlp", "passthrough", 50, 0)).isEqualTo(first);
        assertThat(retry).isNotEqualTo(first);
        assertThat(BenchmarkRunner.seed("nlp", "job-batching-default", 50, 0)).isNotEqualTo(first);
        assertThat(BenchmarkRunner.seed("nlp", "passthrough", 71, 0)).isNotEqualTo(first);
        ArrivalSchedule a = ArrivalSchedule.poisson(50, 4_000_000_000L, first);
        ArrivalSchedule b = ArrivalSchedule.poisson(50, 4_000_000_000L, retry);
        assertThat(a.size() == b.size() && a.offset(0) == b.offset(0)).as("different samples").isFalse();
    }
}
