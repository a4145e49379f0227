package io.flinkgpu.coordinator.rollout;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.SubtaskCommand.Action;
import io.flinkgpu.contract.control.VersionSplit.VersionWeight;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.rollout.Rollout.AfterShadow;
import io.flinkgpu.coordinator.rollout.Rollout.Mode;
import io.flinkgpu.coordinator.rollout.Rollout.Phase;
import io.flinkgpu.coordinator.rollout.Rollout.State;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The warming phase: B is loaded where A is before it gets a share or shadow copies, on three
 * subtasks whose {@code loaded} gauges the test sets (A on 0 and 1, nothing on 2).
 */
class RolloutWarmingTest {
    static final String M = "m";
    static final RolloutSettings WARMING = new RolloutSettings(Duration.ofSeconds(10), 100, 0.01, 0.2, 40,
            Duration.ofMinutes(10), 5, 10, 1e-4, RolloutSettings.STEPS, 0.2, AfterShadow.CANARY, Duration.ofSeconds(30));

    StateStore store;
    RolloutEngine engine;
    long now = 1_000_000;

    @BeforeEach
    void setUp() {
        store = new InMemoryStateStore();
        engine = new RolloutEngine(store, WARMING);
    }

    /** A collection {@code seconds} later: A loaded on {@code aOn}, B on {@code bOn}; no answers yet. */
    boolean collect(int seconds, Set<Integer> aOn, Set<Integer> bOn) {
        now += seconds * 1000L;
        List<SubtaskSample> subtasks = new ArrayList<>();
        for (int s = 0; s < 3; s++) {
            List<ModelSample> models = List.of(sample("1", aOn.contains(s)), sample("2", bOn.contains(s)));
            subtasks.add(new SubtaskSample(s, "sim:" + s, 0, 8.0 * (1L << 30), 0.3, 300, 0, 0, models));
        }
        return engine.advance(new MetricSnapshot(now, "job", "vertex", 3, subtasks), now);
    }

    static ModelSample sample(String version, boolean loaded) {
        return ModelSample.builder(M, version).counts(0, 0, 0).queuedSamples(0).batchSizeMean(4)
                .inferenceLatencyUsMean(500).queueLatencyUsP99(1000).latencyModel(500, 100).loaded(loaded ? 1 : 0)
                .errors(0).inferenceLatencyUsP99(1000).build();
    }

    Rollout rollout() {
        return engine.get(M).orElseThrow();
    }

    List<String> actions() {
        return store.recentDecisions(100).stream().map(Decision::action).toList();
    }

    static RolloutEngine.Request request(Mode mode) {
        return new RolloutEngine.Request(M, "1", "2", mode, null, null, null);
    }

