package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.groups.Tuple.tuple;

import io.flinkgpu.coordinator.CoordinatorTest.RecordingRealizer;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The loop with {@code coordinator.plan.scale-to-zero-after} = 60 s on a fake cluster (2 subtasks on
 * 2 devices, a cycle every 5 s of virtual time): "busy" always has traffic on subtask 0, "idle" on
 * subtask 1 until it stops.
 */
class ScaleToZeroTest {
    private static Configuration config() {
        Configuration c = CoordinatorTest.config();
        c.set(CoordinatorOptions.SCALE_TO_ZERO_AFTER, Duration.ofSeconds(60));
        return c;
    }

    private static FakeCluster cluster() {
        return new FakeCluster(2, 2).serve("busy", 1000, 100, 100, 0).serve("idle", 1000, 100, 0, 20);
    }

    private static Coordinator.CycleResult cycle(Coordinator c, FakeCluster cluster) {
        cluster.advance(5_000);
        return c.runOnce(false);
    }

    private static List<Decision> decisions(Coordinator c, String action) {
        return c.store().recentDecisions(10_000).stream().filter(d -> d.action().equals(action)).toList();
    }

    /**
     * Runs the first cycles (measure, first plan, one more whose counters grew), then stops the idle
     * model's traffic; it stays loaded (pinned) on subtask 1.
     */
    private static ControlMessage start(Coordinator c, FakeCluster cluster) {
        c.runOnce(false);
        ControlMessage first = cycle(c, cluster).plan();
        assertThat(first.route("idle")).isPresent();
        cycle(c, cluster); // the last collection whose counters grew
        cluster.serve("idle", 1000, 100, 0, 0).loaded("idle", 1);
        return first;
    }

    @Test
    void anIdleModelIsScaledToZeroAfterTheTimeAndComesBackOnDemand() {
        FakeCluster cluster = cluster();
        RecordingRealizer realizer = new RecordingRealizer();
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Coordinator c = new Coordinator(config(), cluster, realizer, new InMemoryStateStore(), metrics, cluster.clock());
        start(c, cluster);

        // 55 s without a request: still planned and routed
        for (int i = 0; i < 11; i++) {
            Coordinator.CycleResult r = cycle(c, cluster);
            assertThat(r.placement().placement().devices("idle")).containsExactly("sim:1");
        }
        assertThat(decisions(c, "SCALE_TO_ZERO")).isEmpty();

        // 60 s: scaled to zero, route removed, UNLOAD sent to its subtask
        Coordinator.CycleResult zero = cycle(c, cluster);
        assertThat(zero.published()).isTrue();
        assertThat(zero.plan().route("idle")).isEmpty();
        assertThat(zero.plan().route("busy")).isPresent();
        assertThat(zero.plan().commands()).extracting(SubtaskCommand::action, SubtaskCommand::model,
                SubtaskCommand::subtask).containsExactly(tuple(SubtaskCommand.Action.UNLOAD, "idle", 1));
        assertThat(zero.plan().reason()).startsWith("placement changed").contains("SCALE_TO_ZERO idle@sim:1");
        assertThat(decisions(c, "SCALE_TO_ZERO")).singleElement().satisfies(d -> {
            assertThat(d.model()).isEqualTo("idle");
            assertThat(d.device()).isEqualTo("sim:1");
            assertThat(d.reason()).startsWith("no request for 60.0 s")
                    .contains("coordinator.plan.scale-to-zero-after = 60.0 s").contains("UNLOAD from sim:1");
        });
        assertThat(c.store().placement().devices("idle")).isEmpty();
        assertThat(metrics.modelsAtZero()).isEqualTo(1);
        assertThat(metrics.prometheusText()).contains("coordinator_models_at_zero 1");

        // at zero, nothing new is published
        cluster.serve("idle", 1000, 100, 0, 0);
        for (int i = 0; i < 6; i++) {
            assertThat(cycle(c, cluster).published()).isFalse();
        }

        // a request: the job's hash routing sends it to subtask 0, whose device cache loads the model and answers it
        cluster.requests("idle", 0, 1).loaded("idle", 0);
        Coordinator.CycleResult back = cycle(c, cluster);
        assertThat(back.published()).isTrue();
        assertThat(back.placement().placement().devices("idle")).containsExactly("sim:0");
        assertThat(back.plan().commands()).extracting(SubtaskCommand::action, SubtaskCommand::model,
                SubtaskCommand::subtask).containsExactly(tuple(SubtaskCommand.Action.LOAD, "idle", 0));
        // loaded there already: routed at once
        assertThat(back.plan().route("idle").orElseThrow().targets()).extracting(RouteTarget::subtask)
                .containsExactly(0);
        assertThat(decisions(c, "LOAD")).filteredOn(d -> "idle".equals(d.model())).last().satisfies(d ->
                assertThat(d.reason()).startsWith("back from zero: 1 request(s) measured on subtask(s) [0] (sim:0)")
                        .contains("where it was served while at zero"));
        assertThat(metrics.modelsAtZero()).isZero();

        // the job applies every plan in order
        ControlPlanState job = new ControlPlanState();
        realizer.published.forEach(p -> assertThat(job.offer(p)).isEqualTo(ControlPlanState.Outcome.APPLIED));
    }

