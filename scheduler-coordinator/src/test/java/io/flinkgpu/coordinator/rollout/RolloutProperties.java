package io.flinkgpu.coordinator.rollout;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.rollout.Rollout.AfterShadow;
import io.flinkgpu.coordinator.rollout.Rollout.Mode;
import io.flinkgpu.coordinator.rollout.Rollout.State;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Assume;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.DoubleRange;
import net.jqwik.api.constraints.IntRange;

/**
 * The rollout engine's verdicts over its settings (dwell, samples, significance, latency tolerance
 * and minimum batches, steps) together with the versions' behaviour: a B that answers as A does
 * reaches DONE through every step; a B that fails more, or whose own service time is beyond the
 * tolerance (also where both versions' whole batch times are equal, as when A queues behind B on
 * one device), is rolled back at its first judged step. With the versions' batch sizes varied too
 * (a canary's small share, A's queue grown behind a slow B, B with most of the traffic): a B with
 * A's latency fit reaches DONE, and a B whose fit is beyond the tolerance at every size is rolled
 * back, whichever version's batches are the larger. With the versions' batches too few to judge
 * latency (and the longest wait for them varied): a slow B is neither promoted nor rolled back
 * while it waits and is rolled back once its batches suffice; a good B is promoted when the wait
 * ends, and the decision says its latency was not judged.
 */
class RolloutProperties {
    static final String M = "m";

    /** The settings and a rollout's steps in percent (ascending, the last 100), as a request gives them. */
    record Case(RolloutSettings settings, List<Double> steps) {
        /** Answers per version per step: enough samples, and enough batches (4 answers a batch) to compare p99s. */
        double answersPerStep() {
            return Math.max(100, Math.max(settings.minSamples(), 4 * settings.latencyMinBatches()));
        }
    }

    @Provide
    Arbitrary<Case> cases() {
        Arbitrary<RolloutSettings> settings = Combinators.combine(
                Arbitraries.integers().between(0, 120).map(s -> Duration.ofSeconds(s)),
                Arbitraries.longs().between(1, 500),
                Arbitraries.of(0.001, 0.01, 0.05),
                Arbitraries.integers().between(0, 40).map(t -> t * 0.05),
                Arbitraries.longs().between(0, 300),
                Arbitraries.integers().between(0, 600).map(s -> Duration.ofSeconds(s)),
                Combinators.combine(
                        Arbitraries.oneOf(Arbitraries.just(0.0),
                                Arbitraries.integers().between(11, 200).map(g -> g / 10.0)),
                        Arbitraries.longs().between(1, 50),
                        Arbitraries.of(0.0, 1e-3, 1e-2, 0.1))
                        .as((guard, guardBatches, early) -> new double[] {guard, guardBatches, early}))
                .as((dwell, samples, significance, tolerance, batches, wait, g) -> new RolloutSettings(dwell, samples,
                        significance, tolerance, batches, wait, g[0], (long) g[1], significance * g[2],
                        RolloutSettings.STEPS, 0.1, AfterShadow.CANARY));
        Arbitrary<List<Double>> steps = Arbitraries.integers().between(1, 99).set().ofMinSize(1).ofMaxSize(5)
                .map(set -> {
                    List<Double> s = new ArrayList<>();
                    set.stream().sorted().forEach(p -> s.add(p.doubleValue()));
                    s.add(100.0);
                    return s;
                });
        return Combinators.combine(settings, steps).as(Case::new);
    }

    /** The engine, a job of one subtask, and the rollout started with the step's baseline taken. */
    static final class Run {
        final StateStore store = new InMemoryStateStore();
        final RolloutEngine engine;
        final TwoVersions job = new TwoVersions(M).answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
        final Case c;

        Run(Case c) throws Exception {
            this.c = c;
            engine = new RolloutEngine(store, c.settings());
            engine.start(new RolloutEngine.Request(M, "1", "2", Mode.CANARY, c.steps(), null, null), job.now());
            assertThat(engine.advance(job.collect(), job.now())).as("the first collection takes the baseline").isFalse();
        }