    @Test
    void bGetsNoTrafficUntilItIsReportedLoadedWhereAIs() throws Exception {
        Rollout started = engine.start(request(Mode.CANARY), now);
        assertThat(started.phase()).isEqualTo(Phase.WARMING);
        assertThat(started.toShare()).isZero();
        assertThat(engine.splits().get(0).versions()).containsExactly(new VersionWeight("1", 1));
        assertThat(engine.splits().get(0).shadow()).isNull();
        assertThat(engine.splits().get(0).reason()).isEqualTo("rollout 1 -> 2: warming 2 before its first step");
        assertThat(engine.warming()).isEqualTo(1);
        assertThat(engine.takeCommands()).as("no collection yet: where A is, is not known").isEmpty();

        // the first collection: B's LOAD goes to the subtasks reporting A loaded, and nowhere else
        assertThat(collect(1, Set.of(0, 1), Set.of())).isTrue();
        assertThat(engine.takeCommands()).containsExactly(
                new SubtaskCommand(0, Action.LOAD, M, "2", "rollout 1 -> 2: warm 2 before its first requests"),
                new SubtaskCommand(1, Action.LOAD, M, "2", "rollout 1 -> 2: warm 2 before its first requests"));
        assertThat(engine.takeCommands()).as("taken once").isEmpty();
        assertThat(rollout().phase()).isEqualTo(Phase.WARMING);
        assertThat(rollout().warmedOn()).containsExactly(0, 1);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("LOAD 2 on subtask(s) [0, 1], where 1 serves");

        // loaded on one of the two: still no traffic, and no LOAD again
        assertThat(collect(2, Set.of(0, 1), Set.of(0))).isFalse();
        assertThat(rollout().phase()).isEqualTo(Phase.WARMING);
        assertThat(rollout().reason()).contains("not yet reported loaded on [1]");
        assertThat(engine.takeCommands()).isEmpty();

        // loaded on both: the first canary step begins, its dwell counted from now
        assertThat(collect(2, Set.of(0, 1), Set.of(0, 1))).isTrue();
        Rollout r = rollout();
        assertThat(r.phase()).isEqualTo(Phase.CANARY);
        assertThat(r.step()).isZero();
        assertThat(r.stepStartedAtMillis()).isEqualTo(now);
        assertThat(r.baseline()).isNull();
        assertThat(engine.splits().get(0).versions())
                .containsExactly(new VersionWeight("1", 0.95), new VersionWeight("2", 0.05));
        assertThat(engine.warming()).isZero();
        assertThat(actions()).containsExactly("ROLLOUT_START", "ROLLOUT_WARM", "ROLLOUT_WARMED");
        assertThat(store.recentDecisions(1).get(0).reason())
                .contains("2 reported loaded on [0, 1] after 5.0 s", "begins rollout 1 -> 2: step 1 of 4 (5% to 2)");
    }

    @Test
    void afterTheWarmTimeoutBGetsTrafficAnyway() throws Exception {
        engine.start(request(Mode.CANARY), now);
        collect(1, Set.of(0, 1), Set.of());
        assertThat(collect(28, Set.of(0, 1), Set.of(0))).as("29 s of 30").isFalse();
        assertThat(rollout().phase()).isEqualTo(Phase.WARMING);
        assertThat(collect(1, Set.of(0, 1), Set.of(0))).isTrue();
        assertThat(rollout().phase()).isEqualTo(Phase.CANARY);
        assertThat(rollout().toShare()).isEqualTo(0.05);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("2 not reported loaded on [1] within 30.0 s",
                "loads on its first request there");
    }

    @Test
    void whereNoSubtaskReportsALoadedThereIsNothingToWarmAlongside() throws Exception {
        engine.start(request(Mode.CANARY), now);
        assertThat(collect(1, Set.of(), Set.of())).isTrue();
        assertThat(engine.takeCommands()).isEmpty();
        assertThat(rollout().phase()).isEqualTo(Phase.CANARY);
        assertThat(rollout().warmedOn()).isEmpty();
        assertThat(store.recentDecisions(1).get(0).reason()).contains("no subtask reports 1 loaded or serving");
    }

    @Test
    void aSubtaskWhereAAnsweredIsWarmedEvenWhereItsLoadedGaugeLags() throws Exception {
        engine.start(request(Mode.CANARY), now);
        now += 1000;
        List<SubtaskSample> subtasks = List.of(
                new SubtaskSample(0, "sim:0", 0, 1e9, 0.3, 300, 0, 0, List.of(sample("1", true))),
                // answered 40 requests, gauge not caught up yet
                new SubtaskSample(1, "sim:1", 0, 1e9, 0.3, 300, 0, 0, List.of(ModelSample.builder(M, "1")
                        .counts(40, 40, 10).queuedSamples(0).batchSizeMean(4).inferenceLatencyUsMean(500)
                        .queueLatencyUsP99(1000).latencyModel(500, 100).errors(0).inferenceLatencyUsP99(1000).build())),
                new SubtaskSample(2, "sim:2", 0, 1e9, 0.3, 300, 0, 0, List.of(sample("1", false))));
        assertThat(engine.advance(new MetricSnapshot(now, "job", "vertex", 3, subtasks), now)).isTrue();
        assertThat(engine.takeCommands()).extracting(SubtaskCommand::subtask).containsExactly(0, 1);
    }

