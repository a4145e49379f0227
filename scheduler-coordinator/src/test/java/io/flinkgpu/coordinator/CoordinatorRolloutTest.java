package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.VersionSplit.VersionWeight;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.rollout.Rollout;
import io.flinkgpu.coordinator.rollout.RolloutEngine;
import io.flinkgpu.coordinator.rollout.TwoVersions;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The loop with a rollout: every plan carries the splits, a step change is published at once, a restart resumes. */
class CoordinatorRolloutTest {
    static Configuration config() {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.ROLLOUT_MIN_DWELL, Duration.ofSeconds(10));
        c.set(CoordinatorOptions.ROLLOUT_MIN_SAMPLES, 100L);
        // the fake job's batches are of 4 answers: B's 10% of 200 answers/s runs 40 batches in 8 s
        c.set(CoordinatorOptions.ROLLOUT_LATENCY_MIN_BATCHES, 40L);
        c.set(CoordinatorOptions.ROLLOUT_STEPS, List.of(10.0, 50.0, 100.0));
        // the fake job reports no loaded gauge: routes follow the plan at once
        c.set(CoordinatorOptions.WARM_BEFORE_ROUTE, false);
        return c;
    }

    /** {@code seconds} of traffic at 200 answers/s split at B's share, 1% errors each, then a cycle. */
    static Coordinator.CycleResult cycle(Coordinator c, TwoVersions job, int seconds, double bShare) {
        job.advance(seconds * 1000L);
        double total = 200.0 * seconds;
        job.answer("1", total * (1 - bShare), total * (1 - bShare) * 0.01, 1000)
                .answer("2", total * bShare, total * bShare * 0.01, 1000);
        return c.runOnce(false);
    }

    static List<VersionWeight> weights(ControlMessage plan) {
        return plan.versionSplit("m").orElseThrow().versions();
    }

    @Test
    void everyPlanCarriesTheSplitsAStepChangeIsPublishedAtOnceAndARestartResumesAtTheStep(@TempDir Path dir)
            throws Exception {
        TwoVersions job = new TwoVersions("m").answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
        List<ControlMessage> published = new ArrayList<>();
        try (StateStore store = RocksDbStateStore.open(dir)) {
            Coordinator c = new Coordinator(config(), job, published::add, store, new CoordinatorMetrics(), job.clock());
            // started before any plan: a plan with the split and no routes goes out at once
            c.rollouts().start(new RolloutEngine.Request("m", "1", "2", null, null, null, null), job.now());
            assertThat(c.publishVersionSplits("test")).isPresent();
            assertThat(published).singleElement().satisfies(p -> {
                assertThat(p.epoch()).isEqualTo(1);
                assertThat(p.routes()).isEmpty();
                assertThat(weights(p)).containsExactly(new VersionWeight("1", 0.9), new VersionWeight("2", 0.1));
            });
            assertThat(c.publishVersionSplits("again")).as("nothing new").isEmpty();

            // the first placement plan (made for placement reasons) carries the split too
            c.runOnce(false);
            Coordinator.CycleResult placed = cycle(c, job, 2, 0.1);
            assertThat(placed.published()).isTrue();
            assertThat(placed.plan().route("m")).isPresent();
            assertThat(weights(placed.plan())).containsExactly(new VersionWeight("1", 0.9), new VersionWeight("2", 0.1));
            assertThat(placed.plan().reason()).startsWith("initial plan");

            // after the dwell, with 100+ answers of each: promoted, and the 50% split goes out in this cycle
            int before = published.size();
            cycle(c, job, 9, 0.1);
            assertThat(published).hasSizeGreaterThan(before);
            ControlMessage step2 = published.get(published.size() - 1);
            assertThat(weights(step2)).containsExactly(new VersionWeight("1", 0.5), new VersionWeight("2", 0.5));
            assertThat(step2.routes()).isEqualTo(placed.plan().routes());
            assertThat(step2.commands()).isEmpty();
            assertThat(step2.reason()).contains("version splits (rollout)", "step 2 of 3 (50% to 2)");
            assertThat(store.recentDecisions(20)).extracting(Decision::action).contains("ROLLOUT_PROMOTE");
        }

        // a restarted coordinator re-publishes the 50% plan and judges the same step
        List<ControlMessage> republished = new ArrayList<>();
        try (StateStore store = RocksDbStateStore.open(dir)) {
            Coordinator c = new Coordinator(config(), job, republished::add, store, new CoordinatorMetrics(),
                    job.clock());
            assertThat(c.rollouts().get("m").orElseThrow().step()).isEqualTo(1);
            c.resume();
            assertThat(republished).singleElement().satisfies(p -> assertThat(weights(p))
                    .containsExactly(new VersionWeight("1", 0.5), new VersionWeight("2", 0.5)));
            cycle(c, job, 1, 0.5);
            cycle(c, job, 10, 0.5);
            assertThat(c.rollouts().get("m").orElseThrow().state()).isEqualTo(Rollout.State.DONE);
            ControlMessage last = republished.get(republished.size() - 1);
            assertThat(weights(last)).containsExactly(new VersionWeight("2", 1));
            assertThat(store.lastPlan()).contains(last);
            published.addAll(republished.subList(1, republished.size()));
        }
        // the job side applies every plan in order
        ControlPlanState gate = new ControlPlanState();
        published.forEach(p -> assertThat(gate.offer(p)).isEqualTo(ControlPlanState.Outcome.APPLIED));
    }

    @Test
    void withWarmBeforeRouteTheNewVersionIsLoadedWhereTheOldIsBeforeItGetsItsShare(@TempDir Path dir)
            throws Exception {
        Configuration config = config();
        config.set(CoordinatorOptions.WARM_BEFORE_ROUTE, true);
        TwoVersions job = new TwoVersions("m").answer("1", 0, 0, 1000).answer("2", 0, 0, 1000)
                .loaded("1", true).loaded("2", false);
        List<ControlMessage> published = new ArrayList<>();
        try (StateStore store = RocksDbStateStore.open(dir)) {
            Coordinator c = new Coordinator(config, job, published::add, store, new CoordinatorMetrics(), job.clock());
            c.rollouts().start(new RolloutEngine.Request("m", "1", "2", null, null, null, null), job.now());
            c.publishVersionSplits("test");
            assertThat(weights(published.get(0))).containsExactly(new VersionWeight("1", 1));
            assertThat(published.get(0).commands()).isEmpty();

            // the first cycle sends B's LOAD to the subtask where A is loaded, still without a share for B
            cycle(c, job, 1, 0);
            ControlMessage load = published.stream().filter(p -> !p.commands().isEmpty()).findFirst().orElseThrow();
            assertThat(load.commands()).singleElement().satisfies(cmd -> {
                assertThat(cmd.subtask()).isZero();
                assertThat(cmd.action()).isEqualTo(SubtaskCommand.Action.LOAD);
                assertThat(cmd.model()).isEqualTo("m");
                assertThat(cmd.version()).isEqualTo("2");
            });
            assertThat(weights(load)).containsExactly(new VersionWeight("1", 1));
            assertThat(load.reason()).contains("LOAD m:2 on subtask 0");
            assertThat(c.metrics().routesWarming()).as("checked sooner while B warms").isEqualTo(1);

            // not loaded yet: nothing changes; loaded: the 10% step goes out
            cycle(c, job, 1, 0);
            assertThat(weights(published.get(published.size() - 1))).containsExactly(new VersionWeight("1", 1));
            job.loaded("2", true);
            cycle(c, job, 1, 0);
            ControlMessage first = published.get(published.size() - 1);
            assertThat(weights(first)).containsExactly(new VersionWeight("1", 0.9), new VersionWeight("2", 0.1));
            assertThat(first.commands()).isEmpty();
            assertThat(store.recentDecisions(50)).extracting(Decision::action)
                    .contains("ROLLOUT_START", "ROLLOUT_WARM", "ROLLOUT_WARMED");

            // an abort unloads B where the rollout loaded it, in the plan that gives A everything back
            c.rollouts().abort("m", job.now());
            c.publishVersionSplits("abort");
            ControlMessage aborted = published.get(published.size() - 1);
            assertThat(weights(aborted)).containsExactly(new VersionWeight("1", 1));
            assertThat(aborted.commands()).singleElement().satisfies(cmd -> {
                assertThat(cmd.action()).isEqualTo(SubtaskCommand.Action.UNLOAD);
                assertThat(cmd.version()).isEqualTo("2");
            });
        }
        ControlPlanState gate = new ControlPlanState();
        published.forEach(p -> assertThat(gate.offer(p)).isEqualTo(ControlPlanState.Outcome.APPLIED));
    }
}
