package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RampBenchmark.COORDINATOR;
import static io.flinkgpu.bench.coordinator.RampBenchmark.MODEL;
import static io.flinkgpu.bench.coordinator.RampBenchmark.STATIC;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.PARALLELISM;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.Plots;
import io.flinkgpu.bench.report.SummaryTargets;
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
import java.util.function.Function;
import org.knowm.xchart.XYChart;

/**
 * The load ramp's result files: {@code ramp.json} (settings, each configuration's analysis),
 * {@code ramp.md} generated from it, the p99-per-window plot {@code ramp-p99.png} and the
 * replicas-over-time plot {@code ramp-replicas.png}; and its targets in {@code summary.json}.
 */
final class RampReport {
    static final String SCENARIO = "coordinator_ramp";
    private final RampOptions options;
    private final RampProfile profile;

    RampReport(RampOptions options, RampProfile profile) {
        this.options = options;
        this.profile = profile;
    }

    /** Adds settings and every configuration's analysis to {@code result}; writes the files to {@code --out}. */
    void write(ObjectNode result, List<RecoveryRun> runs) throws IOException {
        ObjectNode settings = result.putObject("settings");
        settings.put("devices", PARALLELISM + " simulated GPUs, speed " + options.speed
                + " ms per batch of b samples, one per inference subtask");
        settings.put("parallelism", PARALLELISM);
        settings.put("model", MODEL);
        settings.put("model_subtask", ModelPartitioner.hash(MODEL, PARALLELISM));
        settings.put("rate_1x", options.rate);
        settings.put("factor", options.factor);
        ArrayNode phases = settings.putArray("phases");
        for (int i = 0; i < RampProfile.PHASES.size(); i++) {
            ObjectNode p = phases.addObject();
            p.put("phase", profile.names().get(i));
            p.put("from_s", profile.phaseStart(i));
            p.put("to_s", profile.phaseStart(i + 1));
            p.put("rate_from", profile.rateAt(profile.phaseStart(i)));
            p.put("rate_to", profile.rateAt(profile.phaseStart(i + 1) - 1e-9));
        }
        settings.put("device_capacity_at_batch_32_per_s", options.capacity(32));
        settings.put("slo_ms", options.sloMs);
        settings.put("cycle_ms", options.cycleMs);
        settings.put("metrics_fetcher_update_interval_ms", options.fetchMs);
        settings.put("metrics_settle_ms", options.settleMs);
        settings.put("target_utilization", options.targetUtilization);
        settings.put("forecast_horizon_s", options.forecastHorizonSeconds);
        settings.put("lead_in_s", options.leadInSeconds);
        ArrayNode configs = result.putArray("configs");
        RampAnalysis analysis = new RampAnalysis(profile, options.sloMs);
        List<ObjectNode> analysed = new ArrayList<>();
        for (RecoveryRun r : runs) {
            ObjectNode a = analysis.analyse(r);
            analysed.add(a);
            configs.add(a);
        }
        ObjectNode coord = find(analysed, COORDINATOR);
        ObjectNode stat = find(analysed, STATIC);
        // when the ramp broke the SLO without scaling: static's first window out of SLO from the ramp's
        // start on, same arrivals (a window out at 1x before it, on a noisy machine, is not the ramp's doing)
        if (coord != null) {
            JsonNode out = coord.get("scale_out_s");
            JsonNode broke = stat == null ? null : stat.get("first_violation_from_ramp_start_s");
            if (out != null && !out.isNull() && broke != null && !broke.isNull()) {
                coord.put("scale_out_lead_s", RampAnalysis.round(broke.asDouble() - out.asDouble()));
            } else {
                coord.putNull("scale_out_lead_s");
            }
        }
        ToolFiles.writeJson(options.out.resolve("ramp.json"), result);
        List<String> pngs = new ArrayList<>();
        if (options.plot) {
            pngs.add(plotP99(analysed));
            pngs.add(plotReplicas(analysed));
        }
        Files.writeString(options.out.resolve("ramp.md"), markdown(result, analysed, pngs));
        System.out.println(Files.readString(options.out.resolve("ramp.md")));
    }

