package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.CoordinatorTest.RecordingRealizer;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** More models than model slots: the plan places what fits and counts the rest on a gauge. */
class UnplacedModelsTest {
    private static Coordinator.CycleResult cycle(Coordinator c, FakeCluster cluster) {
        cluster.advance(5_000);
        return c.runOnce(false);
    }

    @Test
    void modelsWithoutASlotAreCountedAndTheGaugeFallsWhenSlotsAreEnough() {
        // three models with traffic on two devices of one slot each
        FakeCluster cluster = new FakeCluster(2, 2).serve("a", 1000, 100, 50, 0).serve("b", 1000, 100, 0, 40)
                .serve("c", 1000, 100, 30, 0);
        Configuration config = CoordinatorTest.config();
        config.set(CoordinatorOptions.MAX_MODELS_PER_DEVICE, 1);
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Coordinator c = new Coordinator(config, cluster, new RecordingRealizer(), new InMemoryStateStore(), metrics,
                cluster.clock());
        c.runOnce(false);
        Coordinator.CycleResult r = cycle(c, cluster);
        assertThat(r.placement().placement().devicesByModel()).hasSize(2);
        assertThat(c.store().recentDecisions(100)).extracting(Decision::action).contains("UNPLACED");
        assertThat(metrics.modelsUnplaced()).isEqualTo(1);
        assertThat(metrics.prometheusText()).contains("coordinator_models_unplaced 1");

        // the same traffic with two slots per device: everything is placed
        config.set(CoordinatorOptions.MAX_MODELS_PER_DEVICE, 2);
        CoordinatorMetrics roomy = new CoordinatorMetrics();
        Coordinator d = new Coordinator(config, cluster, new RecordingRealizer(), new InMemoryStateStore(), roomy,
                cluster.clock());
        d.runOnce(false);
        cycle(d, cluster);
        assertThat(roomy.modelsUnplaced()).isZero();
        assertThat(roomy.prometheusText()).contains("coordinator_models_unplaced 0");
    }
}
