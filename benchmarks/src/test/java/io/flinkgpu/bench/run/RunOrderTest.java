package io.flinkgpu.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.sut.Deployments;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** --reverse-order runs the configurations last to first; the report keeps the usual order. */
class RunOrderTest {
    private static BenchmarkRunner.SutConfig config(String name) {
        return new BenchmarkRunner.SutConfig(name, "batching", Deployments.Kind.JOB, Map.of(), name);
    }

    @Test
    void reversedRunsTheListLastToFirstAndLeavesTheListAsItWas() {
        List<BenchmarkRunner.SutConfig> configs = List.of(config("job-batching-default"), config("job-tuned-1"),
                config("job-tuned-2"));
        assertThat(BenchmarkRunner.runOrder(configs, false)).extracting(BenchmarkRunner.SutConfig::name)
                .containsExactly("job-batching-default", "job-tuned-1", "job-tuned-2");
        assertThat(BenchmarkRunner.runOrder(configs, true)).extracting(BenchmarkRunner.SutConfig::name)
                .containsExactly("job-tuned-2", "job-tuned-1", "job-batching-default");
        assertThat(configs).extracting(BenchmarkRunner.SutConfig::name)
                .containsExactly("job-batching-default", "job-tuned-1", "job-tuned-2");
    }
}