    private String markdown(ObjectNode result, List<ObjectNode> configs, List<String> pngs) {
        StringBuilder md = new StringBuilder();
        md.append(ToolFiles.writtenBy("RampBenchmark"));
        md.append(String.format(Locale.ROOT, "# Coordinator: autoscaling through a 1x -> %sx -> 1x load ramp%n%n",
                RecoveryOptions.num(options.factor)));
        md.append("Command (from the repository root): `").append(result.path("command").asText()).append("`\n\n");
        md.append("Revision: `").append(result.path("git").asText()).append("`. Machine: ")
                .append(result.path("machine").asText()).append("; ").append(result.path("started").asText())
                .append(" to ").append(result.path("finished").asText()).append(".\n\n");
        StringBuilder shape = new StringBuilder();
        for (int i = 0; i < RampProfile.PHASES.size(); i++) {
            shape.append(i == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%s %d s (%.0f -> %.0f/s)",
                    profile.names().get(i), profile.seconds().get(i), profile.rateAt(profile.phaseStart(i)),
                    profile.rateAt(profile.phaseStart(i + 1) - 1e-9)));
        }
        md.append(String.format(Locale.ROOT, "Setup: the Kafka job on a local Flink cluster, parallelism %d, %d simulated "
                + "GPUs of `%s` ms per batch of b samples (%.0f samples/s at batch 32), one per inference subtask. "
                + "`%s` (hash: subtask %d) gets open-loop Poisson traffic: %s, after a lead-in of %d s at 1x that is not "
                + "measured (the coordinator runs from its start, so its first cycles fall there; times below are from "
                + "the start of the first phase). The same arrivals in both configurations:%n%n", PARALLELISM,
                PARALLELISM, options.speed, options.capacity(32), MODEL, ModelPartitioner.hash(MODEL, PARALLELISM),
                shape, options.leadInSeconds));
        md.append(String.format(Locale.ROOT, "- **%s**: the coordinator as shipped (REST collector, demand forecast "
                + "with horizon %d s, DRF planner, Kafka realizer, RocksDB state; `coordinator.model.default-slo` = "
                + "%.0f ms, `coordinator.plan.target-utilization` = %s) runs a cycle every %d ms on metrics fetched every "
                + "%d ms;%n", COORDINATOR, options.forecastHorizonSeconds, options.sloMs,
                RecoveryOptions.num(options.targetUtilization), options.cycleMs, options.fetchMs));
        md.append(String.format(Locale.ROOT, "- **%s**: the same job and traffic with nothing published on the control "
                + "topic: the model stays on its hash subtask (one device), the parallelism as started.%n%n", STATIC));
        md.append(String.format(Locale.ROOT, "Attainment: the share of the requests sent in a phase that were answered "
                + "without error within %.0f ms, end to end from the intended send time (a request never answered "
                + "counts as missed). A 1-s window (of intended send time) is out of SLO when its p99 is above %.0f ms "
                + "or it holds an error or an unanswered request. Replicas: the model's targets in the plan in force "
                + "(1 before any plan and for static). Scale-out lead: static's first window out of SLO from the ramp's "
                + "start on (when the ramp breaks the SLO without scaling) minus the coordinator's first scale-out; positive is ahead. "
                + "Reversals: replica changes in the opposite direction of the change before (one scale-out on the "
                + "ramp and one scale-in after it is 1).%n%n", options.sloMs, options.sloMs));