    @Test
    void whileTheJobReportsNothingOfATheRolloutWaitsForIt() throws Exception {
        engine.start(request(Mode.CANARY), now);
        now += 1000;
        MetricSnapshot empty = new MetricSnapshot(now, "job", "vertex", 1,
                List.of(new SubtaskSample(0, "sim:0", 0, 1e9, 0.3, 300, 0, 0, List.of())));
        assertThat(engine.advance(empty, now)).isFalse();
        assertThat(rollout().phase()).isEqualTo(Phase.WARMING);
        assertThat(rollout().warmedOn()).isNull();
        assertThat(rollout().reason()).contains("waiting for the job to report 1");
        // A shows up loaded: B's LOAD goes there
        assertThat(collect(2, Set.of(1), Set.of())).isTrue();
        assertThat(engine.takeCommands()).extracting(SubtaskCommand::subtask).containsExactly(1);
        // and with nothing reported within the warm timeout, the rollout begins
        engine.abort(M, now);
        engine.forget(M, now);
        engine.start(request(Mode.CANARY), now);
        now += 30_000;
        assertThat(engine.advance(new MetricSnapshot(now, "job", "vertex", 1, List.of()), now)).isTrue();
        assertThat(rollout().phase()).isEqualTo(Phase.CANARY);
    }

    @Test
    void aBAlreadyLoadedEverywhereIsPinnedAndGetsItsShareInTheSameCollection() throws Exception {
        engine.start(request(Mode.CANARY), now);
        assertThat(collect(1, Set.of(0, 1), Set.of(0, 1, 2))).isTrue();
        assertThat(engine.takeCommands()).extracting(SubtaskCommand::subtask).containsExactly(0, 1);
        assertThat(rollout().phase()).isEqualTo(Phase.CANARY);
        assertThat(actions()).containsExactly("ROLLOUT_START", "ROLLOUT_WARM", "ROLLOUT_WARMED");
    }

    @Test
    void aShadowRolloutCopiesRequestsToBOnlyOnceItIsWarm() throws Exception {
        engine.start(request(Mode.SHADOW), now);
        assertThat(engine.splits().get(0).shadow()).isNull();
        assertThat(engine.splits().get(0).reason()).isEqualTo("rollout 1 -> 2: warming 2 before its first shadow copies");
        collect(1, Set.of(1), Set.of());
        assertThat(engine.takeCommands()).extracting(SubtaskCommand::subtask).containsExactly(1);
        assertThat(engine.splits().get(0).shadow()).isNull();
        collect(1, Set.of(1), Set.of(1));
        assertThat(rollout().phase()).isEqualTo(Phase.SHADOW);
        assertThat(engine.splits().get(0).shadow()).isEqualTo("2");
        assertThat(engine.splits().get(0).versions()).containsExactly(new VersionWeight("1", 1));
    }

    @Test
    void anAbortWhileWarmingUnloadsBWhereItWasWarmed() throws Exception {
        engine.start(request(Mode.CANARY), now);
        collect(1, Set.of(0, 2), Set.of());
        engine.takeCommands();
        Rollout aborted = engine.abort(M, now);
        assertThat(aborted.state()).isEqualTo(State.ABORTED);
        assertThat(engine.takeCommands()).containsExactly(
                new SubtaskCommand(0, Action.UNLOAD, M, "2", "rollout 1 -> 2 aborted"),
                new SubtaskCommand(2, Action.UNLOAD, M, "2", "rollout 1 -> 2 aborted"));
        assertThat(store.recentDecisions(1).get(0).reason()).contains("UNLOAD 2 from subtask(s) [0, 2]");
    }

