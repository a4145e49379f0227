package io.flinkgpu.coordinator.rollout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.contract.control.VersionSplit;
import io.flinkgpu.contract.control.VersionSplit.VersionWeight;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.rollout.Rollout.AfterShadow;
import io.flinkgpu.coordinator.rollout.Rollout.Mode;
import io.flinkgpu.coordinator.rollout.Rollout.Phase;
import io.flinkgpu.coordinator.rollout.Rollout.State;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The engine on deterministic metrics: one subtask, versions 1 (A) and 2 (B) with counts the test sets. */
class RolloutEngineTest {
    static final String M = "m";
    static final RolloutSettings SETTINGS = new RolloutSettings(Duration.ofSeconds(10), 100, 0.01, 0.2, 40,
            Duration.ofMinutes(1), 5, 10, 1e-4, RolloutSettings.STEPS, 0.2, AfterShadow.CANARY);

    StateStore store;
    RolloutEngine engine;
    TwoVersions job;

    @BeforeEach
    void setUp() {
        store = new InMemoryStateStore();
        engine = new RolloutEngine(store, SETTINGS);
        job = new TwoVersions(M).answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
    }

    static RolloutEngine.Request canary(List<Double> steps) {
        return new RolloutEngine.Request(M, "1", "2", Mode.CANARY, steps, null, null);
    }

    /** One cycle after {@code seconds}: {@code total} answers split by B's share, each version at its error rate. */
    boolean cycle(int seconds, double total, double bShare, double aErrorRate, double bErrorRate, double p99A,
            double p99B) {
        job.advance(seconds * 1000L);
        double b = total * bShare;
        double a = total - b;
        job.answer("1", a, a * aErrorRate, p99A).answer("2", b, b * bErrorRate, p99B);
        return engine.advance(job.collect(), job.now());
    }

    Rollout rollout() {
        return engine.get(M).orElseThrow();
    }

    List<VersionWeight> weights() {
        return engine.splits().get(0).versions();
    }

    List<String> actions() {
        return store.recentDecisions(100).stream().map(Decision::action).toList();
    }

    @Test
    void aGoodVersionIsPromotedThroughEveryStepAndEndsServingEverything() throws Exception {
        Rollout r = engine.start(canary(null), job.now());
        assertThat(r.state()).isEqualTo(State.RUNNING);
        assertThat(r.steps()).containsExactly(0.05, 0.25, 0.5, 1.0);
        assertThat(weights()).containsExactly(new VersionWeight("1", 0.95), new VersionWeight("2", 0.05));
        assertThat(engine.splits().get(0).reason()).isEqualTo("rollout 1 -> 2: step 1 of 4 (5% to 2)");
        assertThat(cycle(1, 0, 0, 0, 0, 1000, 1000)).isFalse(); // the step's baseline
        double[] shares = {0.05, 0.25, 0.5};
        for (int step = 0; step < 3; step++) {
            // enough answers of both, 1% errors each, the same latency; judged once the 10 s have passed
            assertThat(cycle(5, 4000, shares[step], 0.01, 0.01, 1000, 1050)).as("step %d before its dwell", step)
                    .isFalse();
            assertThat(rollout().step()).isEqualTo(step);
            assertThat(cycle(6, 4000, shares[step], 0.01, 0.01, 1000, 1050)).as("step %d judged", step).isTrue();
        }
        assertThat(rollout().state()).isEqualTo(State.DONE);
        assertThat(weights()).containsExactly(new VersionWeight("2", 1));
        assertThat(actions()).containsExactly("ROLLOUT_START", "ROLLOUT_PROMOTE", "ROLLOUT_PROMOTE", "ROLLOUT_DONE");
        assertThat(store.recentDecisions(1).get(0).reason()).contains("step 3 of 4 (50% to 2) after 11.0 s",
                "2 is not worse", "z = 0.00", "p99 2 1050 us <= 1 1000 us x 1.20", "done (100% to 2)");
        // done is final: nothing more is judged
        assertThat(cycle(20, 4000, 1, 0, 0.5, 1000, 5000)).isFalse();
        assertThat(rollout().state()).isEqualTo(State.DONE);
    }

