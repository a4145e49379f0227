package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.StreamAnswers;
import io.flinkgpu.coordinator.plan.Decision;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.HdrHistogram.Histogram;

/**
 * Turns what one configuration of the load ramp measured into its entry of {@code ramp.json}:
 * SLO attainment overall and per phase, p99 per 1-s window of intended send time, the model's
 * replicas in the plan in force and the subtasks that actually served it per control-loop cycle,
 * the replica changes, their reversals, and the coordinator's decisions.
 */
final class RampAnalysis {
    /** One phase's requests: sent, answered without error within the SLO, and that share. */
    record PhaseAttainment(String phase, long sent, long withinSlo) {
        double attainment() {
            return sent == 0 ? Double.NaN : (double) withinSlo / sent;
        }
    }

    /** The replica count going from {@code from} to {@code to} at {@code t} seconds from the start. */
    record Change(double t, int from, int to) {}

    private final RampProfile profile;
    private final double sloMs;

    RampAnalysis(RampProfile profile, double sloMs) {
        this.profile = profile;
        this.sloMs = sloMs;
    }

    /**
     * Per phase of {@code profile} (then "overall" last): the requests whose intended send time
     * {@code t[i]} (seconds from the start) falls in it, and those answered without error within
     * {@code sloMs} ({@code latencyMs[i]} NaN: unanswered or an error, never within).
     */
    static List<PhaseAttainment> attainment(RampProfile profile, double[] t, double[] latencyMs, double sloMs) {
        int phases = RampProfile.PHASES.size();
        long[] sent = new long[phases];
        long[] good = new long[phases];
        for (int i = 0; i < t.length; i++) {
            if (t[i] < 0 || t[i] >= profile.total()) {
                continue;
            }
            int p = profile.phaseAt(t[i]);
            sent[p]++;
            if (latencyMs[i] <= sloMs) {
                good[p]++;
            }
        }
        List<PhaseAttainment> out = new ArrayList<>();
        long allSent = 0;
        long allGood = 0;
        for (int p = 0; p < phases; p++) {
            out.add(new PhaseAttainment(profile.names().get(p), sent[p], good[p]));
            allSent += sent[p];
            allGood += good[p];
        }
        out.add(new PhaseAttainment("overall", allSent, allGood));
        return out;
    }

    /** The changes in a replica count observed at times {@code t} (ascending). */
    static List<Change> changes(double[] t, int[] replicas) {
        List<Change> out = new ArrayList<>();
        for (int i = 1; i < replicas.length; i++) {
            if (replicas[i] != replicas[i - 1]) {
                out.add(new Change(t[i], replicas[i - 1], replicas[i]));
            }
        }
        return out;
    }

    /**
     * Reversals among {@code changes}: a change in the opposite direction of the one before it (up
     * then down, or down then up). One scale-out on a ramp up and one scale-in after it is one.
     */
    static int reversals(List<Change> changes) {
        int reversals = 0;
        int last = 0;
        for (Change c : changes) {
            int direction = Integer.signum(c.to() - c.from());
            if (last != 0 && direction != last) {
                reversals++;
            }
            last = direction;
        }
        return reversals;
    }

    /** The first window index at or after {@code from} that violates, or -1. */
    static int firstViolation(boolean[] violating, int from) {
        for (int i = Math.max(0, from); i < violating.length; i++) {
            if (violating[i]) {
                return i;
            }
        }
        return -1;
    }

