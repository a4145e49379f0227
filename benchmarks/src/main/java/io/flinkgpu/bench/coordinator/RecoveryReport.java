package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.COORDINATOR;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.NO_SETTLE;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.PARALLELISM;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.SOURCE_MODEL;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.STATIC;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.STEADY;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.STEPPED;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.Plots;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.inference.operator.ModelPartitioner;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * The recovery benchmark's result files: {@code recovery.json} (settings, each configuration's
 * analysis, the SLO's rationale), {@code recovery.md} generated from it, and the p99-per-window
 * plot {@code recovery-p99.png}.
 */
final class RecoveryReport {
    private final RecoveryOptions options;
    private final Path out;

    RecoveryReport(RecoveryOptions options) {
        this.options = options;
        this.out = options.out;
    }

    /**
     * Adds the settings, every configuration's analysis and the SLO rationale to {@code result},
     * writes recovery.json, the plot and recovery.md to {@code --out}, and prints the report.
     */
    void write(ObjectNode result, List<RecoveryRun> runs) throws IOException {
        ObjectNode settings = result.putObject("settings");
        settings.put("devices", "2 simulated GPUs, speed " + options.speed
                + " ms per batch of b samples, one per inference subtask");
        settings.put("parallelism", PARALLELISM);
        settings.put("stepped_model", STEPPED);
        settings.put("stepped_model_subtask", ModelPartitioner.hash(STEPPED, PARALLELISM));
        settings.put("stepped_rate_before", options.rate);
        settings.put("stepped_rate_after", options.rate * options.step);
        if (options.steadyRate > 0) {
            settings.put("steady_model", STEADY + " (copy of " + SOURCE_MODEL + ")");
            settings.put("steady_model_subtask", ModelPartitioner.hash(STEADY, PARALLELISM));
            settings.put("steady_rate", options.steadyRate);
        }
        settings.put("device_capacity_at_batch_32_per_s", options.capacity(32));
        // the fleet simulator's replay of this run batches as the job did
        runs.stream().mapToInt(r -> r.maxBatch).max().ifPresent(b -> settings.put("max_batch_size", b));
        settings.put("slo_p99_ms", options.sloMs);
        settings.put("before_seconds", options.beforeSeconds);
        settings.put("after_seconds", options.afterSeconds);
        settings.put("cycle_ms", options.cycleMs);
        settings.put("metrics_fetcher_update_interval_ms", options.fetchMs);
        settings.put("metrics_settle_ms", options.settleMs);
        settings.put("recovery_windows", options.recoveryWindows);
        settings.put("coordinator_options", "defaults (hysteresis 0.15, weight change 0.2, ...) except "
                + "coordinator.model.default-slo = " + (long) options.sloMs + " ms and coordinator.plan.target-utilization = "
                + RecoveryOptions.num(options.targetUtilization) + " (default 0.7)");
        ArrayNode configsNode = result.putArray("configs");
        List<ObjectNode> analysed = new ArrayList<>();
        RecoveryAnalysis analysis = new RecoveryAnalysis(options);
        for (RecoveryRun r : runs) {
            ObjectNode a = analysis.analyse(r);
            analysed.add(a);
            configsNode.add(a);
        }
        String phase1 = analysed.stream().map(a -> String.format(Locale.ROOT, "%.1f ms (%s)",
                a.path("p99_before_step_ms").asDouble(), a.path("name").asText())).collect(Collectors.joining(", "));
        result.put("slo_rationale", String.format(Locale.ROOT, "%.0f ms p99 end to end: the coordinator may spend half "
                + "of it (%.0f ms, a batch of up to %d at %s ms) on the device, the rest covers the two Kafka hops and "
                + "Flink's network buffers on this shared %d-core machine; in phase 1 (one device at %.0f%% of its "
                + "batch-32 capacity) the p99 was %s.", options.sloMs, options.sloMs / 2,
                (int) Math.floor((options.sloMs / 2 - options.alpha()) / options.beta()), options.speed,
                Runtime.getRuntime().availableProcessors(),
                100 * options.rate / options.capacity(32), phase1));
        ToolFiles.writeJson(out.resolve("recovery.json"), result);
        List<String> pngs = new ArrayList<>();
        if (options.plot) {
            pngs.add(plot(analysed));
        }
        Files.writeString(out.resolve("recovery.md"), markdown(result, analysed, pngs));
        System.out.println(Files.readString(out.resolve("recovery.md")));
    }