        /** One judged step: past the dwell, both versions with a step's answers at these errors and p99s. */
        boolean step(double aErrors, double bErrors, double aP99, double bP99) {
            return step(c.answersPerStep(), aErrors, bErrors, aP99, bP99);
        }

        /** As above with {@code n} answers of each version. */
        boolean step(double n, double aErrors, double bErrors, double aP99, double bP99) {
            job.advance(c.settings().minDwell().toMillis() + 1000);
            job.answer("1", n, aErrors, aP99).answer("2", n, bErrors, bP99);
            return engine.advance(job.collect(), job.now());
        }

        Rollout rollout() {
            return engine.get(M).orElseThrow();
        }

        List<String> actions() {
            return store.recentDecisions(100).stream().map(Decision::action).toList();
        }
    }

    @Property(tries = 300)
    void aVersionThatAnswersAsTheOldOneDoesReachesDoneThroughEveryStep(@ForAll("cases") Case c,
            @ForAll @DoubleRange(min = 0, max = 0.3) double errorRate, @ForAll @IntRange(min = 100, max = 500_000) int p99Us,
            @ForAll boolean serviceReported) throws Exception {
        Run run = new Run(c);
        if (serviceReported) {
            run.job.serviceP99("1", p99Us * 0.6).serviceP99("2", p99Us * 0.6);
        }
        double errors = Math.round(c.answersPerStep() * errorRate);
        for (int i = 0; i < c.steps().size() - 1; i++) {
            assertThat(run.step(errors, errors, p99Us, p99Us)).as("step %d judged", i + 1).isTrue();
        }
        assertThat(run.rollout().state()).as(run.rollout().reason()).isEqualTo(State.DONE);
        assertThat(run.actions()).doesNotContain("ROLLOUT_ROLLBACK").endsWith("ROLLOUT_DONE")
                .filteredOn("ROLLOUT_PROMOTE"::equals).hasSize(c.steps().size() - 2);
        assertThat(run.engine.splits().get(0).versions()).singleElement()
                .satisfies(w -> assertThat(w.version()).isEqualTo("2"));
    }

