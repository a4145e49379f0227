package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.StreamAnswers;
import io.flinkgpu.coordinator.plan.Decision;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.HdrHistogram.Histogram;

/**
 * Turns one case of the gray-release benchmark into its entry of {@code rollout.json}: the
 * rollout's decisions with their reasons, the time to 100% or to the rollback, answers, error
 * answers and answers over the SLO per version as the client received them, and the rollout's
 * state per control-loop cycle. A request B "answered badly" is one B answered with an error code
 * or, without one, later than the SLO after it was due to be sent.
 */
final class RolloutAnalysis {
    /** What the rollout was doing after one control-loop cycle, {@code t} seconds from the start. */
    record Point(double t, String state, String phase, int step, double toShare, String reason) {}

    /** The answers of one version: all, errors, and per error code. */
    static final class VersionAnswers {
        long answered;
        long errors;
        long overSlo;
        final Map<String, Long> codes = new TreeMap<>();
        final Histogram latency = new Histogram(300_000_000L, 3);

        double errorRate() {
            return answered == 0 ? 0 : (double) errors / answered;
        }
    }

    /** The actions that begin a step whose samples are judged. */
    private static final Set<String> STEP_BEGINS = Set.of("ROLLOUT_START", "ROLLOUT_WARMED", "ROLLOUT_PROMOTE",
            "ROLLOUT_RESUME", "ROLLOUT_RESET");

    private RolloutAnalysis() {}

    /** Seconds from the rollout's start to its {@code ROLLOUT_DONE}; NaN when it did not finish so. */
    static double timeToDone(List<Decision> rollout) {
        Decision start = first(rollout, "ROLLOUT_START");
        Decision done = first(rollout, "ROLLOUT_DONE");
        return start == null || done == null ? Double.NaN : (done.atMillis() - start.atMillis()) / 1000.0;
    }

    /** The first {@code ROLLOUT_ROLLBACK}, or null. */
    static Decision rollback(List<Decision> rollout) {
        return first(rollout, "ROLLOUT_ROLLBACK");
    }

    /**
     * Seconds from the beginning of the step that was rolled back (the last start, end of the warming,
     * promotion, resume or reset before the rollback) to the rollback; NaN without a rollback or a step before it.
     */
    static double timeToRollback(List<Decision> rollout) {
        Decision back = rollback(rollout);
        if (back == null) {
            return Double.NaN;
        }
        Decision begun = null;
        for (Decision d : rollout) {
            if (d.atMillis() <= back.atMillis() && STEP_BEGINS.contains(d.action())) {
                begun = d;
            }
        }
        return begun == null ? Double.NaN : (back.atMillis() - begun.atMillis()) / 1000.0;
    }

    /** Promotions before the rollback (0: rolled back from the first step); -1 without a rollback. */
    static int rolledBackStep(List<Decision> rollout) {
        Decision back = rollback(rollout);
        if (back == null) {
            return -1;
        }
        return (int) rollout.stream().filter(d -> d.action().equals("ROLLOUT_PROMOTE")
                && d.atMillis() <= back.atMillis()).count();
    }

    private static Decision first(List<Decision> rollout, String action) {
        return rollout.stream().filter(d -> d.action().equals(action)).findFirst().orElse(null);
    }

    /** Answers per version (by the version each answer names; "none" for an answer without one). */
    static Map<String, VersionAnswers> byVersion(StreamAnswers answers, double sloMs) {
        Map<String, VersionAnswers> out = new TreeMap<>();
        for (int seq = 0; seq < answers.sent(); seq++) {
            if (!answers.answered(seq)) {
                continue;
            }
            String v = answers.version(seq);
            VersionAnswers a = out.computeIfAbsent(v == null ? "none" : v, k -> new VersionAnswers());
            a.answered++;
            String code = answers.errorCode(seq);
            if (code != null) {
                a.errors++;
                a.codes.merge(code, 1L, Long::sum);
            } else {
                a.latency.recordValue(Math.min(answers.latencyNanos(seq) / 1000, a.latency.getHighestTrackableValue()));
                a.overSlo += answers.latencyNanos(seq) > sloMs * 1e6 ? 1 : 0;
            }
        }
        return out;
    }