    @Test
    void sparseTrafficKeepsTheModelAndOffTurnsItOff() {
        for (Duration after : List.of(Duration.ofSeconds(60), Duration.ZERO)) {
            FakeCluster cluster = cluster();
            Configuration config = config();
            config.set(CoordinatorOptions.SCALE_TO_ZERO_AFTER, after);
            Coordinator c = new Coordinator(config, cluster, new RecordingRealizer(), new InMemoryStateStore(),
                    new CoordinatorMetrics(), cluster.clock());
            start(c, cluster);
            // a request every 45 s for 15 minutes (60 s with the option off: no traffic at all)
            for (int period = 0; period < 20; period++) {
                if (!after.isZero()) {
                    cluster.requests("idle", 1, 1);
                }
                for (int i = 0; i < 9; i++) {
                    assertThat(cycle(c, cluster).placement().placement().devices("idle")).containsExactly("sim:1");
                }
            }
            assertThat(decisions(c, "SCALE_TO_ZERO")).isEmpty();
        }
    }

    @Test
    void aRestartedCoordinatorNeitherScalesToZeroAtOnceNorStartsTheClockAgain(@TempDir Path dir) {
        FakeCluster cluster = cluster();
        try (StateStore store = RocksDbStateStore.open(dir.resolve("state"))) {
            Coordinator c = new Coordinator(config(), cluster, new RecordingRealizer(), store, new CoordinatorMetrics(),
                    cluster.clock());
            start(c, cluster);
            for (int i = 0; i < 6; i++) {
                cycle(c, cluster); // 30 s idle
            }
        }
        cluster.advance(10_000); // down for 10 s, no request
        try (StateStore store = RocksDbStateStore.open(dir.resolve("state"))) {
            RecordingRealizer realizer = new RecordingRealizer();
            Coordinator c = new Coordinator(config(), cluster, realizer, store, new CoordinatorMetrics(),
                    cluster.clock());
            c.resume();
            // 40 s idle: measuring; 45, 50 and 55 s: still planned
            c.runOnce(false);
            for (int i = 0; i < 3; i++) {
                assertThat(cycle(c, cluster).placement().placement().devices("idle")).containsExactly("sim:1");
            }
            assertThat(decisions(c, "SCALE_TO_ZERO")).isEmpty();
            // 60 s after its last request, counted across the restart: zero
            Coordinator.CycleResult zero = cycle(c, cluster);
            assertThat(zero.plan().route("idle")).isEmpty();
            assertThat(decisions(c, "SCALE_TO_ZERO")).singleElement().extracting(Decision::model).isEqualTo("idle");
            assertThat(zero.plan().routes()).extracting(ModelRoute::model).containsExactly("busy");
        }
    }
}