    @Test
    void aVersionWithMoreErrorsIsRolledBackAtOnce() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // 5% of 4000 = 200 answers of B, 10% failed, against A's 0.5%
        assertThat(cycle(11, 4000, 0.05, 0.005, 0.10, 1000, 1000)).isTrue();
        Rollout r = rollout();
        assertThat(r.state()).isEqualTo(State.ROLLED_BACK);
        assertThat(r.step()).isZero();
        assertThat(weights()).containsExactly(new VersionWeight("1", 1));
        assertThat(engine.splits().get(0).shadow()).isNull();
        Decision d = store.recentDecisions(1).get(0);
        assertThat(d.action()).isEqualTo("ROLLOUT_ROLLBACK");
        assertThat(d.model()).isEqualTo(M);
        assertThat(d.reason()).contains("2 is worse (error rate)", "errors 2 20/200 (10.00%) vs 1 19/3800 (0.50%)",
                "rolled back to 100% 1");
        // a rolled-back rollout stays so; the next start begins anew
        assertThat(cycle(11, 4000, 0, 0, 0, 1000, 1000)).isFalse();
        assertThat(engine.start(canary(List.of(10.0, 100.0)), job.now()).steps()).containsExactly(0.1, 1.0);
    }

    @Test
    void aSlowerVersionIsRolledBackByItsP99() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // within the tolerance (1150 <= 1000 x 1.2): promoted
        assertThat(cycle(11, 4000, 0.05, 0.01, 0.01, 1000, 1150)).isTrue();
        assertThat(rollout().step()).isEqualTo(1);
        // beyond it: rolled back although its errors are fine
        assertThat(cycle(11, 4000, 0.25, 0.01, 0.01, 1000, 1300)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("2 is worse (latency)",
                "batch time at 4 samples (latency fit) 2 900 us <= 1 900 us x 1.20 = 1080 us",
                "p99 2 1300 us > 1 1000 us x 1.20 = 1200 us");
    }

    @Test
    void aSlowVersionIsRolledBackWhereTheOldVersionsBatchesGrewBehindIt() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // B (100 ms + 40 ms per sample) holds the execution thread; A's requests queue behind it, so A's
        // batches hold 40 samples on average and its service p99 (431 ms) is above B's (300 ms at 2 samples)
        job.batches("1", 1_000, 4_000, 40).batches("2", 100_000, 40_000, 2).serviceP99("1", 431_000)
                .serviceP99("2", 300_000);
        assertThat(cycle(11, 4000, 0.05, 0.01, 0.01, 431_000, 300_000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("2 is worse (latency)",
                "batch time at 2 samples (latency fit) 2 180000 us > 1 9000 us x 1.20 = 10800 us",
                "service p99 2 300000 us <= 1 431000 us");
    }

    @Test
    void aVersionFailingFarMoreOftenIsRolledBackBeforeTheDwellButOneEarlyErrorIsNoEvidence() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // B's first answer failed, A's 99 did not: p = 1/100 by the exact test, not below 1e-4
        assertThat(cycle(1, 100, 0.01, 0, 1, 1000, 1000)).isFalse();
        assertThat(rollout().state()).isEqualTo(State.RUNNING);
        // its next 19 failed too: 20 of 20 against 0 of 479
        assertThat(cycle(2, 400, 0.0475, 0, 1, 1000, 1000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).startsWith("rollout 1 -> 2: step 1 of 4 (5% to 2) after "
                + "4.0 s, before it was judged: 2 is worse (error rate, early): errors 2 20/20 (100.00%) vs 1 0/480 "
                + "(0.00%): exact one-sided p = ").contains("< 0.000100 (coordinator.rollout.early-significance); "
                + "rolled back to 100% 1");
    }

    @Test
    void aVersionFarBeyondTheLatencyGuardIsRolledBackBeforeTheStepsDwell() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        job.batches("1", 1_000, 4_000, 40).batches("2", 100_000, 40_000, 2);
        // 3 s into the step: B's 60 answers ran in 30 batches, A's 1140 in 28.5; 20x A's batch time at 2 samples
        assertThat(cycle(2, 1200, 0.05, 0, 0, 431_000, 300_000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(weights()).containsExactly(new VersionWeight("1", 1));
        assertThat(store.recentDecisions(1).get(0).reason()).isEqualTo("rollout 1 -> 2: step 1 of 4 (5% to 2) after "
                + "3.0 s, before it was judged: 2 is worse (latency guard): batch time at 2 samples (latency fit) 2 "
                + "180000 us > 1 9000 us x 5.00 (coordinator.rollout.latency-guard; 1 ran 29 and 2 30 batches in the "
                + "step); rolled back to 100% 1");
    }

    @Test
    void aVersionWithinTheGuardOrWithoutOneWaitsForTheStepsDwell() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // 4x A's batch time: beyond the tolerance (1.2x), within the guard (5x): judged at the dwell
        job.batches("1", 1_000, 4_000, 40).batches("2", 4_000, 16_000, 4);
        assertThat(cycle(2, 12_000, 0.05, 0, 0, 1000, 1000)).isFalse();
        assertThat(rollout().reason()).contains("waiting at rollout 1 -> 2: step 1 of 4 (5% to 2)");
        assertThat(cycle(9, 12_000, 0.05, 0, 0, 1000, 1000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("after 12.0 s: 2 is worse (latency)");
        // without a guard a B 20x slower waits for the dwell too
        StateStore other = new InMemoryStateStore();
        RolloutEngine unguarded = new RolloutEngine(other, new RolloutSettings(Duration.ofSeconds(10), 100, 0.01, 0.2,
                40, Duration.ofMinutes(1), 0, 10, 1e-4, RolloutSettings.STEPS, 0.2, AfterShadow.CANARY));
        TwoVersions slow = new TwoVersions(M).answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
        unguarded.start(canary(null), slow.now());
        unguarded.advance(slow.collect(), slow.now());
        slow.batches("1", 1_000, 4_000, 40).batches("2", 100_000, 40_000, 2);
        slow.advance(3000);
        slow.answer("1", 1140, 0, 1000).answer("2", 60, 0, 1000);
        assertThat(unguarded.advance(slow.collect(), slow.now())).isFalse();
        assertThat(unguarded.get(M).orElseThrow().state()).isEqualTo(State.RUNNING);
    }

    @Test
    void aGoodVersionWithMostOfTheTrafficIsNotJudgedByItsLargerBatches() throws Exception {
        engine.start(canary(List.of(90.0, 95.0, 100.0)), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // at 90% B's batches hold 36 samples, A's 4: B's service p99 is far above A's, its batches' fit is A's
        job.batches("1", 500, 100, 4).batches("2", 500, 100, 36).serviceP99("1", 1_000).serviceP99("2", 4_200);
        assertThat(cycle(11, 4000, 0.9, 0.01, 0.01, 1_000, 4_200)).isTrue();
        assertThat(rollout().step()).as("promoted").isEqualTo(1);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("2 is not worse",
                "batch time at 4 samples (latency fit) 2 900 us <= 1 900 us",
                "service p99 not compared (2's batches are the larger, 36.00 samples on average against 1's 4.00)");
        // the same fits with B's batches no larger: a p99 that high is B's own, and rolls it back
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        job.batches("2", 500, 100, 4);
        assertThat(cycle(11, 4000, 0.9, 0.01, 0.01, 1_000, 4_200)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("service p99 2 4200 us > 1 1000 us");
    }

    @Test
    void withoutLatencyFitsTheP99sAreCompared() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // B's batches are the larger (40 samples against 4), but with no fit to compare at one size the p99s decide
        job.batches("1", Double.NaN, Double.NaN, 4).batches("2", Double.NaN, Double.NaN, 40);
        assertThat(cycle(11, 40_000, 0.05, 0.01, 0.01, 1000, 1300)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).doesNotContain("latency fit")
                .contains("p99 2 1300 us > 1 1000 us x 1.20 = 1200 us");
    }

    @Test
    void aSlowerVersionIsJudgedByItsServiceTimeWhereItsBatchesHoldUpTheOldVersionsOnOneDevice() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // one device running batches one after another: A's batches queue behind B's 140-ms ones, so both
        // versions' whole batch times have about the same p99; their own service times do not
        job.serviceP99("1", 5_000);
        assertThat(cycle(11, 4000, 0.05, 0.01, 0.01, 150_000, 140_000)).isTrue();
        assertThat(rollout().step()).as("only one version reports a service time: batch p99s compared").isEqualTo(1);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("p99 2 140000 us <= 1 150000 us");
        job.serviceP99("2", 140_000);
        assertThat(cycle(11, 4000, 0.25, 0.01, 0.01, 150_000, 140_000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("2 is worse (latency)",
                "service p99 2 140000 us > 1 5000 us x 1.20 = 6000 us");
    }

    @Test
    void aSlowBatchAmongFewIsNotTheP99ThatDecidesAndTheStepWaitsForEnoughBatches() throws Exception {
        // 100 batches per version before latencies are compared, a step waits 60 s at most for them
        engine = new RolloutEngine(store, new RolloutSettings(Duration.ofSeconds(10), 100, 0.01, 0.2, 100,
                Duration.ofMinutes(1), 5, 10, 1e-4, RolloutSettings.STEPS, 0.2, AfterShadow.CANARY));
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // B's 200 answers ran in 50 batches, one of them slow (its model's load): neither judged nor promoted
        assertThat(cycle(11, 4000, 0.05, 0.01, 0.01, 1000, 90_000)).isFalse();
        assertThat(rollout().step()).isZero();
        assertThat(rollout().reason()).contains("waiting at rollout 1 -> 2: step 1 of 4 (5% to 2) for its latency to "
                + "be judged: 1 ran 950 and 2 50 batches in the step, fewer than 100 (12.0 s of at most 60 s");
        assertThat(actions()).containsExactly("ROLLOUT_START");
        // 50 more batches of B: the p99 counts, and the slow batch is no longer it
        assertThat(cycle(5, 4000, 0.05, 0.01, 0.01, 1000, 1100)).isTrue();
        assertThat(rollout().step()).isEqualTo(1);
        assertThat(store.recentDecisions(1).get(0).reason()).doesNotContain("not compared")
                .contains("after 17.0 s: 2 is not worse");
        // a B as slow as the slow batch with enough batches is rolled back
        assertThat(cycle(11, 4000, 0.25, 0.01, 0.01, 1000, 90_000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
    }

    @Test
    void aStepWithTooFewBatchesIsJudgedOnErrorRatesAloneAfterTheLongestWait() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // B's 100 answers (enough samples) ran in 25 batches, fewer than 40
        assertThat(cycle(30, 2000, 0.05, 0, 0, 1000, 90_000)).isFalse();
        assertThat(rollout().reason()).contains("for its latency to be judged", "(31.0 s of at most 60 s");
        // a failing B does not wait for its batches
        RolloutEngine failing = new RolloutEngine(new InMemoryStateStore(), SETTINGS);
        TwoVersions other = new TwoVersions(M).answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
        failing.start(canary(null), other.now());
        failing.advance(other.collect(), other.now());
        other.advance(30_000);
        other.answer("1", 950, 0, 1000).answer("2", 100, 100, 1000);
        assertThat(failing.advance(other.collect(), other.now())).isTrue();
        assertThat(failing.get(M).orElseThrow().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(failing.get(M).orElseThrow().reason()).contains("2 is worse (error rate)");
        // past 60 s the step is judged on error rates alone, and the decision says so
        assertThat(cycle(31, 400, 0.05, 0, 0, 1000, 90_000)).isTrue();
        assertThat(rollout().step()).isEqualTo(1);
        assertThat(store.recentDecisions(1).get(0).reason()).contains(
                "after 62.0 s (latency not judged within coordinator.rollout.latency-max-wait, 60 s): 2 is not worse",
                "not compared (1 ran 570 and 2 30 batches in the step, fewer than 40)");
    }

    @Test
    void withoutAWaitTooFewBatchesAreJudgedOnErrorRatesAtOnce() throws Exception {
        engine = new RolloutEngine(store, new RolloutSettings(Duration.ofSeconds(10), 100, 0.01, 0.2, 40,
                Duration.ZERO, 5, 10, 1e-4, RolloutSettings.STEPS, 0.2, AfterShadow.CANARY));
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        assertThat(cycle(11, 2000, 0.05, 0, 0, 1000, 90_000)).isTrue();
        assertThat(rollout().step()).isEqualTo(1);
        assertThat(store.recentDecisions(1).get(0).reason()).contains("after 12.0 s: 2 is not worse",
                "not compared (1 ran 475 and 2 25 batches in the step, fewer than 40)");
    }

    @Test
    void tooFewSamplesWaitsHoweverLongTheStepLasts() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // 5% of 1000 = 50 answers of B, 4% failed against A's 1%, but fewer than 100: not judged (nor failing
        // by far enough for the early look)
        assertThat(cycle(60, 1000, 0.05, 0.01, 0.04, 1000, 1000)).isFalse();
        assertThat(rollout().state()).isEqualTo(State.RUNNING);
        assertThat(rollout().reason()).contains("waiting at rollout 1 -> 2: step 1 of 4 (5% to 2)", "answers 1 950 and 2 50 of 100");
        assertThat(actions()).containsExactly("ROLLOUT_START");
        // the samples count from the step's start, so the next 50 complete them
        assertThat(cycle(1, 1000, 0.05, 0.01, 0.04, 1000, 1000)).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(rollout().reason()).contains("after 62.0 s: 2 is worse (error rate)");
    }

    @Test
    void pauseHoldsResumeStartsTheStepAgainAndAbortGoesBackToTheOldVersion() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        assertThat(engine.pause(M, job.now()).state()).isEqualTo(State.PAUSED);
        assertThat(weights()).containsExactly(new VersionWeight("1", 0.95), new VersionWeight("2", 0.05));
        // nothing is judged while paused, however bad
        assertThat(cycle(30, 4000, 0.05, 0, 1, 1000, 1000)).isFalse();
        assertThat(rollout().state()).isEqualTo(State.PAUSED);
        assertThatThrownBy(() -> engine.pause(M, job.now())).isInstanceOf(RolloutException.class)
                .satisfies(e -> assertThat(((RolloutException) e).status()).isEqualTo(409));
        assertThatThrownBy(() -> engine.start(canary(null), job.now())).isInstanceOf(RolloutException.class)
                .hasMessageContaining("has an active rollout");

        Rollout resumed = engine.resume(M, job.now());
        assertThat(resumed.state()).isEqualTo(State.RUNNING);
        assertThat(resumed.baseline()).isNull();
        assertThat(resumed.stepStartedAtMillis()).isEqualTo(job.now());
        // the paused period's failures are not counted: the step measures afresh from here
        assertThat(cycle(1, 0, 0, 0, 0, 1000, 1000)).isFalse();
        assertThat(cycle(11, 4000, 0.05, 0.01, 0.01, 1000, 1000)).isTrue();
        assertThat(rollout().step()).isEqualTo(1);

        Rollout aborted = engine.abort(M, job.now());
        assertThat(aborted.state()).isEqualTo(State.ABORTED);
        assertThat(weights()).containsExactly(new VersionWeight("1", 1));
        assertThatThrownBy(() -> engine.resume(M, job.now())).isInstanceOf(RolloutException.class);
        assertThat(actions()).containsExactly("ROLLOUT_START", "ROLLOUT_PAUSE", "ROLLOUT_RESUME", "ROLLOUT_PROMOTE",
                "ROLLOUT_ABORT");

        engine.forget(M, job.now());
        assertThat(engine.splits()).isEmpty();
        assertThatThrownBy(() -> engine.abort(M, job.now())).isInstanceOf(RolloutException.class)
                .satisfies(e -> assertThat(((RolloutException) e).status()).isEqualTo(404));
    }

    @Test
    void shadowModeComparesTheCopiesThenContinuesAsACanary() throws Exception {
        Rollout r = engine.start(new RolloutEngine.Request(M, "1", "2", Mode.SHADOW, null, 0.2, null), job.now());
        assertThat(r.phase()).isEqualTo(Phase.SHADOW);
        VersionSplit split = engine.splits().get(0);
        assertThat(split.versions()).containsExactly(new VersionWeight("1", 1));
        assertThat(split.shadow()).isEqualTo("2");
        assertThat(split.shadowFraction()).isEqualTo(0.2);
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        // A serves all 4000; B answers copies of 20% of them
        job.advance(11_000);
        job.answer("1", 4000, 40, 1000).answer("2", 800, 8, 1000);
        assertThat(engine.advance(job.collect(), job.now())).isTrue();
        r = rollout();
        assertThat(r.phase()).isEqualTo(Phase.CANARY);
        assertThat(r.step()).isZero();
        split = engine.splits().get(0);
        assertThat(split.shadow()).isNull();
        assertThat(split.versions()).containsExactly(new VersionWeight("1", 0.95), new VersionWeight("2", 0.05));
        assertThat(store.recentDecisions(1).get(0).reason()).contains("shadow (20% of requests copied to 2)",
                "2 (shadow) is not worse", "next: rollout 1 -> 2: step 1 of 4 (5% to 2)");
    }

    @Test
    void shadowModeCanFinishOrRollBack() throws Exception {
        engine.start(new RolloutEngine.Request(M, "1", "2", Mode.SHADOW, null, null, AfterShadow.FINISH), job.now());
        assertThat(engine.splits().get(0).shadowFraction()).isEqualTo(0.2); // the settings' default
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        job.advance(11_000);
        job.answer("1", 2000, 0, 1000).answer("2", 400, 0, 1000);
        assertThat(engine.advance(job.collect(), job.now())).isTrue();
        assertThat(rollout().state()).isEqualTo(State.DONE);
        assertThat(weights()).containsExactly(new VersionWeight("2", 1));

        engine.forget(M, job.now());
        engine.start(new RolloutEngine.Request(M, "1", "2", Mode.SHADOW, null, 0.5, null), job.now());
        cycle(1, 0, 0, 0, 0, 1000, 1000);
        job.advance(11_000);
        job.answer("1", 2000, 0, 1000).answer("2", 1000, 1000, Double.NaN); // every copy failed, no batch ran
        assertThat(engine.advance(job.collect(), job.now())).isTrue();
        assertThat(rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(engine.splits().get(0).shadow()).isNull();
        assertThat(weights()).containsExactly(new VersionWeight("1", 1));
        assertThat(store.recentDecisions(1).get(0).reason()).contains("p99 not compared (2 (shadow) has no batch latency)");
    }

    @Test
    void aJobRestartStartsTheStepsSamplesAgain() throws Exception {
        engine.start(canary(null), job.now());
        cycle(1, 4000, 0.05, 0, 0, 1000, 1000);
        job.restartJob();
        assertThat(cycle(11, 100, 0.05, 0, 0, 1000, 1000)).isFalse();
        assertThat(actions()).containsExactly("ROLLOUT_START", "ROLLOUT_RESET");
        assertThat(rollout().baseline().fromResponses()).isEqualTo(95);
        assertThat(cycle(1, 4000, 0.05, 0, 0, 1000, 1000)).isTrue();
    }

    @Test
    void refusesRequestsItCannotCarryOut() {
        record Bad(RolloutEngine.Request request, String message) {}
        for (Bad b : List.of(
                new Bad(new RolloutEngine.Request("bad name!", "1", "2", null, null, null, null), "model must match"),
                new Bad(new RolloutEngine.Request(M, "1", "1", null, null, null, null), "different versions"),
                new Bad(new RolloutEngine.Request(M, "1", "latest", null, null, null, null), "positive integers"),
                new Bad(canary(List.of(50.0, 25.0, 100.0)), "ascend"),
                new Bad(canary(List.of(5.0, 50.0)), "last step must be 100"),
                new Bad(canary(List.of(100.0)), "below 100"),
                new Bad(canary(List.of(0.0, 100.0)), "ascend"),
                new Bad(new RolloutEngine.Request(M, "1", "2", Mode.SHADOW, null, 1.5, null), "shadow_fraction"),
                new Bad(new RolloutEngine.Request(M, "1", "2", Mode.CANARY, null, 0.5, null), "for mode shadow"))) {
            assertThatThrownBy(() -> engine.start(b.request(), job.now())).as(b.message())
                    .isInstanceOf(RolloutException.class).hasMessageContaining(b.message())
                    .satisfies(e -> assertThat(((RolloutException) e).status()).isEqualTo(400));
        }
        assertThat(engine.all()).isEmpty();
        assertThat(actions()).isEmpty();
    }
}
