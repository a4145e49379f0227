package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RolloutBenchmark.BAD_ERRORS;
import static io.flinkgpu.bench.coordinator.RolloutBenchmark.BAD_SLOW;
import static io.flinkgpu.bench.coordinator.RolloutBenchmark.GOOD;
import static io.flinkgpu.bench.coordinator.RolloutBenchmark.MODEL;
import static io.flinkgpu.bench.coordinator.RolloutBenchmark.SHADOW;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.Plots;
import io.flinkgpu.bench.report.SummaryTargets;
import io.flinkgpu.bench.report.ToolFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import org.knowm.xchart.XYChart;

/**
 * The gray-release benchmark's result files: {@code rollout.json} (settings and every case's
 * analysis), {@code rollout.md} generated from it, the plot {@code rollout-share.png} (B's share of
 * the answers per second and B's planned share per case), and its targets in {@code summary.json}.
 */
final class RolloutReport {
    static final String SCENARIO = "coordinator_rollout";
    private final Path out;
    private final boolean plot;

    RolloutReport(Path out, boolean plot) {
        this.out = out;
        this.plot = plot;
    }

    void write(ObjectNode result) throws IOException {
        ToolFiles.writeJson(out.resolve("rollout.json"), result);
        List<ObjectNode> cases = new ArrayList<>();
        result.withArray("cases").forEach(c -> cases.add((ObjectNode) c));
        String png = plot && !cases.isEmpty() ? plot(cases) : null;
        Files.writeString(out.resolve("rollout.md"), markdown(result, cases, png));
        System.out.println(Files.readString(out.resolve("rollout.md")));
    }