        md.append("## Results\n\n| |");
        configs.forEach(c -> md.append(' ').append(c.path("name").asText()).append(" |"));
        md.append("\n|---|");
        configs.forEach(c -> md.append("---|"));
        md.append('\n');
        row(md, configs, "**attainment, overall**", c -> "**" + pct(c.path("attainment").asDouble()) + "**");
        for (int p = 0; p < RampProfile.PHASES.size(); p++) {
            int phase = p;
            row(md, configs, "attainment, " + profile.names().get(p), c -> {
                JsonNode ph = c.withArray("phases").get(phase);
                return String.format(Locale.ROOT, "%s (%d of %d; p99 %.0f ms; %d of %d windows out)",
                        pct(ph.path("attainment").asDouble()), ph.path("within_slo").asLong(), ph.path("sent").asLong(),
                        ph.path("p99_ms").asDouble(), ph.path("windows_out_of_slo").asInt(), ph.path("windows").asInt());
            });
        }
        row(md, configs, "lowest phase attainment", c -> pct(c.path("min_phase_attainment").asDouble()));
        row(md, configs, "first window out of SLO", c -> at(c.get("first_violation_s")));
        row(md, configs, "first window out of SLO from the ramp on", c -> at(c.get("first_violation_from_ramp_start_s")));
        row(md, configs, "first scale-out", c -> c.hasNonNull("scale_out_s") ? String.format(Locale.ROOT,
                "%s (%.0f req/s offered)", at(c.get("scale_out_s")), c.path("scale_out_rate_per_s").asDouble()) : "-");
        row(md, configs, "scale-out lead over static's first SLO break on the ramp", c -> c.hasNonNull("scale_out_lead_s")
                ? String.format(Locale.ROOT, "%.1f s", c.path("scale_out_lead_s").asDouble()) : "-");
        row(md, configs, "first scale-in after it", c -> c.hasNonNull("scale_in_s") ? String.format(Locale.ROOT,
                "%s (%.1f s after the ramp down ended)", at(c.get("scale_in_s")),
                c.path("scale_in_after_ramp_down_end_s").asDouble()) : "-");
        row(md, configs, "replica changes / reversals", c -> c.path("replica_changes_count").asInt() + " / "
                + c.path("reversals").asInt());
        row(md, configs, "most replicas / at the end", c -> c.path("max_replicas").asInt() + " / "
                + c.path("replicas_at_end").asInt());
        row(md, configs, "sent / answered / errors / lost", c -> c.path("sent").asLong() + " / "
                + c.path("answered").asLong() + " / " + c.path("errors").asLong() + " / " + c.path("lost").asLong());
        row(md, configs, "load average at start / end", c -> String.format(Locale.ROOT, "%.2f / %.2f",
                c.path("load_average_start").asDouble(), c.path("load_average_end").asDouble()));
        md.append('\n');
        if (!pngs.isEmpty()) {
            md.append("## Plots\n\n");
            for (String png : pngs) {
                md.append("![").append(png.replace(".png", "")).append("](").append(png).append(")\n\n");
            }
        }
        for (ObjectNode c : configs) {
            if (!c.path("coordinator").asBoolean()) {
                continue;
            }
            md.append("## Replica changes of ").append(c.path("name").asText()).append("\n\n");
            md.append("| t | phase | offered | replicas |\n|---|---|---|---|\n");
            for (JsonNode ch : c.withArray("replica_changes")) {
                md.append(String.format(Locale.ROOT, "| %.1f s | %s | %.0f/s | %d -> %d |%n", ch.path("t_s").asDouble(),
                        ch.path("phase").asText(), ch.path("rate_per_s").asDouble(), ch.path("from").asInt(),
                        ch.path("to").asInt()));
            }
            md.append("\nPlacement decisions (t from the start of the first phase):\n\n");
            for (JsonNode d : c.withArray("placement_decisions")) {
                md.append(String.format(Locale.ROOT, "- %.1f s %s %s on %s: %s%n", d.path("t_s").asDouble(),
                        d.path("action").asText(), d.path("model").asText(), d.path("device").asText(),
                        d.path("reason").asText().replace("|", "/")));
            }
            md.append('\n');
        }
        md.append("Every cycle's estimates (rate, load), routes and the subtasks that served the model, and every "
                + "window's p99, are in ramp.json (`cycles`, `windows`).\n");
        return md.toString();
    }

    private String plotP99(List<ObjectNode> configs) throws IOException {
        List<Plots.Series> series = new ArrayList<>();
        for (ObjectNode c : configs) {
            List<double[]> xy = new ArrayList<>();
            for (JsonNode w : c.withArray("windows")) {
                xy.add(new double[] {w.path("t_s").asDouble(), w.path("p99_ms").asDouble()});
            }
            series.add(new Plots.Series(c.path("name").asText(), xy));
        }
        Map<String, Double> events = new LinkedHashMap<>();
        for (int i = 1; i < RampProfile.PHASES.size(); i++) {
            events.put(profile.names().get(i) + " begins", profile.phaseStart(i));
        }
        return Plots.timeSeries(options.out, "ramp-p99.png", String.format(Locale.ROOT,
                "p99 per 1-s window; %s at %s -> %sx -> 1x", MODEL, RecoveryOptions.num(options.rate),
                RecoveryOptions.num(options.factor)), "seconds from the start (intended send time)",
                "p99 latency (ms, log)", series, Map.of("SLO " + (int) options.sloMs + " ms", options.sloMs), 0,
                profile.total(), events);
    }

    private String plotReplicas(List<ObjectNode> configs) throws IOException {
        XYChart chart = Plots.chart("replicas of " + MODEL + " in the plan in force, and the offered rate / "
                + RecoveryOptions.num(options.rate) + " (1x)", "seconds from the start", "replicas; offered rate in x");
        int n = profile.total();
        double[] x = new double[n];
        double[] rate = new double[n];
        for (int k = 0; k < n; k++) {
            x[k] = k + 0.5;
            rate[k] = profile.rateAt(k + 0.5) / options.rate;
        }
        Plots.addLine(chart, "offered rate (x)", x, rate);
        for (ObjectNode c : configs) {
            JsonNode cycles = c.withArray("cycles");
            double[] t = new double[cycles.size()];
            double[] r = new double[cycles.size()];
            for (int i = 0; i < t.length; i++) {
                t[i] = cycles.get(i).path("t_s").asDouble();
                r[i] = cycles.get(i).path("replicas_planned").asDouble();
            }
            if (t.length > 0) {
                Plots.addLine(chart, "replicas, " + c.path("name").asText(), t, r);
            }
        }
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisMax(Math.max(3.5, options.factor + 0.5));
        return Plots.save(chart, options.out, "ramp-replicas.png");
    }

    /** Replaces the "coordinator_ramp" targets in {@code summary} with the ones this run measured. */
    static void record(ObjectNode result, Path summary) throws IOException {
        String run = "coordinator/ramp.json " + result.path("started").asText() + " at " + result.path("git").asText();
        List<ObjectNode> configs = new ArrayList<>();
        result.withArray("configs").forEach(c -> configs.add((ObjectNode) c));
        ObjectNode coord = find(configs, COORDINATOR);
        ObjectNode stat = find(configs, STATIC);
        List<ObjectNode> targets = new ArrayList<>();
        if (coord != null) {
            double min = coord.path("min_phase_attainment").asDouble();
            targets.add(target(run, "ramp_attainment_every_phase", "the coordinator's lowest SLO attainment over the "
                    + "ramp's phases (share of requests answered without error within the SLO); overall "
                    + pct(coord.path("attainment").asDouble()), min, ">= 0.99", min >= 0.99));
            JsonNode lead = coord.get("scale_out_lead_s");
            boolean scaled = coord.hasNonNull("scale_out_s");
            JsonNode ownBreak = coord.get("first_violation_from_ramp_start_s");
            String when = !scaled ? "the coordinator never scaled out"
                    : "first scale-out at " + fmt(coord.path("scale_out_s").asDouble()) + " s from the start, at "
                            + fmt(coord.path("scale_out_rate_per_s").asDouble()) + " req/s offered"
                            + (stat == null ? "" : stat.hasNonNull("first_violation_from_ramp_start_s")
                                    ? "; static first out of SLO from the ramp on at "
                                    + stat.path("first_violation_from_ramp_start_s").asInt() + " s"
                                    : "; static never out of SLO from the ramp on")
                            + (ownBreak == null || ownBreak.isNull() ? "; the coordinator's windows stayed within the SLO "
                                    + "from the ramp on" : "; the coordinator's first window out of SLO from the ramp "
                                    + "on at " + ownBreak.asInt() + " s");
            boolean hasLead = lead != null && !lead.isNull();
            targets.add(target(run, "ramp_scale_out_lead", "seconds by which the coordinator's first scale-out "
                    + "preceded the SLO break the ramp causes without scaling (static's first window out of SLO); "
                    + when, hasLead ? lead.asDouble() : Double.NaN, "> 0", hasLead ? lead.asDouble() > 0 : null));
            boolean in = coord.hasNonNull("scale_in_s");
            targets.add(target(run, "ramp_scale_in", "seconds from the end of the ramp down to the coordinator's "
                    + "first scale-in after the scale-out" + (in ? "" : ": none within the run") + "; replicas at the "
                    + "end " + coord.path("replicas_at_end").asInt(), in
                    ? coord.path("scale_in_after_ramp_down_end_s").asDouble() : Double.NaN,
                    "scales in during the last 1x phase", in && coord.path("scale_in_after_ramp_down_end_s")
                            .asDouble() >= 0));
            int reversals = coord.path("reversals").asInt();
            targets.add(target(run, "ramp_reversals", "reversals of the model's replica count (up then down or down "
                    + "then up) over " + coord.path("replica_changes_count").asInt() + " changes; one scale-out and "
                    + "one scale-in is 1", reversals, "<= 1", reversals <= 1));
        }
        if (stat != null) {
            targets.add(target(run, "ramp_static_attainment_every_phase", "static placement, same traffic: lowest SLO "
                    + "attainment over the phases; overall " + pct(stat.path("attainment").asDouble()),
                    stat.path("min_phase_attainment").asDouble(), "compare", null));
        }
        long lost = configs.stream().mapToLong(c -> c.path("lost").asLong()).sum();
        targets.add(target(run, "ramp_requests_lost", "requests sent but never answered, every configuration", lost,
                "0", lost == 0));
        SummaryTargets.replace(summary, SCENARIO, targets);
    }

    private static ObjectNode target(String run, String name, String description, double measured, String goal,
            Boolean pass) {
        return SummaryTargets.target(SCENARIO, run, name, description, measured, goal, pass);
    }

    private static void row(StringBuilder md, List<ObjectNode> configs, String label, Function<ObjectNode, String> cell) {
        md.append("| ").append(label).append(" |");
        configs.forEach(c -> md.append(' ').append(cell.apply(c)).append(" |"));
        md.append('\n');
    }

    static String pct(double share) {
        return Double.isFinite(share) ? String.format(Locale.ROOT, "%.2f%%", 100 * share) : "-";
    }

    private static String at(JsonNode seconds) {
        return seconds == null || seconds.isNull() ? "never" : String.format(Locale.ROOT, "%.1f s", seconds.asDouble());
    }

    private static String fmt(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }

    static ObjectNode find(List<ObjectNode> configs, String name) {
        return configs.stream().filter(c -> c.path("name").asText().equals(name)).findFirst().orElse(null);
    }
}