    /** A canary rollout warmed on subtask 0, at its first step with the step's baseline taken: its counts. */
    TwoVersionsCounts warmedOnSubtask0AtItsFirstStep() throws Exception {
        engine.start(request(Mode.CANARY), now);
        collect(1, Set.of(0), Set.of(0));
        engine.takeCommands();
        TwoVersionsCounts counts = new TwoVersionsCounts();
        assertThat(engine.advance(counts.snapshot(now += 1000), now)).isFalse();
        return counts;
    }

    @Test
    void aRollbackUnloadsBWhereItWasWarmed() throws Exception {
        TwoVersionsCounts counts = warmedOnSubtask0AtItsFirstStep();
        // B fails 10% against A's 0.5%: rolled back
        counts.answer(3800, 19, 200, 20);
        assertThat(engine.advance(counts.snapshot(now += 11_000), now)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(engine.takeCommands()).containsExactly(
                new SubtaskCommand(0, Action.UNLOAD, M, "2", "rollout 1 -> 2 rolled back"));
    }

    @Test
    void aRolloutThatEndsDoneUnloadsAWhereItWarmedBAndKeepsB() throws Exception {
        TwoVersionsCounts counts = warmedOnSubtask0AtItsFirstStep();
        // 5%, 25%, 50%: B as good as A at every step
        for (double share : new double[] {0.05, 0.25, 0.5}) {
            counts.answer(4000 * (1 - share), 0, 4000 * share, 0);
            assertThat(engine.advance(counts.snapshot(now += 11_000), now)).isTrue();
            if (share < 0.5) {
                assertThat(engine.takeCommands()).as("promoted: nothing to load or unload").isEmpty();
            }
        }
        assertThat(rollout().state()).isEqualTo(State.DONE);
        assertThat(engine.takeCommands()).as("A serves no share now: unpinned and unloaded where B was warmed")
                .containsExactly(new SubtaskCommand(0, Action.UNLOAD, M, "1", "rollout 1 -> 2 done"));
        assertThat(store.recentDecisions(1).get(0).reason()).contains("done (100% to 2); UNLOAD 1 from subtask(s) [0]");
    }

    @Test
    void withoutAWarmTimeoutBGetsItsShareAtOnceAndNothingIsLoaded() throws Exception {
        engine = new RolloutEngine(store, RolloutEngineTest.SETTINGS);
        assertThat(RolloutEngineTest.SETTINGS.warms()).isFalse();
        assertThat(engine.start(request(Mode.CANARY), now).phase()).isEqualTo(Phase.CANARY);
        collect(1, Set.of(0, 1), Set.of());
        assertThat(engine.takeCommands()).isEmpty();
        assertThat(engine.abort(M, now).state()).isEqualTo(State.ABORTED);
        assertThat(engine.takeCommands()).isEmpty();
    }

    /** Cumulative answers and errors of both versions on subtask 0, both loaded there. */
    static final class TwoVersionsCounts {
        double aAnswers;
        double aErrors;
        double bAnswers;
        double bErrors;

        void answer(double a, double aErr, double b, double bErr) {
            aAnswers += a;
            aErrors += aErr;
            bAnswers += b;
            bErrors += bErr;
        }

        MetricSnapshot snapshot(long at) {
            List<ModelSample> models = List.of(
                    ModelSample.builder(M, "1").counts(aAnswers, aAnswers, aAnswers / 4).queuedSamples(0)
                            .batchSizeMean(4).inferenceLatencyUsMean(500).queueLatencyUsP99(1000)
                            .latencyModel(500, 100).loaded(1).errors(aErrors).inferenceLatencyUsP99(1000).build(),
                    ModelSample.builder(M, "2").counts(bAnswers, bAnswers, bAnswers / 4).queuedSamples(0)
                            .batchSizeMean(4).inferenceLatencyUsMean(500).queueLatencyUsP99(1000)
                            .latencyModel(500, 100).loaded(1).errors(bErrors).inferenceLatencyUsP99(1000).build());
            return new MetricSnapshot(at, "job", "vertex", 1,
                    List.of(new SubtaskSample(0, "sim:0", 0, 8.0 * (1L << 30), 0.3, 300, 0, 0, models)));
        }
    }
}