    @Property(tries = 300)
    void aVersionSlowerThanTheToleranceIsRolledBackAtItsFirstStepEvenWhereTheWholeBatchTimesAreEqual(
            @ForAll("cases") Case c, @ForAll @DoubleRange(min = 1.05, max = 20) double beyond,
            @ForAll @IntRange(min = 100, max = 100_000) int aServiceUs, @ForAll boolean aQueuedBehindB)
            throws Exception {
        Run run = new Run(c);
        double bServiceUs = aServiceUs * (1 + c.settings().latencyTolerance()) * beyond;
        double aWholeUs = aQueuedBehindB ? bServiceUs : aServiceUs; // A's batches waited for B's on the device
        run.job.serviceP99("1", aServiceUs).serviceP99("2", bServiceUs);
        assertThat(run.step(0, 0, aWholeUs, bServiceUs)).isTrue();
        assertThat(run.rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(run.rollout().reason()).contains("2 is worse (latency)", "service p99 2");
        assertThat(run.engine.splits().get(0).versions()).singleElement()
                .satisfies(w -> assertThat(w.version()).isEqualTo("1"));
    }

    @Property(tries = 300)
    void aVersionThatFailsFarMoreOftenIsRolledBackAtItsFirstStep(@ForAll("cases") Case c,
            @ForAll @DoubleRange(min = 0, max = 0.01) double aRate, @ForAll @DoubleRange(min = 0.3, max = 1) double bRate)
            throws Exception {
        Run run = new Run(c);
        double n = c.answersPerStep();
        assertThat(run.step(Math.round(n * aRate), Math.round(n * bRate), 1000, 1000)).isTrue();
        assertThat(run.rollout().state()).isEqualTo(State.ROLLED_BACK);
        assertThat(run.rollout().reason()).contains("2 is worse (error rate)");
    }

    /** A version's batches: its latency fit's alpha and beta in us and its mean batch size. */
    record Batches(double alphaUs, double betaUs, double meanSize) {
        double fitUs(double size) {
            return alphaUs + betaUs * size;
        }

        /** A p99 of the version's service time that its own batch sizes explain: the fit at 1.5x its mean size. */
        double p99Us() {
            return fitUs(1.5 * meanSize);
        }
    }

    /** Answers per version per step so that each ran enough batches to compare latencies at its mean size. */
    static double answers(Case c, double meanA, double meanB) {
        return Math.max(c.answersPerStep(), Math.ceil(Math.max(meanA, meanB)) * (c.settings().latencyMinBatches() + 1));
    }

    @Property(tries = 300)
    void aVersionWithTheOldOnesLatencyFitReachesDoneWhateverEitherVersionsBatchSizes(@ForAll("cases") Case c,
            @ForAll @IntRange(min = 0, max = 100_000) int alphaUs, @ForAll @IntRange(min = 1, max = 20_000) int betaUs,
            @ForAll @DoubleRange(min = 1, max = 128) double meanA, @ForAll @DoubleRange(min = 1, max = 128) double meanB)
            throws Exception {
        Run run = new Run(c);
        Batches a = new Batches(alphaUs, betaUs, meanA);
        Batches b = new Batches(alphaUs, betaUs, meanB);
        run.job.batches("1", a.alphaUs(), a.betaUs(), meanA).batches("2", b.alphaUs(), b.betaUs(), meanB)
                .serviceP99("1", a.p99Us()).serviceP99("2", b.p99Us());
        for (int i = 0; i < c.steps().size() - 1; i++) {
            assertThat(run.step(answers(c, meanA, meanB), 0, 0, a.p99Us(), b.p99Us())).as("step %d judged", i + 1)
                    .isTrue();
        }
        assertThat(run.rollout().state()).as(run.rollout().reason()).isEqualTo(State.DONE);
        assertThat(run.actions()).doesNotContain("ROLLOUT_ROLLBACK");
    }

    @Property(tries = 300)
    void aVersionWhoseFitIsBeyondTheToleranceIsRolledBackWhicheverVersionsBatchesAreTheLarger(@ForAll("cases") Case c,
            @ForAll @DoubleRange(min = 1.05, max = 20) double beyond,
            @ForAll @IntRange(min = 0, max = 100_000) int alphaUs, @ForAll @IntRange(min = 1, max = 20_000) int betaUs,
            @ForAll @DoubleRange(min = 1, max = 128) double meanA, @ForAll @DoubleRange(min = 1, max = 128) double meanB)
            throws Exception {
        Run run = new Run(c);
        double k = (1 + c.settings().latencyTolerance()) * beyond;
        Batches a = new Batches(alphaUs, betaUs, meanA);
        Batches b = new Batches(alphaUs * k, betaUs * k, meanB);
        run.job.batches("1", a.alphaUs(), a.betaUs(), meanA).batches("2", b.alphaUs(), b.betaUs(), meanB)
                .serviceP99("1", a.p99Us()).serviceP99("2", b.p99Us());
        assertThat(run.step(answers(c, meanA, meanB), 0, 0, a.p99Us(), b.p99Us())).isTrue();
        assertThat(run.rollout().state()).as(run.rollout().reason()).isEqualTo(State.ROLLED_BACK);
        assertThat(run.rollout().reason()).contains("2 is worse (latency)", "(latency fit) 2");
    }

    /** {@code n} answers of each version after {@code millis}, then one collection; whether the split changed. */
    static boolean look(Run run, long millis, double n) {
        run.job.advance(millis);
        run.job.answer("1", n, 0, 1000).answer("2", n, 0, 1000);
        return run.engine.advance(run.job.collect(), run.job.now());
    }

    @Property(tries = 300)
    void aSlowVersionWithTooFewBatchesIsNotPromotedWhileItWaitsAndIsRolledBackOnceItsBatchesSuffice(
            @ForAll("cases") Case c, @ForAll @DoubleRange(min = 1.05, max = 20) double beyond,
            @ForAll @IntRange(min = 0, max = 100_000) int alphaUs, @ForAll @IntRange(min = 1, max = 20_000) int betaUs)
            throws Exception {
        long minBatches = c.settings().latencyMinBatches();
        long dwell = c.settings().minDwell().toMillis() + 1000;
        Assume.that(minBatches >= 2 && c.settings().latencyMaxWait().toMillis() > dwell + 1000);
        Run run = new Run(c);
        double n = c.answersPerStep();
        double k = (1 + c.settings().latencyTolerance()) * beyond;
        // B's answers in minBatches - 1 batches: too few to judge its latency
        run.job.batches("1", alphaUs, betaUs, 4).batches("2", alphaUs * k, betaUs * k, n / (minBatches - 1));
        RolloutSettings s = c.settings();
        if (s.latencyGuard() > 0 && k > s.latencyGuard() && minBatches - 1 >= s.latencyGuardBatches()) {
            assertThat(look(run, dwell, n)).as("beyond the guard").isTrue();
            assertThat(run.rollout().state()).isEqualTo(State.ROLLED_BACK);
            assertThat(run.rollout().reason()).contains("2 is worse (latency guard)");
            return;
        }
        assertThat(look(run, dwell, n)).isFalse();
        assertThat(run.rollout().state()).isEqualTo(State.RUNNING);
        assertThat(run.rollout().step()).isZero();
        assertThat(run.rollout().reason()).contains("for its latency to be judged",
                "2 " + (minBatches - 1) + " batches in the step, fewer than " + minBatches);
        assertThat(run.actions()).containsExactly("ROLLOUT_START");
        // its next answers in batches of 4: enough batches, judged within the wait
        run.job.batches("2", alphaUs * k, betaUs * k, 4);
        assertThat(look(run, 1000, n)).isTrue();
        assertThat(run.rollout().state()).as(run.rollout().reason()).isEqualTo(State.ROLLED_BACK);
        assertThat(run.rollout().reason()).contains("2 is worse (latency)", "(latency fit) 2");
    }

    @Property(tries = 300)
    void aGoodVersionWithTooFewBatchesIsPromotedWhenTheWaitEndsOnErrorRatesAlone(@ForAll("cases") Case c)
            throws Exception {
        long minBatches = c.settings().latencyMinBatches();
        long dwell = c.settings().minDwell().toMillis() + 1000;
        long wait = c.settings().latencyMaxWait().toMillis();
        Assume.that(minBatches >= 2);
        Run run = new Run(c);
        double n = c.answersPerStep();
        // B's answers of both looks in minBatches - 1 batches
        run.job.batches("2", 500, 100, n / (minBatches - 1) * 2);
        long elapsed = 0;
        if (dwell < wait) {
            assertThat(look(run, dwell, n)).as("judged before the wait ends").isFalse();
            assertThat(run.rollout().reason()).contains("for its latency to be judged");
            elapsed = dwell;
        }
        assertThat(look(run, Math.max(dwell, wait + 1000) - elapsed, n)).isTrue();
        assertThat(run.rollout().step()).as(run.rollout().reason()).isEqualTo(1);
        String decision = run.store.recentDecisions(1).get(0).reason();
        assertThat(decision).contains("2 is not worse", "batches in the step, fewer than " + minBatches);
        if (wait > 0) {
            assertThat(decision).contains("latency not judged within coordinator.rollout.latency-max-wait");
        }
    }

    @Property(tries = 300)
    void aVersionBeyondTheGuardIsRolledBackBeforeItsDwellAndOneWithinItWaitsForTheDwell(@ForAll("cases") Case c,
            @ForAll @DoubleRange(min = 1.05, max = 20) double beyond, @ForAll boolean beyondGuard,
            @ForAll @IntRange(min = 0, max = 100_000) int alphaUs, @ForAll @IntRange(min = 1, max = 20_000) int betaUs,
            @ForAll @DoubleRange(min = 1, max = 64) double meanA, @ForAll @DoubleRange(min = 1, max = 64) double meanB)
            throws Exception {
        RolloutSettings s = c.settings();
        Assume.that(s.latencyGuard() > 0 && s.minDwell().toMillis() >= 2000);
        Run run = new Run(c);
        // beyond the guard, or beyond the tolerance and within the guard
        double k = beyondGuard ? s.latencyGuard() * beyond
                : 1 + (s.latencyGuard() - 1) * (beyond - 1) / 19.1;
        run.job.batches("1", alphaUs, betaUs, meanA).batches("2", alphaUs * k, betaUs * k, meanB);
        // one second into the step: each version ran the guard's batches, far fewer answers than a step needs
        double answers = Math.ceil(Math.max(meanA, meanB) * (s.latencyGuardBatches() + 1));
        boolean changed = look(run, 1000, answers);
        if (beyondGuard) {
            assertThat(changed).isTrue();
            assertThat(run.rollout().state()).isEqualTo(State.ROLLED_BACK);
            assertThat(run.rollout().reason()).contains("before it was judged: 2 is worse (latency guard)",
                    "(latency fit) 2");
            assertThat(run.engine.splits().get(0).versions()).singleElement()
                    .satisfies(w -> assertThat(w.version()).isEqualTo("1"));
        } else {
            assertThat(changed).isFalse();
            assertThat(run.rollout().state()).isEqualTo(State.RUNNING);
            assertThat(run.rollout().step()).isZero();
        }
    }

    @Property(tries = 300)
    void aVersionFailingFarMoreOftenIsRolledBackBeforeItsDwellByTheEarlyLook(@ForAll("cases") Case c,
            @ForAll @IntRange(min = 200, max = 2000) int n, @ForAll @DoubleRange(min = 0, max = 0.01) double aRate,
            @ForAll @DoubleRange(min = 0.3, max = 1) double bRate) throws Exception {
        RolloutSettings s = c.settings();
        Assume.that(s.minDwell().toMillis() >= 2000);
        Run run = new Run(c);
        run.job.advance(1000);
        run.job.answer("1", n, Math.round(n * aRate), 1000).answer("2", n, Math.round(n * bRate), 1000);
        boolean changed = run.engine.advance(run.job.collect(), run.job.now());
        if (s.earlySignificance() > 0) {
            assertThat(changed).isTrue();
            assertThat(run.rollout().state()).isEqualTo(State.ROLLED_BACK);
            assertThat(run.rollout().reason()).contains("before it was judged: 2 is worse (error rate, early)");
        } else {
            assertThat(changed).as("no early look: it waits for the dwell").isFalse();
            assertThat(run.rollout().state()).isEqualTo(State.RUNNING);
        }
    }

    @Property(tries = 300)
    void aVersionFailingNoMoreOftenIsNeverRolledBackByTheEarlyLook(@ForAll("cases") Case c,
            @ForAll @IntRange(min = 1, max = 5000) int n, @ForAll @DoubleRange(min = 0, max = 1) double aRate,
            @ForAll @DoubleRange(min = 0, max = 1) double share, @ForAll @IntRange(min = 1, max = 20) int looks)
            throws Exception {
        RolloutSettings s = c.settings();
        Assume.that(s.minDwell().toMillis() >= 1000L * (looks + 1));
        Run run = new Run(c);
        // B fails at most as often as A, in every look before the dwell
        for (int i = 0; i < looks; i++) {
            run.job.advance(1000);
            run.job.answer("1", n, Math.round(n * aRate), 1000).answer("2", n, Math.floor(n * aRate * share), 1000);
            assertThat(run.engine.advance(run.job.collect(), run.job.now())).as("look %d", i + 1).isFalse();
        }
        assertThat(run.rollout().state()).isEqualTo(State.RUNNING);
    }
}