    /** The entry of {@code run}, whose t0 is the start of the first phase. */
    ObjectNode analyse(RecoveryRun run) {
        int n = profile.total();
        Histogram[] windows = new Histogram[n];
        long[] errorsIn = new long[n];
        long[] unansweredIn = new long[n];
        for (int i = 0; i < n; i++) {
            windows[i] = new Histogram(300_000_000L, 3);
        }
        StreamAnswers answers = run.answers.get(0);
        int sent = answers.sent();
        double[] t = new double[sent];
        double[] latency = new double[sent];
        for (int seq = 0; seq < sent; seq++) {
            t[seq] = (answers.intendedNanos(seq) - run.t0Nanos) / 1e9;
            int k = (int) Math.floor(t[seq]);
            boolean inRun = k >= 0 && k < n;
            if (!answers.answered(seq)) {
                latency[seq] = Double.NaN;
                if (inRun) {
                    unansweredIn[k]++;
                }
            } else if (answers.errorCode(seq) != null) {
                latency[seq] = Double.NaN;
                if (inRun) {
                    errorsIn[k]++;
                }
            } else {
                latency[seq] = answers.latencyNanos(seq) / 1e6;
                if (inRun) {
                    windows[k].recordValue(Math.min(answers.latencyNanos(seq) / 1000,
                            windows[k].getHighestTrackableValue()));
                }
            }
        }
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.put("name", run.name);
        r.put("coordinator", run.coordinator);
        ArrayNode phases = r.putArray("phases");
        List<PhaseAttainment> attained = attainment(profile, t, latency, sloMs);
        boolean[] violating = new boolean[n];
        for (int i = 0; i < n; i++) {
            violating[i] = windows[i].getTotalCount() == 0 || RecoveryAnalysis.ms(windows[i], 99) > sloMs
                    || errorsIn[i] > 0 || unansweredIn[i] > 0;
        }
        for (int p = 0; p < attained.size(); p++) {
            PhaseAttainment a = attained.get(p);
            ObjectNode o = phases.addObject();
            o.put("phase", a.phase());
            boolean whole = p == RampProfile.PHASES.size();
            int from = whole ? 0 : (int) profile.phaseStart(p);
            int to = whole ? n : (int) profile.phaseStart(p + 1);
            o.put("from_s", from);
            o.put("to_s", to);
            o.put("sent", a.sent());
            o.put("within_slo", a.withinSlo());
            o.put("attainment", a.attainment());
            Histogram h = new Histogram(300_000_000L, 3);
            int out = 0;
            for (int k = from; k < to; k++) {
                h.add(windows[k]);
                out += violating[k] ? 1 : 0;
            }
            o.put("p99_ms", RecoveryAnalysis.ms(h, 99));
            o.put("windows", to - from);
            o.put("windows_out_of_slo", out);
        }
        r.put("attainment", attained.get(attained.size() - 1).attainment());
        r.put("min_phase_attainment", attained.subList(0, RampProfile.PHASES.size()).stream()
                .mapToDouble(PhaseAttainment::attainment).min().orElse(Double.NaN));
        int rampStart = (int) profile.phaseStart(1);
        int first = firstViolation(violating, 0);
        r.put("first_violation_s", first < 0 ? null : (Integer) first);
        int firstOnRamp = firstViolation(violating, rampStart);
        r.put("first_violation_from_ramp_start_s", firstOnRamp < 0 ? null : (Integer) firstOnRamp);

        // replicas per cycle: in the plan in force (the coordinator's; 1 before any plan and for static), and the
        // subtasks whose request counter for the model grew since the cycle before (measured, both)
        List<RecoveryRun.Cycle> cycles = run.cycles;
        double[] ct = new double[cycles.size()];
        int[] planned = new int[cycles.size()];
        int[] serving = new int[cycles.size()];
        int inForce = 1;
        double[] previous = null;
        for (int i = 0; i < cycles.size(); i++) {
            RecoveryRun.Cycle c = cycles.get(i);
            ct[i] = c.atSecondsFromT0();
            if (c.published() && !c.steppedTargets().isEmpty()) {
                inForce = replicas(c.steppedTargets());
            }
            planned[i] = inForce;
            double[] in = c.steppedRequestsIn();
            int s = 0;
            for (int k = 0; k < in.length; k++) {
                s += previous != null && in[k] > previous[k] ? 1 : 0;
            }
            serving[i] = previous == null ? 0 : s;
            previous = in;
        }
        List<Change> changes = changes(ct, planned);
        r.put("reversals", reversals(changes));
        r.put("replica_changes_count", changes.size());
        ArrayNode ch = r.putArray("replica_changes");
        Change scaleOut = null;
        Change scaleIn = null;
        for (Change c : changes) {
            ObjectNode o = ch.addObject();
            o.put("t_s", round(c.t()));
            o.put("phase", profile.names().get(profile.phaseAt(c.t())));
            o.put("rate_per_s", round(profile.rateAt(c.t())));
            o.put("from", c.from());
            o.put("to", c.to());
            if (scaleOut == null && c.to() > c.from()) {
                scaleOut = c;
            } else if (scaleOut != null && scaleIn == null && c.to() < c.from()) {
                scaleIn = c;
            }
        }
        r.put("max_replicas", java.util.Arrays.stream(planned).max().orElse(1));
        putSeconds(r, "scale_out_s", scaleOut == null ? Double.NaN : scaleOut.t());
        putSeconds(r, "scale_out_rate_per_s", scaleOut == null ? Double.NaN : profile.rateAt(scaleOut.t()));
        putSeconds(r, "scale_in_s", scaleIn == null ? Double.NaN : scaleIn.t());
        putSeconds(r, "scale_in_after_ramp_down_end_s", scaleIn == null ? Double.NaN
                : scaleIn.t() - profile.phaseStart(4));
        r.put("replicas_at_end", planned.length == 0 ? 1 : planned[planned.length - 1]);

        ArrayNode w = r.putArray("windows");
        int c = 0;
        for (int k = 0; k < n; k++) {
            while (c + 1 < ct.length && ct[c + 1] <= k + 1) {
                c++;
            }
            ObjectNode o = w.addObject();
            o.put("t_s", k);
            o.put("rate_per_s", round(profile.rateAt(k + 0.5)));
            o.put("answered", windows[k].getTotalCount());
            o.put("p99_ms", RecoveryAnalysis.ms(windows[k], 99));
            o.put("errors", errorsIn[k]);
            o.put("unanswered", unansweredIn[k]);
            o.put("within_slo", !violating[k]);
            o.put("replicas", ct.length > 0 && ct[c] <= k + 1 ? planned[c] : 1);
        }
        r.put("sent", sent);
        r.put("answered", answers.answered());
        r.put("errors", answers.errors());
        r.put("lost", sent - answers.answered());
        r.put("load_average_start", run.loadAverageStart);
        r.put("load_average_end", run.loadAverageEnd);
        if (run.coordinator) {
            r.put("plans_published", cycles.stream().filter(RecoveryRun.Cycle::published).count());
            ArrayNode decisions = r.putArray("placement_decisions");
            long t0Millis = run.t0WallMillis;
            List<Decision> all = new ArrayList<>(run.decisionsBeforeStep);
            all.addAll(run.decisionsAfterStep);
            all.stream().filter(d -> Set.of("REPLICATE", "MOVE", "SCALE_IN", "EVICT", "UNLOAD", "LOAD")
                    .contains(d.action())).forEach(d -> {
                        ObjectNode o = decisions.addObject();
                        o.put("t_s", round((d.atMillis() - t0Millis) / 1000.0));
                        o.put("action", d.action());
                        o.put("model", d.model());
                        o.put("device", d.device());
                        o.put("reason", d.reason());
                    });
        }
        ArrayNode cy = r.putArray("cycles");
        for (int i = 0; i < cycles.size(); i++) {
            RecoveryRun.Cycle x = cycles.get(i);
            ObjectNode o = cy.addObject();
            o.put("t_s", round(x.atSecondsFromT0()));
            o.put("replicas_planned", planned[i]);
            o.put("subtasks_serving", serving[i]);
            if (run.coordinator) {
                o.put("published", x.published());
                o.put("rate_estimate", round(x.steppedRate()));
                o.put("load_estimate", round(x.steppedLoad()));
                o.put("targets", x.steppedTargets());
                if (x.reason() != null) {
                    o.put("plan", x.reason());
                }
            }
        }
        return r;
    }

    /** Targets with a positive weight in a route written as "subtask:weight,...". */
    static int replicas(String targets) {
        int n = 0;
        for (String t : targets.split(",")) {
            String[] p = t.split(":");
            if (p.length == 2 && Double.parseDouble(p[1]) > 0) {
                n++;
            }
        }
        return Math.max(1, n);
    }

    static double round(double v) {
        return Double.isFinite(v) ? Math.round(v * 1000) / 1000.0 : v;
    }

    static void putSeconds(ObjectNode o, String field, double seconds) {
        if (Double.isFinite(seconds)) {
            o.put(field, round(seconds));
        } else {
            o.putNull(field);
        }
    }
}
