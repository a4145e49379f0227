package io.flinkgpu.coordinator.rollout;

import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.VersionSplit;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.rollout.Rollout.Counts;
import io.flinkgpu.coordinator.rollout.Rollout.Phase;
import io.flinkgpu.coordinator.rollout.Rollout.State;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * Gray releases: per model, a rollout from version A to B in weighted steps, judged on the live
 * metrics of each collection ({@link #advance}) and carried in every plan as the model's
 * {@link VersionSplit} ({@link #splits}).
 *
 * <p>A canary step gives B its share of the requests that pin no version. Once the step has lasted
 * {@link RolloutSettings#minDwell} and both versions answered {@link RolloutSettings#minSamples}
 * requests within it, B is compared with A ({@link VersionComparison}) at every collection: worse
 * (error rate by the one-sided z-test, or batch latency beyond the tolerance: at a common batch
 * size by the versions' latency fits, and by the p99 of the batches' own service time,
 * {@link #latencies}) rolls back at once (100% A, ROLLED_BACK); otherwise, once both versions ran
 * {@link RolloutSettings#latencyMinBatches} batches in the step so that latency was judged too (or
 * the step has lasted {@link RolloutSettings#latencyMaxWait}), the next step begins, and reaching
 * the last one (100%) ends the rollout (DONE, B serving 100%). Before a step is judged, the latency
 * guard ({@link RolloutSettings#latencyGuard}, {@link #guarded}) rolls back a B whose fitted batch
 * time is far beyond A's, which would hold A's requests up on the execution threads they share for
 * the whole dwell, and an early look at error rates ({@link RolloutSettings#earlySignificance},
 * {@link #failingEarly}) one that fails far more often than A. A shadow phase gives B no share: a
 * fraction of the requests is copied to B, whose answers the job counts under B's metrics and
 * discards; it is judged the same way and then leads into the canary steps or straight to DONE
 * ({@link Rollout.AfterShadow}).
 *
 * <p>With a warm timeout ({@link RolloutSettings#warms}) a rollout begins in a warming phase, so
 * that B's first requests do not wait for its load: B gets neither a share nor copies; the first
 * collection that reports A sends B's LOAD to every subtask where A serves (reported loaded, or
 * with answers: the gauge may lag behind the counters) ({@link #takeCommands}), and the first share
 * (or the shadow copies) follows once they all report B loaded, or once the warm timeout has
 * passed. Where A is reported but serves nowhere (at zero, or before its first request) there is
 * nothing to warm alongside, and the rollout begins at once; where the job reports nothing of A
 * yet, the rollout waits for it until the warm timeout. A rollback or an abort sends B's UNLOAD to
 * the subtasks warmed, and the end (DONE, 100% B) sends A's there.
 *
 * <p>Finished rollouts keep their split (100% B or 100% A) until the operator removes them
 * ({@link #forget}), so a model stays on the version the rollout ended with whatever its version
 * policy would choose. Every change is written to the store with a decision and its reason, so a
 * restarted coordinator continues at the same step with the same baseline.
 */
public final class RolloutEngine {
    static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");
    static final Pattern VERSION = Pattern.compile("[1-9][0-9]{0,8}");
    /** How many canary steps a rollout may have. */
    static final int MAX_STEPS = 20;

    private final RolloutStore store;
    private final RolloutSettings settings;
    /** Decisions taken by this engine since it was made, by model and action (ROLLOUT_ prefix dropped, lower case). */
    private final java.util.Map<String, java.util.Map<String, Long>> decisionCounts = new java.util.TreeMap<>();
    /** LOADs and UNLOADs of B that the next published plan carries ({@link #takeCommands}). */
    private final List<SubtaskCommand> commands = new ArrayList<>();

    public RolloutEngine(RolloutStore store, RolloutSettings settings) {
        this.store = store;
        this.settings = settings;
    }

    public RolloutSettings settings() {
        return settings;
    }

    /**
     * What an operator asks for; null fields take the settings' defaults.
     *
     * @param stepsPercent B's share per canary step in percent, ascending, the last 100
     */
    public record Request(String model, String from, String to, Rollout.Mode mode, List<Double> stepsPercent,
            Double shadowFraction, Rollout.AfterShadow afterShadow) {}

    // ---- the operator's requests ------------------------------------------------------------

    /** Starts a rollout; refused (409) while the model has an active one. */
    public synchronized Rollout start(Request r, long now) throws RolloutException {
        if (r.model() == null || !NAME.matcher(r.model()).matches()) {
            throw new RolloutException(400, "model must match " + NAME.pattern());
        }
        if (r.from() == null || !VERSION.matcher(r.from()).matches() || r.to() == null
                || !VERSION.matcher(r.to()).matches()) {
            throw new RolloutException(400, "from and to must be versions (positive integers)");
        }
        if (r.from().equals(r.to())) {
            throw new RolloutException(400, "from and to must be different versions");
        }
        Rollout.Mode mode = r.mode() == null ? Rollout.Mode.CANARY : r.mode();
        List<Double> steps = settings.defaultSteps();
        if (r.stepsPercent() != null) {
            steps = new ArrayList<>();
            for (Double p : r.stepsPercent()) {
                steps.add(p == null ? Double.NaN : p / 100);
            }
            String bad = checkSteps(steps);
            if (bad != null) {
                throw new RolloutException(400, "steps: " + bad);
            }
        }
        double shadow = r.shadowFraction() == null ? settings.defaultShadowFraction() : r.shadowFraction();
        if (!(shadow > 0 && shadow <= 1)) {
            throw new RolloutException(400, "shadow_fraction must be in (0, 1]");
        }
        if (mode == Rollout.Mode.CANARY && (r.shadowFraction() != null || r.afterShadow() != null)) {
            throw new RolloutException(400, "shadow_fraction and after_shadow are for mode shadow");
        }
        Rollout.AfterShadow after = r.afterShadow() == null ? settings.defaultAfterShadow() : r.afterShadow();
        Rollout current = store.rollouts().get(r.model());
        if (current != null && current.state().active()) {
            throw new RolloutException(409, "model '" + r.model() + "' has an active rollout (" + current.describe()
                    + "); pause, abort or wait for it");
        }
        Rollout started = new Rollout(r.model(), r.from(), r.to(), mode, steps,
                mode == Rollout.Mode.SHADOW ? shadow : 0, mode == Rollout.Mode.SHADOW ? after : null, State.RUNNING,
                settings.warms() ? Phase.WARMING : Rollout.firstPhase(mode), 0, now, now, null, now, null, null);
        String why = "started: " + started.describe() + (settings.warms() ? String.format(Locale.ROOT,
                " (%s loaded where %s is, at most %d s)", r.to(), r.from(), settings.warmTimeout().toSeconds()) : "")
                + (mode == Rollout.Mode.SHADOW
                ? ", then " + (after == Rollout.AfterShadow.CANARY ? "canary steps " + percents(steps) : "done")
                : ", steps " + percents(steps)) + "; each step judged after " + settings.minDwell().toSeconds()
                + " s and " + settings.minSamples() + " answers per version";
        Rollout saved = started.withReason(now, why);
        save(saved, "ROLLOUT_START", why, now);
        return saved;
    }

    /** Holds a running rollout at its step (its split stays); nothing is judged until {@link #resume}. */
    public synchronized Rollout pause(String model, long now) throws RolloutException {
        Rollout r = existing(model);
        if (r.state() != State.RUNNING) {
            throw new RolloutException(409, "the rollout of '" + model + "' is " + r.state() + ", not RUNNING");
        }
        String why = "paused by the operator at " + r.describe().replace("paused at ", "");
        Rollout paused = r.withState(State.PAUSED, now, why);
        save(paused, "ROLLOUT_PAUSE", why, now);
        return paused;
    }

    /**
     * Continues a paused rollout at its step. The step's dwell time and samples start again: what
     * the versions did while the rollout was held is not judged.
     */
    public synchronized Rollout resume(String model, long now) throws RolloutException {
        Rollout r = existing(model);
        if (r.state() != State.PAUSED) {
            throw new RolloutException(409, "the rollout of '" + model + "' is " + r.state() + ", not PAUSED");
        }
        Rollout running = r.with(State.RUNNING, r.phase(), r.step(), now, null, now, null);
        String why = "resumed by the operator at " + running.describe() + "; the step's dwell and samples start again";
        running = running.withReason(now, why);
        save(running, "ROLLOUT_RESUME", why, now);
        return running;
    }

    /** Ends an active rollout with A serving 100%. */
    public synchronized Rollout abort(String model, long now) throws RolloutException {
        Rollout r = existing(model);
        if (!r.state().active()) {
            throw new RolloutException(409, "the rollout of '" + model + "' is " + r.state() + ", not active");
        }
        String why = "aborted by the operator at " + r.describe().replace("paused at ", "") + "; 100% to " + r.from()
                + unloadWarmed(r, r.to(), "aborted");
        Rollout aborted = r.withState(State.ABORTED, now, why);
        save(aborted, "ROLLOUT_ABORT", why, now);
        return aborted;
    }

    /** Removes a finished rollout and its split: the model's version policy chooses again. */
    public synchronized Rollout forget(String model, long now) throws RolloutException {
        Rollout r = existing(model);
        if (r.state().active()) {
            throw new RolloutException(409, "the rollout of '" + model + "' is " + r.state()
                    + "; abort it before removing it");
        }
        store.removeRollout(model);
        store.appendDecisions(List.of(new Decision(now, "ROLLOUT_FORGET", model, null, "removed the finished "
                + r.describe() + "; the version policy serves '" + model + "' again")));
        count(model, "ROLLOUT_FORGET");
        return r;
    }

    public synchronized Optional<Rollout> get(String model) {
        return Optional.ofNullable(store.rollouts().get(model));
    }

    public synchronized List<Rollout> all() {
        return List.copyOf(store.rollouts().values());
    }

    /** Every rollout's split, in model order: what each plan carries. */
    public synchronized List<VersionSplit> splits() {
        List<VersionSplit> out = new ArrayList<>();
        store.rollouts().values().forEach(r -> out.add(r.split()));
        return out;
    }

    // ---- judging ----------------------------------------------------------------------------

    /**
     * Judges every running rollout on one collection. Returns whether a split changed (a step
     * began, a rollout ended); the coordinator then publishes a plan.
     */
    public synchronized boolean advance(MetricSnapshot snapshot, long now) {
        boolean changed = false;
        for (Rollout r : store.rollouts().values()) {
            if (r.state() == State.RUNNING) {
                changed |= advance(r, snapshot, now);
            }
        }
        return changed;
    }

    private boolean advance(Rollout r, MetricSnapshot snapshot, long now) {
        if (r.phase() == Phase.WARMING) {
            return warm(r, snapshot, now);
        }
        Counts counts = counts(snapshot, r);
        if (r.baseline() == null) {
            store.putRollout(r.withBaseline(counts, now, "measuring from " + describe(counts, r)));
            return false;
        }
        if (counts.wentBack(r.baseline())) {
            String why = "the counters of " + r.model() + " went back (" + describe(r.baseline(), r) + " -> "
                    + describe(counts, r) + "): the job restarted; the step's samples start again";
            save(r.withBaseline(counts, now, why), "ROLLOUT_RESET", why, now);
            return false;
        }
        Counts step = counts.minus(r.baseline());
        long dwell = now - r.stepStartedAtMillis();
        boolean shadow = r.phase() == Phase.SHADOW;
        String bName = r.to() + (shadow ? " (shadow)" : "");
        if (dwell < settings.minDwell().toMillis() || step.fromResponses() < settings.minSamples()
                || step.toResponses() < settings.minSamples()) {
            if (guarded(r, snapshot, step, bName, dwell, now) || failingEarly(r, step, bName, dwell, now)) {
                return true;
            }
            store.putRollout(r.withReason(now, String.format(Locale.ROOT,
                    "waiting at %s: %.1f s of %d s, answers %s %.0f and %s %.0f of %d each", r.describe(),
                    dwell / 1000.0, settings.minDwell().toSeconds(), r.from(), step.fromResponses(), bName,
                    step.toResponses(), settings.minSamples())));
            return false;
        }
        VersionComparison.Verdict verdict = VersionComparison.compare(r.from(), bName, step.fromResponses(),
                step.fromErrors(), step.toResponses(), step.toErrors(), settings.significance(),
                settings.latencyTolerance(), latencies(snapshot, r, step, bName));
        String tooFew = tooFewBatches(r, step, bName);
        String unjudged = "";
        if (!verdict.worse() && tooFew != null) {
            long maxWait = settings.latencyMaxWait().toMillis();
            if (dwell < maxWait) {
                if (guarded(r, snapshot, step, bName, dwell, now)) {
                    return true;
                }
                store.putRollout(r.withReason(now, String.format(Locale.ROOT,
                        "waiting at %s for its latency to be judged: %s (%.1f s of at most %d s, "
                        + "coordinator.rollout.latency-max-wait); so far %s", r.describe(), tooFew, dwell / 1000.0,
                        settings.latencyMaxWait().toSeconds(), verdict.reason())));
                return false;
            }
            unjudged = maxWait > 0 ? String.format(Locale.ROOT, " (latency not judged within coordinator.rollout"
                    + ".latency-max-wait, %d s)", settings.latencyMaxWait().toSeconds()) : "";
        }
        String at = r.describe() + String.format(Locale.ROOT, " after %.1f s%s: ", dwell / 1000.0, unjudged);
        if (verdict.worse()) {
            rollBack(r, at + bName + " is worse (" + (verdict.errorsWorse() && verdict.latencyWorse()
                    ? "error rate and latency" : verdict.errorsWorse() ? "error rate" : "latency") + "): "
                    + verdict.reason(), now);
            return true;
        }
        Rollout next = promoted(r, counts, now);
        String why = at + bName + " is not worse: " + verdict.reason() + "; " + (next.state() == State.DONE
                ? "done: " + next.describe() + unloadWarmed(r, r.from(), "done") : "next: " + next.describe());
        save(next.withReason(now, why), next.state() == State.DONE ? "ROLLOUT_DONE" : "ROLLOUT_PROMOTE", why, now);
        return true;
    }

    /**
     * The latency guard ({@link RolloutSettings#latencyGuard}) on a step not judged yet: rolls B back
     * and returns true where both versions ran {@link RolloutSettings#latencyGuardBatches} batches in
     * the step and B's batch time at their common batch size by the latency fits exceeds A's times the
     * guard.
     */
    private boolean guarded(Rollout r, MetricSnapshot snapshot, Counts step, String bName, long dwell, long now) {
        long minBatches = settings.latencyGuardBatches();
        if (settings.latencyGuard() == 0 || step.fromBatches() < minBatches || step.toBatches() < minBatches) {
            return false;
        }
        double[] mean = meanBatchSize(snapshot, r);
        if (!Double.isFinite(mean[0]) || !Double.isFinite(mean[1])) {
            return false;
        }
        int common = commonBatchSize(mean);
        double[] fit = fittedBatchUs(snapshot, r, common);
        if (!(fit[0] > 0 && fit[1] > fit[0] * settings.latencyGuard())) {
            return false;
        }
        rollBack(r, beforeJudged(r, dwell, bName, "latency guard") + String.format(Locale.ROOT, "batch time at %d "
                + "sample%s (latency fit) %s %.0f us > %s %.0f us x %.2f (coordinator.rollout.latency-guard; %s ran "
                + "%.0f and %s %.0f batches in the step)", common, common == 1 ? "" : "s", bName, fit[1], r.from(),
                fit[0], settings.latencyGuard(), r.from(), step.fromBatches(), bName, step.toBatches()), now);
        return true;
    }

    /**
     * The early look at error rates ({@link RolloutSettings#earlySignificance}) on a step before its
     * dwell and samples are complete: rolls B back and returns true where the exact one-sided test
     * of "B's error rate is above A's" on the step's counts is below the early level.
     */
    private boolean failingEarly(Rollout r, Counts step, String bName, long dwell, long now) {
        double level = settings.earlySignificance();
        if (level == 0 || !(step.toErrors() > 0) || !(step.toResponses() > 0)
                || step.toErrors() > step.toResponses() || step.fromErrors() > step.fromResponses()
                || step.fromErrors() < 0) {
            return false; // nothing to test, or counters that disagree (a report taken mid-update)
        }
        double p = VersionComparison.exactUpperTail(step.fromResponses(), step.fromErrors(), step.toResponses(),
                step.toErrors());
        if (!(p < level)) {
            return false;
        }
        rollBack(r, beforeJudged(r, dwell, bName, "error rate, early") + VersionComparison.errorCounts(r.from(),
                bName, step.fromResponses(), step.fromErrors(), step.toResponses(), step.toErrors())
                + String.format(Locale.ROOT, ": exact one-sided p = %.3g < %.3g "
                        + "(coordinator.rollout.early-significance)", p, level), now);
        return true;
    }

    /**
     * The start of a reason for a rollback before the step was judged:
     * {@code ... after 4.0 s, before it was judged: 2 is worse (why): }.
     */
    private static String beforeJudged(Rollout r, long dwell, String bName, String why) {
        return r.describe() + String.format(Locale.ROOT, " after %.1f s, before it was judged: %s is worse (%s): ",
                dwell / 1000.0, bName, why);
    }

    /** Ends {@code r} ROLLED_BACK (100% A, B's UNLOAD where it was warmed) with {@code reason}'s decision. */
    private void rollBack(Rollout r, String reason, long now) {
        String why = reason + "; rolled back to 100% " + r.from() + unloadWarmed(r, r.to(), "rolled back");
        save(r.with(State.ROLLED_BACK, r.phase(), r.step(), r.stepStartedAtMillis(), r.baseline(), now, why),
                "ROLLOUT_ROLLBACK", why, now);
    }

    // ---- warming ----------------------------------------------------------------------------

    /**
     * One collection of a rollout in its warming phase: the first that reports A sends B's LOAD
     * where A serves; B's traffic begins once every subtask sent one reports B loaded, or after the
     * warm timeout. Returns whether the split changed or commands are to go out.
     */
    private boolean warm(Rollout r, MetricSnapshot snapshot, long now) {
        Set<Integer> loadedB = loadedOn(snapshot, r.model(), r.to());
        double waited = (now - r.stepStartedAtMillis()) / 1000.0;
        boolean timedOut = now - r.stepStartedAtMillis() >= settings.warmTimeout().toMillis();
        if (r.warmedOn() == null) {
            List<Integer> targets = List.copyOf(servingOn(snapshot, r.model(), r.from()));
            if (targets.isEmpty()) {
                if (!reports(snapshot, r.model(), r.from()) && !timedOut) {
                    store.putRollout(r.withReason(now, String.format(Locale.ROOT, "warming %s: waiting for the job "
                            + "to report %s (%.1f s of at most %d s)", r.to(), r.from(), waited,
                            settings.warmTimeout().toSeconds())));
                    return false;
                }
                return begin(r.withWarmedOn(List.of(), now, null), now, "no subtask reports " + r.from()
                        + " loaded or serving, so " + r.to() + " is not warmed alongside it");
            }
            for (int subtask : targets) {
                commands.add(new SubtaskCommand(subtask, SubtaskCommand.Action.LOAD, r.model(), r.to(),
                        "rollout " + r.from() + " -> " + r.to() + ": warm " + r.to() + " before its first requests"));
            }
            String why = String.format(Locale.ROOT, "LOAD %s on subtask(s) %s, where %s serves; its first %s "
                    + "once they report it loaded (at most %d s)", r.to(), targets, r.from(),
                    r.mode() == Rollout.Mode.SHADOW ? "shadow copies" : "share", settings.warmTimeout().toSeconds());
            Rollout warming = r.withWarmedOn(targets, now, why);
            save(warming, "ROLLOUT_WARM", why, now);
            if (loadedB.containsAll(targets)) {
                begin(warming, now, r.to() + " already reported loaded on " + targets);
            }
            return true;
        }
        List<Integer> missing = new ArrayList<>(r.warmedOn());
        missing.removeAll(loadedB);
        if (missing.isEmpty()) {
            return begin(r, now, String.format(Locale.ROOT, "%s reported loaded on %s after %.1f s", r.to(),
                    r.warmedOn(), waited));
        }
        if (timedOut) {
            return begin(r, now, String.format(Locale.ROOT, "%s not reported loaded on %s within %.1f s "
                    + "(coordinator.plan.warm-timeout): it gets traffic anyway, and loads on its first request there",
                    r.to(), missing, waited));
        }
        store.putRollout(r.withReason(now, String.format(Locale.ROOT, "warming %s: %.1f s of at most %d s, not "
                + "yet reported loaded on %s", r.to(), waited, settings.warmTimeout().toSeconds(), missing)));
        return false;
    }

    /** Ends the warming phase: B's first share or shadow copies begin now, measured from the next collection. */
    private boolean begin(Rollout r, long now, String warmed) {
        Rollout begun = r.with(State.RUNNING, r.firstPhase(), 0, now, null, now, null);
        String why = warmed + "; begins " + begun.describe();
        save(begun.withReason(now, why), "ROLLOUT_WARMED", why, now);
        return true;
    }

    /** The subtasks that report {@code version} of {@code model} loaded. */
    static Set<Integer> loadedOn(MetricSnapshot snapshot, String model, String version) {
        return subtasks(snapshot, model, version, ModelSample::reportsLoaded);
    }

    /**
     * The subtasks where {@code version} of {@code model} is reported loaded or has answered
     * requests: where it serves, even where its {@code loaded} gauge lags behind its counters.
     */
    static Set<Integer> servingOn(MetricSnapshot snapshot, String model, String version) {
        return subtasks(snapshot, model, version, m -> m.reportsLoaded() || m.responsesOut() > 0);
    }

    /** Whether any subtask reports metrics of {@code version} of {@code model} at all. */
    static boolean reports(MetricSnapshot snapshot, String model, String version) {
        return !subtasks(snapshot, model, version, m -> true).isEmpty();
    }

    private static Set<Integer> subtasks(MetricSnapshot snapshot, String model, String version,
            java.util.function.Predicate<ModelSample> test) {
        Set<Integer> out = new TreeSet<>();
        for (SubtaskSample s : snapshot.subtasks()) {
            for (ModelSample m : s.models()) {
                if (m.model().equals(model) && m.version().equals(version) && test.test(m)) {
                    out.add(s.subtask());
                }
            }
        }
        return out;
    }

    /**
     * Queues {@code version}'s UNLOAD where the rollout warmed B (where A served): B's after a
     * rollback or an abort, A's once B serves 100% (DONE), so that neither stays pinned on a device
     * for a share it no longer has. The words for the decision ("" where none).
     */
    private String unloadWarmed(Rollout r, String version, String what) {
        if (r.warmedOn() == null || r.warmedOn().isEmpty()) {
            return "";
        }
        for (int subtask : r.warmedOn()) {
            commands.add(new SubtaskCommand(subtask, SubtaskCommand.Action.UNLOAD, r.model(), version,
                    "rollout " + r.from() + " -> " + r.to() + " " + what));
        }
        return "; UNLOAD " + version + " from subtask(s) " + r.warmedOn();
    }

    /** The LOADs and UNLOADs queued since the last call, for the next plan; the queue is emptied. */
    public synchronized List<SubtaskCommand> takeCommands() {
        List<SubtaskCommand> out = List.copyOf(commands);
        commands.clear();
        return out;
    }

    /** How many running rollouts wait in their warming phase (the coordinator checks sooner while any does). */
    public synchronized int warming() {
        return (int) store.rollouts().values().stream()
                .filter(r -> r.state() == State.RUNNING && r.phase() == Phase.WARMING).count();
    }

    /** The step after {@code r}'s: the next canary share, or DONE once B's share reaches 100%. */
    private static Rollout promoted(Rollout r, Counts counts, long now) {
        if (r.phase() == Phase.SHADOW) {
            if (r.afterShadow() == Rollout.AfterShadow.FINISH) {
                return r.with(State.DONE, Phase.SHADOW, 0, now, counts, now, null);
            }
            return r.steps().get(0) >= 1 ? r.with(State.DONE, Phase.CANARY, 0, now, counts, now, null)
                    : r.with(State.RUNNING, Phase.CANARY, 0, now, counts, now, null);
        }
        int next = r.step() + 1;
        return r.steps().get(next) >= 1 ? r.with(State.DONE, Phase.CANARY, next, now, counts, now, null)
                : r.with(State.RUNNING, Phase.CANARY, next, now, counts, now, null);
    }

    /** A's and B's responses, errors and batches summed over the subtasks (NaN counts as 0). */
    static Counts counts(MetricSnapshot snapshot, Rollout r) {
        double[] c = new double[6];
        for (SubtaskSample s : snapshot.subtasks()) {
            for (ModelSample m : s.models()) {
                if (!m.model().equals(r.model())) {
                    continue;
                }
                int at = m.version().equals(r.from()) ? 0 : m.version().equals(r.to()) ? 2 : -1;
                if (at >= 0) {
                    c[at] += finite(m.responsesOut());
                    c[at + 1] += finite(m.errors());
                    c[4 + at / 2] += finite(m.batches());
                }
            }
        }
        return new Counts(c[0], c[1], c[2], c[3], c[4], c[5]);
    }

    /**
     * What B's latency is judged on against A's within a step (each B's above A's times
     * {@code 1 + tolerance} is worse):
     *
     * <ul>
     *   <li>Each version's batch time at a common batch size, from its latency fit
     *       ({@code alpha + beta * b}, the batcher's own model of the version's batch times on the
     *       device), where both report one: {@code b} is the smaller of the versions' mean batch
     *       sizes. A batch's time grows with its size, and the versions' batches differ in size for
     *       reasons that are not theirs: a canary's small share makes B's batches small; while a slow
     *       B holds the execution thread A's requests queue and A's next batch is large (and slow),
     *       which would let a slow B pass a comparison of whole batches; at a late step B has most of
     *       the traffic and the larger batches. At one size neither happens.
     *   <li>The p99 of the batches' service time where both versions report it ({@link #p99}; of the
     *       batches' whole run otherwise), which sees a slow tail that a fit (Theil-Sen, robust to
     *       outliers) does not. Not compared where B's batches are on average the larger and the fits
     *       were compared, as a larger batch's p99 is higher whatever the version.
     * </ul>
     *
     * Neither is compared while either version ran fewer than
     * {@link RolloutSettings#latencyMinBatches} batches in the step; {@link #advance} then holds a
     * step that is not worse by error rate, for at most {@link RolloutSettings#latencyMaxWait}.
     */
    List<VersionComparison.Latency> latencies(MetricSnapshot snapshot, Rollout r, Counts step, String bName) {
        String tooFew = tooFewBatches(r, step, bName);
        double[] service = p99(snapshot, r, ModelSample::serviceLatencyUsP99);
        boolean byService = Double.isFinite(service[0]) && Double.isFinite(service[1]);
        double[] p99 = byService ? service : p99(snapshot, r, ModelSample::inferenceLatencyUsP99);
        String p99Name = byService ? "service p99" : "p99";
        double[] mean = meanBatchSize(snapshot, r);
        if (!Double.isFinite(mean[0]) || !Double.isFinite(mean[1])) {
            return List.of(new VersionComparison.Latency(p99Name, p99[0], p99[1], tooFew));
        }
        int common = commonBatchSize(mean);
        double[] fit = fittedBatchUs(snapshot, r, common);
        boolean fitted = fit[0] > 0 && fit[1] > 0;
        List<VersionComparison.Latency> out = new ArrayList<>();
        if (fitted) {
            out.add(new VersionComparison.Latency(String.format(Locale.ROOT, "batch time at %d sample%s (latency fit)",
                    common, common == 1 ? "" : "s"), fit[0], fit[1], tooFew));
        }
        String larger = fitted && mean[1] > mean[0] ? String.format(Locale.ROOT,
                "%s's batches are the larger, %.2f samples on average against %s's %.2f", bName, mean[1], r.from(),
                mean[0]) : null;
        out.add(new VersionComparison.Latency(p99Name, p99[0], p99[1], tooFew != null ? tooFew : larger));
        return out;
    }

    /**
     * Why the versions' latencies cannot be compared yet (either ran fewer than
     * {@link RolloutSettings#latencyMinBatches} batches in the step); null where they can.
     */
    private String tooFewBatches(Rollout r, Counts step, String bName) {
        long minBatches = settings.latencyMinBatches();
        return step.fromBatches() < minBatches || step.toBatches() < minBatches
                ? String.format(Locale.ROOT, "%s ran %.0f and %s %.0f batches in the step, fewer than %d", r.from(),
                        step.fromBatches(), bName, step.toBatches(), minBatches)
                : null;
    }

    /**
     * A's and B's mean batch size over the subtasks where the version answered, weighted by the
     * batches each ran; NaN where none reports one.
     */
    static double[] meanBatchSize(MetricSnapshot snapshot, Rollout r) {
        double[] sum = new double[2];
        double[] weight = new double[2];
        for (SubtaskSample s : snapshot.subtasks()) {
            for (ModelSample m : s.models()) {
                int at = versionIndex(r, m);
                if (at < 0 || !(finite(m.responsesOut()) > 0) || !(m.batchSizeMean() > 0)) {
                    continue;
                }
                double w = Math.max(1, finite(m.batches()));
                sum[at] += w * m.batchSizeMean();
                weight[at] += w;
            }
        }
        return new double[] {weight[0] > 0 ? sum[0] / weight[0] : Double.NaN,
                weight[1] > 0 ? sum[1] / weight[1] : Double.NaN};
    }

    /** The batch size the versions' fits are compared at: the smaller of their mean batch sizes, at least 1. */
    static int commonBatchSize(double[] meanBatchSize) {
        return (int) Math.max(1, Math.round(Math.min(meanBatchSize[0], meanBatchSize[1])));
    }

    /**
     * A's and B's batch time in microseconds at {@code batchSize} by their latency fits: the highest
     * over the subtasks where the version answered and reports a fit; NaN where none does. The fits
     * are the batcher's, of the batches' whole run: on a device shared by several execution threads
     * that runs batches one after another (the simulated GPU), A's fit includes its batches' wait
     * behind B's, and there the service p99 is what sees a slow B.
     */
    static double[] fittedBatchUs(MetricSnapshot snapshot, Rollout r, int batchSize) {
        return p99(snapshot, r, m -> m.latencyModelAlphaUs() + m.latencyModelBetaUs() * batchSize);
    }

    /** 0 for a sample of the rollout's A, 1 for its B, -1 for anything else. */
    private static int versionIndex(Rollout r, ModelSample m) {
        if (!m.model().equals(r.model())) {
            return -1;
        }
        return m.version().equals(r.from()) ? 0 : m.version().equals(r.to()) ? 1 : -1;
    }

    /**
     * A's and B's p99 batch latency as {@code latency} reads it from a sample (or any other reading):
     * the highest over the subtasks where the version answered; NaN if none. The engine compares the service-time p99
     * (a batch's run less its wait for a device busy with other batches) where both versions report
     * it: on a device that runs batches one after another, A's batches queue behind a slow B's and
     * their whole run time rises with B's, which would hide B's slowness.
     */
    static double[] p99(MetricSnapshot snapshot, Rollout r, java.util.function.ToDoubleFunction<ModelSample> latency) {
        double[] p = {Double.NaN, Double.NaN};
        for (SubtaskSample s : snapshot.subtasks()) {
            for (ModelSample m : s.models()) {
                int at = versionIndex(r, m);
                double value = latency.applyAsDouble(m);
                if (at >= 0 && finite(m.responsesOut()) > 0 && Double.isFinite(value)) {
                    p[at] = Double.isNaN(p[at]) ? value : Math.max(p[at], value);
                }
            }
        }
        return p;
    }

    private static double finite(double d) {
        return Double.isFinite(d) ? d : 0;
    }

    private static String describe(Counts c, Rollout r) {
        return String.format(Locale.ROOT, "%s %.0f answers (%.0f errors), %s %.0f (%.0f)", r.from(), c.fromResponses(),
                c.fromErrors(), r.to(), c.toResponses(), c.toErrors());
    }

    private Rollout existing(String model) throws RolloutException {
        if (model == null || !NAME.matcher(model).matches()) {
            throw new RolloutException(400, "model must match " + NAME.pattern());
        }
        Rollout r = store.rollouts().get(model);
        if (r == null) {
            throw new RolloutException(404, "model '" + model + "' has no rollout");
        }
        return r;
    }

    private void save(Rollout r, String action, String why, long now) {
        store.putRollout(r);
        store.appendDecisions(List.of(new Decision(now, action, r.model(), null, why)));
        count(r.model(), action);
    }

    private void count(String model, String action) {
        decisionCounts.computeIfAbsent(model, m -> new java.util.TreeMap<>())
                .merge(action.replaceFirst("^ROLLOUT_", "").toLowerCase(Locale.ROOT), 1L, Long::sum);
    }

    /**
     * The decisions this engine took since it was made (not since the store began: a restarted
     * coordinator counts from 0, as Prometheus counters do), by model and then by action in lower
     * case without its ROLLOUT_ prefix: start, promote, done, rollback, pause, resume, abort,
     * reset, forget.
     */
    public synchronized java.util.Map<String, java.util.Map<String, Long>> decisionCounts() {
        java.util.Map<String, java.util.Map<String, Long>> copy = new java.util.TreeMap<>();
        decisionCounts.forEach((m, c) -> copy.put(m, new java.util.TreeMap<>(c)));
        return copy;
    }

    /** Null where {@code steps} (fractions) is a valid step list, else what is wrong with it. */
    static String checkSteps(List<Double> steps) {
        if (steps == null || steps.isEmpty()) {
            return "give at least one step";
        }
        if (steps.size() > MAX_STEPS) {
            return "at most " + MAX_STEPS + " steps";
        }
        double before = 0;
        for (Double s : steps) {
            if (s == null || !Double.isFinite(s) || s <= before || s > 1) {
                return "shares must ascend within (0, 100] percent";
            }
            before = s;
        }
        if (steps.get(steps.size() - 1) != 1.0) {
            return "the last step must be 100 percent";
        }
        if (steps.size() < 2) {
            return "give at least one step below 100 percent, so that B is compared with A";
        }
        return null;
    }

    private static String percents(List<Double> steps) {
        List<String> p = new ArrayList<>();
        steps.forEach(s -> p.add(Rollout.percent(s) + "%"));
        return String.join(" -> ", p);
    }
}