    private static String markdown(ObjectNode result, List<ObjectNode> cases, String png) {
        JsonNode s = result.path("settings");
        StringBuilder md = new StringBuilder();
        md.append(ToolFiles.writtenBy("RolloutBenchmark"));
        md.append("# Coordinator: gray releases through the real job\n\n");
        md.append("Command (from the repository root): `").append(result.path("command").asText()).append("`\n\n");
        md.append("Revision: `").append(result.path("git").asText()).append("`. Machine: ")
                .append(result.path("machine").asText()).append("; ").append(result.path("started").asText())
                .append(" to ").append(result.path("finished").asText()).append(".\n\n");
        md.append(String.format(Locale.ROOT, "Setup: the Kafka job on a local Flink cluster with %s; `%s` in version 1 "
                + "(A) and version 2 (B); %.0f unpinned requests/s of open-loop Poisson traffic for %d s per case, each "
                + "case on a fresh job; the coordinator as a thread (a cycle every %d ms, REST collector, rollout "
                + "engine, Kafka realizer, RocksDB state) with `coordinator.rollout.min-dwell` %d s, `min-samples` %d, "
                + "`significance` %s, `latency-tolerance` %s, `latency-min-batches` %d%s%s%s, steps %s%%. The rollout 1 -> 2 "
                + "starts (and its split is published) as the measured traffic begins; warm-up requests before it name "
                + "version 1, then version 2 (so that B is loaded before the first step routes to it). Good B: %s. "
                + "Bad B, slow: %s. Bad B, errors: %s. An answer over the SLO is one later than %s ms after its "
                + "request was due.%n%n", s.path("devices").asText(), MODEL,
                s.path("rate").asDouble(), s.path("seconds").asInt(), s.path("cycle_ms").asLong(),
                s.path("min_dwell_s").asLong(), s.path("min_samples").asLong(), s.path("significance").asText(),
                s.path("latency_tolerance").asText(), s.path("latency_min_batches").asLong(),
                s.has("latency_max_wait_s") ? String.format(Locale.ROOT, " (a step waits for them, `latency-max-wait` "
                        + "%d s at most)", s.path("latency_max_wait_s").asLong())
                        : " (a step with fewer was judged on error rates alone)",
                s.has("latency_guard") ? (s.path("latency_guard").asDouble() > 0 ? String.format(Locale.ROOT,
                        ", `latency-guard` %s after %d batches", s.path("latency_guard").asText(),
                        s.path("latency_guard_batches").asLong()) : ", no `latency-guard`") : "",
                s.has("early_significance") ? (s.path("early_significance").asDouble() > 0 ? String.format(
                        Locale.ROOT, ", `early-significance` %s", s.path("early_significance").asText())
                        : ", no `early-significance`") : "",
                s.path("steps_percent").asText(), s.path("good_version").asText(),
                s.path("bad_slow_version").asText(), s.path("bad_errors_version").asText(),
                RecoveryOptions.num(s.path("slo_ms").asDouble())));
        md.append("Times are seconds from the rollout's start. The step rolled back begins at the last start or "
                + "promotion before the rollback. Answers per version are the client's: every response names the "
                + "version that answered it.\n\n");
        md.append("## Results\n\n| |");
        cases.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" (").append(c.path("mode").asText())
                .append(") |"));
        md.append("\n|---|");
        cases.forEach(c -> md.append("---|"));
        md.append('\n');
        row(md, cases, "final state", c -> "**" + c.path("final_state").asText() + "**");
        row(md, cases, "time to 100% B", c -> seconds(c.get("time_to_100_percent_s")));
        row(md, cases, "promotions", c -> c.path("promotions").asText());
        row(md, cases, "rolled back from step", c -> c.path("rolled_back_from_step").asInt() < 0 ? "-"
                : String.valueOf(c.path("rolled_back_from_step").asInt() + 1));
        row(md, cases, "bad step's start to rollback", c -> seconds(c.get("time_to_rollback_s")));
        row(md, cases, "first answer by B to rollback", c -> seconds(c.get("first_answer_by_to_to_rollback_s")));
        row(md, cases, "requests B answered badly (of them sent after the rollback)", c -> c.path("bad_answers_by_to")
                .asLong() + " (" + c.path("bad_answers_by_to_sent_after_rollback").asLong() + ")");
        row(md, cases, "of them: errors / answers over the SLO", c -> c.path("error_answers_by_to").asLong() + " / "
                + c.path("slow_answers_by_to").asLong());
        row(md, cases, "answers / errors / error rate / p99 / over the SLO, A", c -> version(c,
                c.path("from").asText()));
        row(md, cases, "answers / errors / error rate / p99 / over the SLO, B", c -> version(c,
                c.path("to").asText()));
        row(md, cases, "errors the client saw (all versions)", c -> c.path("client_errors").asText());
        row(md, cases, "sent / answered / lost", c -> c.path("sent").asLong() + " / " + c.path("answered").asLong()
                + " / " + c.path("lost").asLong());
        row(md, cases, "load average at start / end", c -> String.format(Locale.ROOT, "%.2f / %.2f",
                c.path("load_average_start").asDouble(), c.path("load_average_end").asDouble()));
        md.append('\n');
        if (png != null) {
            md.append("## Plot\n\n![B's share](").append(png).append(")\n\n");
        }
        for (ObjectNode c : cases) {
            md.append("## Decisions, ").append(c.path("name").asText()).append("\n\n");
            for (JsonNode d : c.withArray("decisions")) {
                md.append(String.format(Locale.ROOT, "- %.1f s `%s`: %s%n", d.path("t_s").asDouble(),
                        d.path("action").asText(), d.path("reason").asText()));
            }
            md.append('\n');
        }
        md.append("Every second's answers by B and the rollout's state per cycle are in rollout.json (`windows`, "
                + "`timeline`).\n");
        return md.toString();
    }

    private static String version(ObjectNode c, String v) {
        JsonNode o = c.path("versions").path(v);
        if (o.isMissingNode()) {
            return "none";
        }
        return String.format(Locale.ROOT, "%d / %d / %.2f%% / %s / %d%s", o.path("answered").asLong(), o.path("errors")
                .asLong(), 100 * o.path("error_rate").asDouble(), Double.isFinite(o.path("p99_ms").asDouble())
                ? String.format(Locale.ROOT, "%.0f ms", o.path("p99_ms").asDouble()) : "-", o.path("over_slo").asLong(),
                o.path("error_codes").isEmpty() ? "" : " " + o.path("error_codes").toString().replace("\"", ""));
    }

    private String plot(List<ObjectNode> cases) throws IOException {
        XYChart chart = Plots.chart("B's share of " + MODEL + "'s answers per second, and its planned share",
                "seconds from the rollout's start", "share of the answers");
        for (ObjectNode c : cases) {
            JsonNode w = c.withArray("windows");
            double[] x = new double[w.size()];
            double[] y = new double[w.size()];
            for (int i = 0; i < x.length; i++) {
                x[i] = w.get(i).path("t_s").asDouble() + 0.5;
                long n = w.get(i).path("answered").asLong();
                y[i] = n == 0 ? 0 : (double) w.get(i).path("answered_by_to").asLong() / n;
            }
            if (x.length > 0) {
                Plots.addLine(chart, "answered by B, " + c.path("name").asText(), x, y);
            }
            JsonNode tl = c.withArray("timeline");
            double[] tx = new double[tl.size()];
            double[] ty = new double[tl.size()];
            for (int i = 0; i < tx.length; i++) {
                tx[i] = tl.get(i).path("t_s").asDouble();
                ty[i] = tl.get(i).path("to_share").asDouble();
            }
            if (tx.length > 0) {
                Plots.addLine(chart, "planned share of B, " + c.path("name").asText(), tx, ty);
            }
        }
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisMax(1.05);
        return Plots.save(chart, out, "rollout-share.png");
    }

    /** Replaces the "coordinator_rollout" targets in {@code summary} with the ones this run measured. */
    static void record(ObjectNode result, Path summary) throws IOException {
        String run = "coordinator/rollout.json " + result.path("started").asText() + " at "
                + result.path("git").asText();
        List<ObjectNode> cases = new ArrayList<>();
        result.withArray("cases").forEach(c -> cases.add((ObjectNode) c));
        List<ObjectNode> targets = new ArrayList<>();
        ObjectNode good = RampReport.find(cases, GOOD);
        if (good != null) {
            boolean done = good.path("final_state").asText().equals("DONE");
            double a = good.path("error_rate_from").asDouble();
            double b = good.path("error_rate_to").asDouble();
            JsonNode t = good.get("time_to_100_percent_s");
            targets.add(target(run, "rollout_good_reaches_100", "a good B (identical weights): seconds from the "
                    + "rollout's start to 100% B through " + good.path("promotions").asInt() + " promotions; final "
                    + "state " + good.path("final_state").asText() + "; error rate B " + pct(b) + " vs A " + pct(a),
                    t == null || t.isNull() ? Double.NaN : t.asDouble(), "DONE, B's error rate <= A's",
                    done && b <= a));
        }
        for (String name : List.of(BAD_SLOW, BAD_ERRORS)) {
            ObjectNode bad = RampReport.find(cases, name);
            if (bad == null) {
                continue;
            }
            String what = name.equals(BAD_SLOW) ? "a slow B (batches at " + bad.path("to_speed").asText() + " ms)"
                    : "a B failing " + pct(bad.path("to_failure_share").asDouble()) + " of its batches";
            String key = name.replace('-', '_');
            boolean back = bad.path("final_state").asText().equals("ROLLED_BACK");
            JsonNode t = bad.get("time_to_rollback_s");
            targets.add(target(run, "rollout_" + key + "_rolled_back", what + ": seconds from the start of the step "
                    + "rolled back (step " + (bad.path("rolled_back_from_step").asInt() + 1) + ") to the rollback; "
                    + "final state " + bad.path("final_state").asText() + "; B answered "
                    + bad.path("bad_answers_by_to").asLong() + " requests badly", t == null || t.isNull() ? Double.NaN
                    : t.asDouble(), "ROLLED_BACK, time and bad answers reported", back));
            targets.add(target(run, "rollout_" + key + "_answers", what + ": requests B answered badly ("
                    + bad.path("error_answers_by_to").asLong() + " errors, " + bad.path("slow_answers_by_to").asLong()
                    + " answers over the " + RecoveryOptions.num(bad.path("slo_ms").asDouble()) + " ms SLO) before and "
                    + "while the rollback took effect (" + bad.path("bad_answers_by_to_sent_after_rollback").asLong()
                    + " of them sent after the rollback decision)", bad.path("bad_answers_by_to").asLong(), "reported",
                    null));
        }
        ObjectNode shadow = RampReport.find(cases, SHADOW);
        if (shadow != null) {
            boolean back = shadow.path("final_state").asText().equals("ROLLED_BACK");
            long errors = shadow.path("client_errors").asLong();
            targets.add(target(run, "rollout_shadow_client_errors", "the bad-errors B in shadow mode: errors the "
                    + "client saw (B's answers are compared and discarded); final state " + shadow.path("final_state").asText(),
                    errors, "0, rolled back", errors == 0 && back));
        }
        long lost = cases.stream().mapToLong(c -> c.path("lost").asLong()).sum();
        targets.add(target(run, "rollout_requests_lost", "requests sent but never answered, every case", lost, "0",
                lost == 0));
        SummaryTargets.replace(summary, SCENARIO, targets);
    }

    private static ObjectNode target(String run, String name, String description, double measured, String goal,
            Boolean pass) {
        return SummaryTargets.target(SCENARIO, run, name, description, measured, goal, pass);
    }

    private static void row(StringBuilder md, List<ObjectNode> cases, String label, Function<ObjectNode, String> cell) {
        md.append("| ").append(label).append(" |");
        cases.forEach(c -> md.append(' ').append(cell.apply(c)).append(" |"));
        md.append('\n');
    }

    private static String seconds(JsonNode v) {
        return v == null || v.isNull() ? "-" : String.format(Locale.ROOT, "%.1f s", v.asDouble());
    }

    private static String pct(double share) {
        return String.format(Locale.ROOT, "%.2f%%", 100 * share);
    }
}
