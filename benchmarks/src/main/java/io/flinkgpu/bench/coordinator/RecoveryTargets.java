package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.COORDINATOR;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.NO_SETTLE;
import static io.flinkgpu.bench.coordinator.RecoveryBenchmark.STATIC;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.SummaryTargets;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * The targets of scenario "coordinator" in {@code summary.json}, from a {@code recovery.json}:
 * time to decision, time to p99 recovery, placement changes and p99 after the step for each
 * coordinator configuration, static placement's p99 for comparison, and requests lost.
 */
final class RecoveryTargets {
    private RecoveryTargets() {}

    /** Replaces the "coordinator" targets in {@code summary} with the ones this run measured. */
    static void record(ObjectNode result, Path summary) throws IOException {
        String run = "coordinator/recovery.json " + result.path("started").asText();
        List<ObjectNode> configs = new ArrayList<>();
        result.withArray("configs").forEach(c -> configs.add((ObjectNode) c));
        ObjectNode coord = find(configs, COORDINATOR);
        ObjectNode noSettle = find(configs, NO_SETTLE);
        ObjectNode stat = find(configs, STATIC);
        JsonNode settings = result.path("settings");
        double horizon = settings.path("after_seconds").asDouble();
        String slo = (long) settings.path("slo_p99_ms").asDouble() + " ms";
        int windows = settings.path("recovery_windows").asInt();
        List<ObjectNode> targets = new ArrayList<>();
        for (ObjectNode c : Stream.of(coord, noSettle).filter(java.util.Objects::nonNull).toList()) {
            boolean shipped = c == coord;
            String suffix = shipped ? "" : "_no_settle";
            String target = settings.path("coordinator_options").asText()
                    .replaceAll(".*target-utilization = ([0-9.]+).*", "$1");
            String who = shipped ? "the coordinator as shipped (metrics-settle " + settings.path("metrics_settle_ms")
                    .asLong() + " ms, target utilisation " + target + ")"
                    : "the coordinator with coordinator.flink.metrics-settle = 0 (its collector before that option; "
                            + "target utilisation " + target + ")";
            String goalDecision = shipped ? "<= 5 s" : "compare";
            String goalRecovery = shipped ? "<= 30 s" : "compare";
            JsonNode d = c.get("time_to_decision_s");
            boolean decided = d != null && !d.isNull();
            String flapped = c.path("replications_before_step").asInt() + c.path("scale_ins_before_step").asInt() > 0
                    ? "; it had already replicated/scaled in " + (c.path("replications_before_step").asInt()
                            + c.path("scale_ins_before_step").asInt()) + " time(s) in the steady phase before the step"
                            + (c.path("replicated_at_step").asBoolean() ? ", and the plan in force at t0 already had a "
                                    + "replica" : "") + " (not a pass: the steady phase was not steady, so the plan "
                                    + "cannot be attributed to the step)"
                    : "";
            targets.add(target(run, "time_to_decision" + suffix, (decided
                    ? "seconds from a 2x load step on one model to the first published plan that replicates or moves it "
                            + "(epoch " + c.path("decision_epoch").asLong() + "), " + who
                    : "no such plan within the " + (long) horizon + " s after the step (measured: that lower bound), "
                            + who) + flapped,
                    decided ? d.asDouble() : horizon, goalDecision,
                    shipped ? decided && d.asDouble() <= 5 && flapped.isEmpty() : null));
            JsonNode rec = c.get("time_to_p99_recovery_s");
            boolean recovered = rec != null && !rec.isNull();
            JsonNode sustained = c.get("time_to_sustained_recovery_s");
            targets.add(target(run, "time_to_p99_recovery" + suffix, (recovered
                    ? "seconds from the step until the p99 per 1-s window is within the SLO (" + slo + ") for " + windows
                            + " consecutive windows, " + who
                    : "the p99 did not recover within the " + (long) horizon + " s after the step (measured: that lower "
                            + "bound), " + who) + "; " + c.path("windows_out_of_slo_after_step").asInt() + " of "
                    + (long) horizon + " windows out of SLO after the step"
                    + (sustained == null || sustained.isNull() ? ", still violating near the end"
                            : ", in SLO to the end from " + fmt(sustained.asDouble()) + " s"),
                    recovered ? rec.asDouble() : horizon, goalRecovery, shipped ? recovered && rec.asDouble() <= 30 : null));
            targets.add(target(run, "moves" + suffix, "placement changes after the step (both models), " + who
                    + ": " + c.path("replications_after_step").asInt() + " REPLICATE + " + c.path("moves_after_step")
                    .asInt() + " MOVE (and " + c.path("scale_ins_after_step").asInt() + " SCALE_IN); "
                    + c.path("plans_published_after_step").asInt() + " plans published",
                    c.path("replications_after_step").asInt() + c.path("moves_after_step").asInt(), "compare", null));
            targets.add(target(run, "p99_after_step" + suffix, "p99 over the last 30 s of the step (ms), " + who
                    + "; before the step " + fmt(c.path("p99_before_step_ms").asDouble()) + " ms",
                    c.path("p99_last_30s_ms").asDouble(), "compare", null));
        }
        if (stat != null) {
            JsonNode rec = stat.get("time_to_p99_recovery_s");
            String recovery = rec == null || rec.isNull() ? "never recovers within the " + (long) horizon + " s"
                    : "recovers after " + fmt(rec.asDouble()) + " s";
            targets.add(target(run, "static_p99_after_step", "static placement (hash routing, no coordinator), same "
                    + "traffic: p99 over the last 30 s of the step (ms); " + recovery + "; "
                    + stat.path("windows_out_of_slo_after_step").asInt() + " of " + (long) horizon + " windows out of "
                    + "SLO; before the step " + fmt(stat.path("p99_before_step_ms").asDouble()) + " ms",
                    stat.path("p99_last_30s_ms").asDouble(), "compare", null));
        }
        long lost = 0;
        StringBuilder lostBy = new StringBuilder();
        for (ObjectNode c : configs) {
            lost += c.path("lost").asLong();
            lostBy.append(lostBy.length() == 0 ? "" : ", ").append(c.path("name").asText()).append(' ')
                    .append(c.path("lost").asLong()).append(" of ").append(c.path("sent").asLong());
        }
        targets.add(target(run, "requests_lost", "requests sent but never answered (" + lostBy + ")", lost, "0",
                lost == 0));
        SummaryTargets.replace(summary, "coordinator", targets);
    }

    private static ObjectNode target(String run, String name, String description, double measured, String goal,
            Boolean pass) {
        return SummaryTargets.target("coordinator", run, name, description, measured, goal, pass);
    }

    private static String fmt(double d) {
        return String.format(Locale.ROOT, "%.1f", d);
    }

    private static ObjectNode find(List<ObjectNode> configs, String name) {
        return configs.stream().filter(c -> c.path("name").asText().equals(name)).findFirst().orElse(null);
    }
}
