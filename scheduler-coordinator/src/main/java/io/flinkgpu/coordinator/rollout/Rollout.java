package io.flinkgpu.coordinator.rollout;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import io.flinkgpu.contract.control.VersionSplit;
import java.util.List;
import java.util.Locale;

/**
 * One model's gray release from version {@code from} (A) to {@code to} (B), as the coordinator
 * keeps it in its state store: what was asked for and where it stands. A value; the
 * {@link RolloutEngine} replaces it as the rollout moves.
 *
 * @param steps B's share of the model's traffic at each canary step, ascending in (0, 1], the
 *     last 1 (reaching it ends the rollout)
 * @param shadowFraction in shadow mode, the share of requests copied to B
 * @param afterShadow in shadow mode, what a passed shadow phase leads to
 * @param phase SHADOW (B gets copies, no share) or CANARY (B gets {@code steps[step]})
 * @param step the canary step (0-based); 0 in the shadow phase
 * @param stepStartedAtMillis when the current step (or phase) began: the dwell time counts from it
 * @param baseline both versions' cumulative counts when the step's samples began, or null until
 *     the first collection of the step; a step's samples are the growth since
 * @param reason why the rollout is where it is (the last decision, or what it waits for)
 * @param warmedOn the inference subtasks the engine sent B's LOAD to in the warming phase (those
 *     where A served then), empty where it sent none; null until the warming phase's first
 *     collection (and in rollouts stored before warming existed). A rollback or an abort unloads B
 *     there, the end (DONE) unloads A there.
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record Rollout(String model, String from, String to, Mode mode, List<Double> steps, double shadowFraction,
        AfterShadow afterShadow, State state, Phase phase, int step, long startedAtMillis, long stepStartedAtMillis,
        Counts baseline, long updatedAtMillis, String reason, List<Integer> warmedOn) {

    /** CANARY: B serves a growing share; SHADOW: B answers copies that are compared and discarded first. */
    public enum Mode { CANARY, SHADOW }

    /** Where a passed shadow phase leads: into the canary steps, or straight to the end (100% B). */
    public enum AfterShadow { CANARY, FINISH }

    /**
     * WARMING: B is being loaded where A is, and gets neither a share nor copies until it is
     * reported loaded there (or the warm timeout passes); SHADOW: B gets copies, no share; CANARY:
     * B gets {@code steps[step]}.
     */
    public enum Phase { WARMING, SHADOW, CANARY }

    /**
     * RUNNING and PAUSED are active (one per model at a time); DONE: B serves 100%; ROLLED_BACK (B
     * was worse) and ABORTED (by the operator): A serves 100%.
     */
    public enum State {
        RUNNING, PAUSED, DONE, ROLLED_BACK, ABORTED;

        public boolean active() {
            return this == RUNNING || this == PAUSED;
        }
    }

    /** Cumulative responses, error answers and batches of A and B, summed over the inference subtasks. */
    public record Counts(double fromResponses, double fromErrors, double toResponses, double toErrors,
            double fromBatches, double toBatches) {
        /** Whether any counter is below {@code earlier}'s: the job restarted and its counters began again. */
        boolean wentBack(Counts earlier) {
            return fromResponses < earlier.fromResponses || fromErrors < earlier.fromErrors
                    || toResponses < earlier.toResponses || toErrors < earlier.toErrors
                    || fromBatches < earlier.fromBatches || toBatches < earlier.toBatches;
        }

        Counts minus(Counts earlier) {
            return new Counts(fromResponses - earlier.fromResponses, fromErrors - earlier.fromErrors,
                    toResponses - earlier.toResponses, toErrors - earlier.toErrors, fromBatches - earlier.fromBatches,
                    toBatches - earlier.toBatches);
        }
    }

    public Rollout {
        steps = steps == null ? List.of() : List.copyOf(steps);
        warmedOn = warmedOn == null ? null : List.copyOf(warmedOn);
    }

    /** The phase the rollout's traffic starts in once B is warm: SHADOW in shadow mode, else CANARY. */
    public Phase firstPhase() {
        return firstPhase(mode);
    }

    static Phase firstPhase(Mode mode) {
        return mode == Mode.SHADOW ? Phase.SHADOW : Phase.CANARY;
    }

    /** B's share of the traffic now: 0 in the shadow phase and after a rollback or abort, 1 when done. */
    public double toShare() {
        return switch (state) {
            case DONE -> 1;
            case ROLLED_BACK, ABORTED -> 0;
            default -> phase == Phase.CANARY ? steps.get(step) : 0;
        };
    }

    /** The version split the plans carry for this rollout. */
    public VersionSplit split() {
        double b = toShare();
        List<VersionSplit.VersionWeight> weights = b >= 1 ? List.of(new VersionSplit.VersionWeight(to, 1))
                : b <= 0 ? List.of(new VersionSplit.VersionWeight(from, 1))
                : List.of(new VersionSplit.VersionWeight(from, round(1 - b)), new VersionSplit.VersionWeight(to, round(b)));
        boolean shadowing = state.active() && phase == Phase.SHADOW;
        return new VersionSplit(model, weights, describe(), shadowing ? to : null, shadowing ? shadowFraction : 0);
    }

    /** Where the rollout stands, in words: "rollout 1 -> 2: step 2 of 4 (25% to 2)". */
    public String describe() {
        String head = "rollout " + from + " -> " + to + ": ";
        return head + switch (state) {
            case DONE -> "done (100% to " + to + ")";
            case ROLLED_BACK -> "rolled back (100% to " + from + ")";
            case ABORTED -> "aborted (100% to " + from + ")";
            default -> (state == State.PAUSED ? "paused at " : "")
                    + (phase == Phase.WARMING ? "warming " + to + " before its first "
                            + (mode == Mode.SHADOW ? "shadow copies" : "step")
                            : phase == Phase.SHADOW ? String.format(Locale.ROOT, "shadow (%s%% of requests copied to %s)",
                            percent(shadowFraction), to)
                            : String.format(Locale.ROOT, "step %d of %d (%s%% to %s)", step + 1, steps.size(),
                                    percent(steps.get(step)), to));
        };
    }

    static String percent(double share) {
        double p = share * 100;
        return p == Math.rint(p) ? String.valueOf((long) p) : String.format(Locale.ROOT, "%.2f", p);
    }

    private static double round(double w) {
        return Math.round(w * 1e6) / 1e6;
    }

    Rollout with(State newState, Phase newPhase, int newStep, long stepStarted, Counts newBaseline, long now,
            String why) {
        return new Rollout(model, from, to, mode, steps, shadowFraction, afterShadow, newState, newPhase, newStep,
                startedAtMillis, stepStarted, newBaseline, now, why, warmedOn);
    }

    Rollout withWarmedOn(List<Integer> subtasks, long now, String why) {
        return new Rollout(model, from, to, mode, steps, shadowFraction, afterShadow, state, phase, step,
                startedAtMillis, stepStartedAtMillis, baseline, now, why, subtasks);
    }

    Rollout withState(State newState, long now, String why) {
        return with(newState, phase, step, stepStartedAtMillis, baseline, now, why);
    }

    Rollout withBaseline(Counts newBaseline, long now, String why) {
        return with(state, phase, step, stepStartedAtMillis, newBaseline, now, why);
    }

    Rollout withReason(long now, String why) {
        return with(state, phase, step, stepStartedAtMillis, baseline, now, why);
    }
}
