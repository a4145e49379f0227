package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.StreamAnswers;
import io.flinkgpu.coordinator.plan.Decision;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;

/**
 * Turns what one configuration measured into its entry of {@code recovery.json}: latency per 1-s
 * window of intended send time around the step, whether each window is within the SLO, the time
 * to recovery, the coordinator's decisions and every control-loop cycle.
 */
final class RecoveryAnalysis {
    private final RecoveryOptions options;

    RecoveryAnalysis(RecoveryOptions options) {
        this.options = options;
    }

    /** Per 1-s window of intended send time, k = -before .. after-1 (window k is [t0 + k s, t0 + k + 1 s)). */
    ObjectNode analyse(RecoveryRun run) {
        int beforeSeconds = options.beforeSeconds;
        int afterSeconds = options.afterSeconds;
        int recoveryWindows = options.recoveryWindows;
        int first = -beforeSeconds;
        int n = beforeSeconds + afterSeconds;
        Histogram[] all = new Histogram[n];
        Histogram[][] perModel = new Histogram[2][n];
        long[] unansweredIn = new long[n];
        long[] errorsIn = new long[n];
        for (int i = 0; i < n; i++) {
            all[i] = histogram();
            perModel[0][i] = histogram();
            perModel[1][i] = histogram();
        }
        Histogram before = histogram();
        Histogram afterAll = histogram();
        Histogram afterFirst10 = histogram();
        Histogram afterLast30 = histogram();
        Histogram steadyAfterLast30 = histogram();
        for (int model = 0; model < run.answers.size(); model++) {
            StreamAnswers answers = run.answers.get(model);
            for (int seq = 0; seq < answers.sent(); seq++) {
                int k = (int) Math.floorDiv(answers.intendedNanos(seq) - run.t0Nanos, 1_000_000_000L);
                int i = k - first;
                if (i < 0 || i >= n) {
                    continue;
                }
                if (!answers.answered(seq)) {
                    unansweredIn[i]++;
                    continue;
                }
                if (answers.errorCode(seq) != null) {
                    errorsIn[i]++;
                    continue;
                }
                long v = Math.min(answers.latencyNanos(seq) / 1000, all[i].getHighestTrackableValue());
                all[i].recordValue(v);
                perModel[model][i].recordValue(v);
                if (k < 0 && k >= -beforeSeconds + 5) {
                    before.recordValue(v);
                } else if (k >= 0) {
                    afterAll.recordValue(v);
                    if (k < 10) {
                        afterFirst10.recordValue(v);
                    }
                    if (k >= afterSeconds - 30) {
                        afterLast30.recordValue(v);
                        if (model == 1) {
                            steadyAfterLast30.recordValue(v);
                        }
                    }
                }
            }
        }
        ObjectNode r = JsonNodeFactory.instance.objectNode();
        r.put("name", run.name);
        r.put("coordinator", run.coordinator);
        ArrayNode windows = r.putArray("windows");
        boolean[] violating = new boolean[n];
        for (int i = 0; i < n; i++) {
            ObjectNode w = windows.addObject();
            w.put("t_s", first + i);
            w.put("answered", all[i].getTotalCount());
            w.put("p50_ms", ms(all[i], 50));
            w.put("p99_ms", ms(all[i], 99));
            w.put("p99_stepped_ms", ms(perModel[0][i], 99));
            if (options.steadyRate > 0) {
                w.put("p99_steady_ms", ms(perModel[1][i], 99));
            }
            w.put("errors", errorsIn[i]);
            w.put("unanswered", unansweredIn[i]);
            violating[i] = all[i].getTotalCount() == 0 || ms(all[i], 99) > options.sloMs || errorsIn[i] > 0
                    || unansweredIn[i] > 0;
            w.put("within_slo", !violating[i]);
        }
        // recovery: from t0, the first window after the first violation that starts recoveryWindows windows in SLO
        int t0Index = -first;
        int firstViolation = -1;
        for (int i = t0Index; i < n; i++) {
            if (violating[i]) {
                firstViolation = i;
                break;
            }
        }
        double recovery;
        double sustained;
        int violationsAfterRecovery = 0;
        if (firstViolation < 0) {
            recovery = 0;
            sustained = 0;
        } else {
            recovery = Double.NaN;
            for (int i = firstViolation + 1; i + recoveryWindows <= n; i++) {
                boolean ok = true;
                for (int j = i; j < i + recoveryWindows; j++) {
                    ok &= !violating[j];
                }
                if (ok) {
                    recovery = i - t0Index;
                    for (int j = i + recoveryWindows; j < n; j++) {
                        violationsAfterRecovery += violating[j] ? 1 : 0;
                    }
                    break;
                }
            }
            int last = -1;
            for (int i = t0Index; i < n; i++) {
                if (violating[i]) {
                    last = i;
                }
            }
            sustained = n - (last + 1) >= recoveryWindows ? last + 1 - t0Index : Double.NaN;
        }
        int windowsOut = 0;
        for (int i = t0Index; i < n; i++) {
            windowsOut += violating[i] ? 1 : 0;
        }
        r.put("first_violation_s", firstViolation < 0 ? null : (Integer) (firstViolation - t0Index));
        putSeconds(r, "time_to_p99_recovery_s", recovery);
        putSeconds(r, "time_to_sustained_recovery_s", sustained);
        r.put("windows_out_of_slo_after_step", windowsOut);
        r.put("windows_out_of_slo_after_recovery", violationsAfterRecovery);
        r.put("p99_before_step_ms", ms(before, 99));
        r.put("p50_before_step_ms", ms(before, 50));
        r.put("p99_after_step_ms", ms(afterAll, 99));
        r.put("p99_first_10s_after_step_ms", ms(afterFirst10, 99));
        r.put("p99_last_30s_ms", ms(afterLast30, 99));
        r.put("p50_last_30s_ms", ms(afterLast30, 50));
        r.put("max_last_30s_ms", afterLast30.getTotalCount() == 0 ? Double.NaN : afterLast30.getMaxValue() / 1000.0);
        if (options.steadyRate > 0) {
            r.put("p99_steady_model_last_30s_ms", ms(steadyAfterLast30, 99));
        }
        r.put("sent_stepped", run.sent(0));
        r.put("sent_steady", run.sent(1));
        r.put("sent", run.sent(0) + run.sent(1));
        r.put("answered", run.answered());
        r.put("errors", run.errors());
        r.put("lost", run.sent(0) + run.sent(1) - run.answered());
        r.put("load_average_start", run.loadAverageStart);
        r.put("load_average_end", run.loadAverageEnd);
        if (run.coordinator) {
            putSeconds(r, "time_to_decision_s", run.decisionSeconds);
            r.put("decision_epoch", run.decisionEpoch);
            r.put("decision_reason", run.decisionReason);
            putSeconds(r, "time_to_routing_followed_s", run.routingFollowedSeconds);
            r.put("pre_step_epoch", run.preStepEpoch);
            r.put("pre_step_targets", run.preStepTargets);
            r.put("replicated_at_step", run.preStepTargets.contains(","));
            r.put("plans_published_before_step", run.plansBeforeStep);
            r.put("plans_published_after_step", run.plansAfterStep);
            r.put("replications_after_step", count(run.decisionsAfterStep, "REPLICATE"));
            r.put("moves_after_step", count(run.decisionsAfterStep, "MOVE"));
            r.put("scale_ins_after_step", count(run.decisionsAfterStep, "SCALE_IN"));
            r.put("replications_before_step", count(run.decisionsBeforeStep, "REPLICATE"));
            r.put("moves_before_step", count(run.decisionsBeforeStep, "MOVE"));
            r.put("scale_ins_before_step", count(run.decisionsBeforeStep, "SCALE_IN"));
            r.put("relocations_recorded_after_step", run.movesAfterStep.size());
            ArrayNode decisions = r.putArray("placement_decisions");
            Stream.concat(run.decisionsBeforeStep.stream(), run.decisionsAfterStep.stream())
                    .filter(d -> Set.of("LOAD", "REPLICATE", "MOVE", "SCALE_IN", "EVICT", "UNLOAD", "OBSERVE",
                            "PUBLISH").contains(d.action()))
                    .forEach(d -> {
                        ObjectNode o = decisions.addObject();
                        o.put("at_ms", d.atMillis());
                        o.put("action", d.action());
                        o.put("model", d.model());
                        o.put("device", d.device());
                        o.put("reason", d.reason());
                    });
        }
        ArrayNode cycles = r.putArray("cycles");
        for (RecoveryRun.Cycle c : run.cycles) {
            ObjectNode o = cycles.addObject();
            o.put("t_s", Math.round(c.atSecondsFromT0() * 1000) / 1000.0);
            o.put("cycle_ms", Math.round(c.collectMillis() * 10) / 10.0);
            if (run.coordinator) {
                o.put("published", c.published());
                o.put("epoch", c.epoch());
                if (c.skipped() != null) {
                    o.put("skipped", c.skipped());
                }
                o.put("stepped_rate", round(c.steppedRate()));
                o.put("stepped_load", round(c.steppedLoad()));
                o.put("stepped_batch", round(c.steppedBatch()));
                o.put("stepped_alpha_us", round(c.steppedAlphaUs()));
                o.put("stepped_beta_us", round(c.steppedBetaUs()));
                o.put("stepped_targets", c.steppedTargets());
                if (c.reason() != null) {
                    o.put("plan", c.reason());
                }
            }
            ArrayNode in = o.putArray("stepped_requests_in_per_subtask");
            for (double v : c.steppedRequestsIn()) {
                in.add(v);
            }
        }
        return r;
    }

    private static Histogram histogram() {
        return new Histogram(300_000_000L, 3);
    }

    static double ms(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }

    private static double round(double v) {
        return Double.isFinite(v) ? Math.round(v * 1000) / 1000.0 : v;
    }

    private static void putSeconds(ObjectNode o, String field, double seconds) {
        if (Double.isFinite(seconds)) {
            o.put(field, Math.round(seconds * 1000) / 1000.0);
        } else {
            o.putNull(field);
        }
    }

    private static long count(List<Decision> decisions, String action) {
        return decisions.stream().filter(d -> d.action().equals(action)).count();
    }
}