    /**
     * The entry of one case: {@code from} and {@code to} the rollout's versions, {@code decisions} the
     * coordinator's ROLLOUT_* decisions, {@code timeline} its state per cycle, {@code sloMs} the
     * latency over which an answer counts as bad.
     */
    static ObjectNode analyse(RecoveryRun run, String mode, boolean badTo, String from, String to,
            List<Decision> decisions, List<Point> timeline, int seconds, double sloMs) {
        StreamAnswers answers = run.answers.get(0);
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.put("name", run.name);
        r.put("mode", mode);
        r.put("bad_version", badTo);
        r.put("from", from);
        r.put("to", to);
        Point last = timeline.isEmpty() ? null : timeline.get(timeline.size() - 1);
        r.put("final_state", last == null ? "unknown" : last.state());
        r.put("final_reason", last == null ? "" : last.reason());
        RampAnalysis.putSeconds(r, "time_to_100_percent_s", timeToDone(decisions));
        RampAnalysis.putSeconds(r, "time_to_rollback_s", timeToRollback(decisions));
        r.put("rolled_back_from_step", rolledBackStep(decisions));
        r.put("promotions", decisions.stream().filter(d -> d.action().equals("ROLLOUT_PROMOTE")).count());
        Decision back = rollback(decisions);
        // client side: the first request B answered, and B's bad answers (errors, answers over the SLO),
        // before and after the rollback
        double firstB = Double.NaN;
        long badB = 0;
        long errorB = 0;
        long slowB = 0;
        long badBSentAfterRollback = 0;
        long errorsAfterRollback = 0;
        long backNanos = back == null ? Long.MAX_VALUE
                : run.t0Nanos + (back.atMillis() - run.t0WallMillis) * 1_000_000L;
        long[] bPerSecond = new long[seconds];
        long[] answeredPerSecond = new long[seconds];
        long[] bErrorsPerSecond = new long[seconds];
        for (int seq = 0; seq < answers.sent(); seq++) {
            if (!answers.answered(seq)) {
                continue;
            }
            long intended = answers.intendedNanos(seq);
            double t = (intended - run.t0Nanos) / 1e9;
            int k = (int) Math.floor(t);
            boolean byB = to.equals(answers.version(seq));
            boolean error = answers.errorCode(seq) != null;
            boolean slow = !error && answers.latencyNanos(seq) > sloMs * 1e6;
            if (k >= 0 && k < seconds) {
                answeredPerSecond[k]++;
                bPerSecond[k] += byB ? 1 : 0;
                bErrorsPerSecond[k] += byB && error ? 1 : 0;
            }
            if (byB && Double.isNaN(firstB)) {
                firstB = t;
            }
            if (byB && (error || slow)) {
                badB++;
                errorB += error ? 1 : 0;
                slowB += slow ? 1 : 0;
                badBSentAfterRollback += intended >= backNanos ? 1 : 0;
            }
            errorsAfterRollback += error && intended >= backNanos ? 1 : 0;
        }
        RampAnalysis.putSeconds(r, "first_answer_by_to_s", firstB);
        RampAnalysis.putSeconds(r, "first_answer_by_to_to_rollback_s", back == null || Double.isNaN(firstB)
                ? Double.NaN : (back.atMillis() - run.t0WallMillis) / 1000.0 - firstB);
        r.put("slo_ms", sloMs);
        r.put("bad_answers_by_to", badB);
        r.put("error_answers_by_to", errorB);
        r.put("slow_answers_by_to", slowB);
        r.put("bad_answers_by_to_sent_after_rollback", badBSentAfterRollback);
        r.put("errors_sent_after_rollback", errorsAfterRollback);
        ObjectNode versions = r.putObject("versions");
        Map<String, VersionAnswers> byVersion = byVersion(answers, sloMs);
        byVersion.forEach((v, a) -> {
            ObjectNode o = versions.putObject(v);
            o.put("answered", a.answered);
            o.put("errors", a.errors);
            o.put("error_rate", a.errorRate());
            o.put("over_slo", a.overSlo);
            o.putPOJO("error_codes", a.codes);
            o.put("p99_ms", RecoveryAnalysis.ms(a.latency, 99));
        });
        VersionAnswers none = new VersionAnswers();
        r.put("error_rate_from", byVersion.getOrDefault(from, none).errorRate());
        r.put("error_rate_to", byVersion.getOrDefault(to, none).errorRate());
        r.put("sent", answers.sent());
        r.put("answered", answers.answered());
        r.put("client_errors", answers.errors());
        r.put("lost", answers.sent() - answers.answered());
        r.put("load_average_start", run.loadAverageStart);
        r.put("load_average_end", run.loadAverageEnd);
        ArrayNode d = r.putArray("decisions");
        for (Decision x : decisions) {
            ObjectNode o = d.addObject();
            o.put("t_s", RampAnalysis.round((x.atMillis() - run.t0WallMillis) / 1000.0));
            o.put("action", x.action());
            o.put("reason", x.reason());
        }
        ArrayNode w = r.putArray("windows");
        for (int k = 0; k < seconds; k++) {
            ObjectNode o = w.addObject();
            o.put("t_s", k);
            o.put("answered", answeredPerSecond[k]);
            o.put("answered_by_to", bPerSecond[k]);
            o.put("errors_by_to", bErrorsPerSecond[k]);
        }
        ArrayNode tl = r.putArray("timeline");
        for (Point p : timeline) {
            ObjectNode o = tl.addObject();
            o.put("t_s", RampAnalysis.round(p.t()));
            o.put("state", p.state());
            o.put("phase", p.phase());
            o.put("step", p.step());
            o.put("to_share", p.toShare());
        }
        return r;
    }
}