    private String markdown(ObjectNode result, List<ObjectNode> configs, List<String> pngs) {
        StringBuilder md = new StringBuilder();
        md.append(ToolFiles.writtenBy("RecoveryBenchmark"));
        md.append("# Coordinator: recovery from a 2x load step\n\n");
        md.append("Command (from the repository root): `").append(result.path("command").asText()).append("`\n\n");
        md.append("Revision: `").append(result.path("git").asText("unknown")).append("`. Machine: ")
                .append(result.path("machine").asText()).append("; ")
                .append(result.path("started").asText()).append(" to ").append(result.path("finished").asText())
                .append(".\n\n");
        md.append(String.format(Locale.ROOT, "Setup: the Kafka job on a local Flink cluster, parallelism %d, 2 simulated "
                + "GPUs of `%s` ms per batch of b samples (%.0f samples/s at batch 32), one per inference subtask. "
                + "`%s` (hash: subtask %d) gets %.0f requests/s of open-loop Poisson traffic%s. At t0 (after %d s) its "
                + "rate steps to %.0f/s (x%.1f), more than one device carries; %d s follow. The same arrivals in every "
                + "configuration:%n%n", PARALLELISM, options.speed, options.capacity(32), STEPPED,
                ModelPartitioner.hash(STEPPED, PARALLELISM), options.rate,
                options.steadyRate > 0 ? String.format(Locale.ROOT, "; `%s` (a copy of the same network, subtask %d) a steady "
                        + "%.0f/s", STEADY, ModelPartitioner.hash(STEADY, PARALLELISM), options.steadyRate) : "",
                options.beforeSeconds, options.rate * options.step, options.step, options.afterSeconds));
        md.append(String.format(Locale.ROOT, "- **%s**: the job reads its control topic; the coordinator as shipped (REST "
                + "collector, DRF planner, Kafka realizer, RocksDB state; default options but `coordinator.model.default-slo` "
                + "= %d ms and `coordinator.plan.target-utilization` = %s, so that the steady phase's estimated load sits "
                + "clearly below the replication threshold; `coordinator.flink.metrics-settle` = %d ms, its default) runs "
                + "a cycle every %d ms; Flink's REST metrics refresh every %d ms (`metrics.fetcher.update-interval`).%n",
                COORDINATOR, (long) options.sloMs, RecoveryOptions.num(options.targetUtilization), options.settleMs,
                options.cycleMs, options.fetchMs));
        md.append(String.format(Locale.ROOT, "- **%s**: the same with `coordinator.flink.metrics-settle` = 0, i.e. the "
                + "collector before that option existed: Flink's REST handlers answer from the last completed metric "
                + "fetch and start the next one asynchronously, so without the wait each read races that fetch and is "
                + "either fresh or one fetch old.%n", NO_SETTLE));
        md.append(String.format(Locale.ROOT, "- **%s**: the same job and traffic with nothing published on the control "
                + "topic: routing stays the model hash, every model on one device.%n%n", STATIC));
        md.append("SLO: ").append(result.path("slo_rationale").asText()).append(String.format(Locale.ROOT, " Latency "
                + "is response consumed minus intended send time, per 1-s window of intended send time; a window is in "
                + "SLO when its p99 <= %.0f ms with no error and nothing unanswered. Recovered: the first window after "
                + "the first violation that starts %d consecutive windows in SLO.%n%n", options.sloMs,
                options.recoveryWindows));

        md.append("| |");
        configs.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" |"));
        md.append("\n|---|");
        configs.forEach(c -> md.append("---|"));
        md.append('\n');
        row(md, configs, "p99 before the step (phase 1 minus its first 5 s)", c -> ms(c, "p99_before_step_ms"));
        row(md, configs, "p99 first 10 s after the step", c -> ms(c, "p99_first_10s_after_step_ms"));
        row(md, configs, "p99 whole phase 2", c -> ms(c, "p99_after_step_ms"));
        row(md, configs, "p99 last 30 s", c -> ms(c, "p99_last_30s_ms"));
        if (options.steadyRate > 0) {
            row(md, configs, "p99 last 30 s, steady model only", c -> ms(c, "p99_steady_model_last_30s_ms"));
        }
        row(md, configs, "**time to decision** (t0 to the first published plan that puts the stepped model on a "
                + "subtask the plan in force did not: a replica or a move) (goal <= 5 s)",
                c -> !c.path("coordinator").asBoolean() ? "no coordinator"
                        : seconds(c.get("time_to_decision_s")) + (c.hasNonNull("time_to_decision_s")
                                ? " (epoch " + c.path("decision_epoch").asLong() + ")" : "")
                                + (c.path("replicated_at_step").asBoolean() ? "; the plan in force at t0 already had "
                                        + "a replica (" + c.path("pre_step_targets").asText() + ")" : ""));
        row(md, configs, "time until the new subtask counts the model's requests (REST)",
                c -> !c.path("coordinator").asBoolean() ? "-" : seconds(c.get("time_to_routing_followed_s")));
        row(md, configs, "first window out of SLO after t0", c -> c.hasNonNull("first_violation_s")
                ? "t0+" + c.path("first_violation_s").asInt() + " s" : "none");
        row(md, configs, "**time to p99 recovery** (goal <= 30 s)", c -> seconds(c.get("time_to_p99_recovery_s")));
        row(md, configs, "... and in SLO from then to the end", c -> seconds(c.get("time_to_sustained_recovery_s")));
        row(md, configs, "windows out of SLO after t0 (of " + options.afterSeconds + ")",
                c -> String.valueOf(c.path("windows_out_of_slo_after_step").asInt()));
        row(md, configs, "plans published before / after the step", c -> !c.path("coordinator").asBoolean() ? "0 / 0"
                : c.path("plans_published_before_step").asInt() + " / " + c.path("plans_published_after_step").asInt());
        row(md, configs, String.format(Locale.ROOT, "coordinator's rate estimate for the stepped model before / after "
                + "the step, min-median-max per cycle (offered %.0f/s / %.0f/s)", options.rate,
                options.rate * options.step), c -> {
            if (!c.path("coordinator").asBoolean()) {
                return "-";
            }
            List<Double> before = new ArrayList<>();
            List<Double> after = new ArrayList<>();
            for (JsonNode y : c.withArray("cycles")) {
                double v = y.path("stepped_rate").asDouble(Double.NaN);
                if (y.has("skipped") && y.path("skipped").asText().startsWith("measuring") || !Double.isFinite(v)) {
                    continue;
                }
                // a cycle's rate covers the previous cycle period: attribute it by its end
                (y.path("t_s").asDouble() < 0 ? before : after).add(v);
            }
            return spread(before) + " / " + spread(after);
        });
        row(md, configs, "REPLICATE / MOVE / SCALE_IN decisions after the step (all models)", c -> !c.path("coordinator").asBoolean()
                ? "-" : c.path("replications_after_step").asInt() + " / " + c.path("moves_after_step").asInt() + " / "
                        + c.path("scale_ins_after_step").asInt());
        row(md, configs, "REPLICATE / MOVE / SCALE_IN decisions before the step (all models)", c -> !c.path("coordinator").asBoolean()
                ? "-" : c.path("replications_before_step").asInt() + " / " + c.path("moves_before_step").asInt() + " / "
                        + c.path("scale_ins_before_step").asInt());
        row(md, configs, "sent / answered / errors / **lost**", c -> c.path("sent").asLong() + " / "
                + c.path("answered").asLong() + " / " + c.path("errors").asLong() + " / **" + c.path("lost").asLong()
                + "**");
        row(md, configs, "REST collection per cycle, median / max", c -> {
            List<Double> d = new ArrayList<>();
            c.withArray("cycles").forEach(y -> d.add(y.path("cycle_ms").asDouble()));
            d.sort(null);
            return d.isEmpty() ? "-" : String.format(Locale.ROOT, "%.0f / %.0f ms", d.get(d.size() / 2),
                    d.get(d.size() - 1));
        });
        row(md, configs, "load average at start / end", c -> String.format(Locale.ROOT, "%.2f / %.2f",
                c.path("load_average_start").asDouble(), c.path("load_average_end").asDouble()));
        md.append('\n');
        for (ObjectNode c : configs) {
            if (c.path("coordinator").asBoolean() && c.path("replications_before_step").asInt()
                    + c.path("scale_ins_before_step").asInt() + c.path("moves_before_step").asInt() > 0) {
                md.append(String.format(Locale.ROOT, "Note (%s): the coordinator already changed placements %d time(s) "
                        + "during the steady phase 1, so its first replica plan after t0 is not necessarily a reaction to "
                        + "the step; see its rate estimates below.%n%n", c.path("name").asText(),
                        c.path("replications_before_step").asInt() + c.path("scale_ins_before_step").asInt()
                                + c.path("moves_before_step").asInt()));
            }
        }
        for (String png : pngs) {
            md.append("![p99 per window](").append(png).append(")\n\n");
        }
        for (ObjectNode c : configs) {
            if (!c.path("coordinator").asBoolean()) {
                continue;
            }
            md.append("Plans published by **").append(c.path("name").asText()).append("** (t from t0; the coordinator's "
                    + "estimate for the stepped model; its route as subtask:weight):\n\n");
            md.append("| t | epoch | rate, device-s/s | route | plan |\n|---|---|---|---|---|\n");
            for (JsonNode y : c.withArray("cycles")) {
                if (y.path("published").asBoolean()) {
                    md.append(String.format(Locale.ROOT, "| %.1f s | %d | %.0f/s, %.2f | %s | %s |%n",
                            y.path("t_s").asDouble(), y.path("epoch").asLong(), y.path("stepped_rate").asDouble(),
                            y.path("stepped_load").asDouble(), y.path("stepped_targets").asText(),
                            y.path("plan").asText().replace("|", "/")));
                }
            }
            md.append('\n');
        }
        md.append("Every cycle's estimates, the per-subtask request counters read from REST and the decisions with their "
                + "reasons are in recovery.json (`cycles`, `placement_decisions`).\n\n");
        md.append("p99 per 1-s window (ms; `*` out of SLO):\n\n| t (s from t0) |");
        configs.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" |"));
        md.append("\n|---|");
        configs.forEach(c -> md.append("---|"));
        md.append('\n');
        int n = options.beforeSeconds + options.afterSeconds;
        for (int i = Math.max(0, options.beforeSeconds - 5); i < n; i++) {
            md.append("| ").append(i - options.beforeSeconds).append(" |");
            for (ObjectNode c : configs) {
                JsonNode w = c.withArray("windows").get(i);
                md.append(String.format(Locale.ROOT, " %.1f%s |", w.path("p99_ms").asDouble(),
                        w.path("within_slo").asBoolean() ? "" : " *"));
            }
            md.append('\n');
        }
        return md.toString();
    }

    private static void row(StringBuilder md, List<ObjectNode> configs, String label,
            java.util.function.Function<ObjectNode, String> cell) {
        md.append("| ").append(label).append(" |");
        configs.forEach(c -> md.append(' ').append(cell.apply(c)).append(" |"));
        md.append('\n');
    }

    private static String spread(List<Double> values) {
        if (values.isEmpty()) {
            return "-";
        }
        List<Double> v = new ArrayList<>(values);
        v.sort(null);
        return String.format(Locale.ROOT, "%.0f-%.0f-%.0f", v.get(0), v.get(v.size() / 2), v.get(v.size() - 1));
    }

    private static String ms(ObjectNode c, String field) {
        return String.format(Locale.ROOT, "%.1f ms", c.path(field).asDouble());
    }

    private static String seconds(JsonNode v) {
        return v == null || v.isNull() ? "**never** (within the run)" : String.format(Locale.ROOT, "**%.1f s**",
                v.asDouble());
    }

    private String plot(List<ObjectNode> configs) throws IOException {
        List<Plots.Series> series = new ArrayList<>();
        Map<String, Double> events = new LinkedHashMap<>();
        events.put("load step", 0.0);
        for (ObjectNode c : configs) {
            List<double[]> xy = new ArrayList<>();
            for (JsonNode w : c.withArray("windows")) {
                xy.add(new double[] {w.path("t_s").asDouble(), w.path("p99_ms").asDouble()});
            }
            series.add(new Plots.Series(c.path("name").asText(), xy));
            if (c.hasNonNull("time_to_decision_s")) {
                events.put("first replica plan, " + c.path("name").asText(), c.path("time_to_decision_s").asDouble());
            }
        }
        return Plots.timeSeries(out, "recovery-p99.png",
                String.format(Locale.ROOT, "p99 per 1-s window; %s x%.1f at t = 0", STEPPED, options.step),
                "seconds from the load step (intended send time)", "p99 latency (ms, log)", series,
                Map.of("SLO " + (int) options.sloMs + " ms", options.sloMs), -options.beforeSeconds,
                options.afterSeconds, events);
    }

    /** The machine, as the report states it. */
    static String machine() {
        return ToolFiles.cores() + ", shared with other work; Java " + System.getProperty("java.version") + ", "
                + System.getProperty("os.name") + " " + System.getProperty("os.version")
                + "; broker, Flink MiniCluster, coordinator and load generator in one JVM";
    }
}
