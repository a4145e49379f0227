package io.flinkgpu.bench.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.bench.sut.Ceiling;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The SLO's bound ({@link QueueBound}) for every {@code goodput_vs_roofline} entry of published
 * runs, from their {@code result.json} alone, as a markdown table: runs measured before the
 * harness computed it get it too. Usage (from the repository root):
 * {@code mvn -q -B -pl benchmarks compile exec:exec -Dbench.main=io.flinkgpu.bench.report.QueueBoundReport
 * -Dbench.args="OUT.md RESULT.json..."}.
 */
public final class QueueBoundReport {
    private QueueBoundReport() {}

    /** One roofline entry with the SLO's bound beside it. */
    record Row(String run, String scenario, String config, int sessions, int maxBatch, double sloMs,
            double budgetMs, double goodput, double roofline, double share, double bound, double shareBound,
            double unbatchedBound, double shortestFirstBound, List<QueueBound.Group> groups) {}

    /**
     * One class of a low-load entry: its p99 in the ideal queue at the low-load point's rate and
     * its batch-1 time, each with the passthrough's unloaded p50 added, their ratio, and the ratio
     * the run measured.
     */
    record LowLoadClass(String name, double serviceMs, double idealP99Ms, double idealRatio, double measuredRatio) {}

    /** One low_load_p99_vs_service_time entry beside the ideal queue's. */
    record LowLoadRow(String run, String scenario, String config, int sessions, double rate, double floorMs,
            List<LowLoadClass> classes) {}

    public static void main(String[] args) throws IOException {
        if (args.length < 2) {
            System.err.println("usage: QueueBoundReport OUT.md RESULT.json...");
            System.exit(2);
        }
        List<Row> rows = new ArrayList<>();
        List<LowLoadRow> lowLoad = new ArrayList<>();
        List<String> sources = new ArrayList<>();
        for (int i = 1; i < args.length; i++) {
            Path file = Path.of(args[i]);
            JsonNode result = new ObjectMapper().readTree(file.toFile());
            rows.addAll(rows(result));
            lowLoad.addAll(lowLoadRows(result));
            sources.add(file.toString());
        }
        Files.writeString(Path.of(args[0]), markdown(rows, sources) + "\n" + lowLoadMarkdown(lowLoad));
        System.out.println("wrote " + args[0] + " (" + rows.size() + " roofline entries)");
    }

    /**
     * One target entry of a result.json with what both tables read beside it: its scenario, its
     * configuration (name and node) and the passthrough's unloaded p50 (the pipeline's latency).
     */
    private record Entry(JsonNode target, JsonNode scenario, String config, JsonNode configNode, double floorMs) {}

    /** The entries named {@code name} of a result.json whose scenario has a passthrough unloaded point. */
    private static List<Entry> entries(JsonNode result, String name) {
        List<Entry> out = new ArrayList<>();
        for (JsonNode t : result.path("targets")) {
            if (!t.path("target").asText().equals(name)) {
                continue;
            }
            JsonNode scenario = scenario(result, t.path("scenario").asText());
            String config = t.path("config").asText().replace(" (best found)", "");
            JsonNode configs = scenario.path("configs");
            JsonNode unloaded = configs.path(io.flinkgpu.bench.run.BenchmarkRunner.PASSTHROUGH)
                    .path("unloaded_closed_loop_1");
            if (unloaded.path("p50").isNumber()) {
                out.add(new Entry(t, scenario, config, configs.path(config), unloaded.path("p50").asDouble()));
            }
        }
        return out;
    }

    /** The rows of one result.json: its roofline entries that have an R. */
    static List<Row> rows(JsonNode result) {
        Map<String, String> userOptions = runOptions(result);
        String run = result.path("run_id").asText();
        List<Row> out = new ArrayList<>();
        for (Entry e : entries(result, "goodput_vs_roofline")) {
            if (!e.target().path("roofline").isNumber()) {
                continue;
            }
            List<QueueBound.Group> groups = QueueBound.groups(ceiling(e.scenario()), shares(e.scenario()));
            int sessions = e.target().path("ceiling_sessions").asInt(1);
            int maxBatch = Targets.maxBatch(strings(e.configNode().path("options")), userOptions);
            double slo = e.scenario().path("slo_p99_ms").asDouble();
            double budgetMs = slo - e.floorMs();
            double roofline = e.target().path("roofline").asDouble();
            double goodput = e.configNode().path("goodput").asDouble();
            double bound = QueueBound.maxRate(groups, sessions, maxBatch, budgetMs / 1000);
            double unbatched = maxBatch == 1 ? bound : QueueBound.maxRate(groups, sessions, 1, budgetMs / 1000);
            // another order than the job's only differs where there is more than one shape group
            double shortestFirst = groups.size() < 2 ? Double.NaN : Math.min(1,
                    QueueBound.maxRate(groups, sessions, 1, budgetMs / 1000, QueueBound.Order.SHORTEST_FIRST) / roofline);
            out.add(new Row(run, e.scenario().path("name").asText(), e.config(), sessions, maxBatch, slo, budgetMs,
                    goodput, roofline, goodput / roofline, bound, Math.min(1, bound / roofline),
                    Math.min(1, unbatched / roofline), shortestFirst, groups));
        }
        return out;
    }

    /**
     * The sessions the roofline entry of the same scenario and configuration counted (the core
     * kept for the task included where the model's batches took it), where the run has one.
     */
    private static java.util.Optional<Integer> rooflineSessions(JsonNode result, Entry lowLoad) {
        for (Entry r : entries(result, "goodput_vs_roofline")) {
            if (r.config().equals(lowLoad.config())
                    && r.scenario().path("name").asText().equals(lowLoad.scenario().path("name").asText())
                    && r.target().path("ceiling_sessions").isInt()) {
                return java.util.Optional.of(r.target().path("ceiling_sessions").asInt());
            }
        }
        return java.util.Optional.empty();
    }

    /** The rows of one result.json's low-load entries whose configuration has a 10%-of-capacity point. */
    static List<LowLoadRow> lowLoadRows(JsonNode result) {
        Map<String, String> userOptions = runOptions(result);
        boolean simulated = "simulated".equals(userOptions.get("inference.device.type"));
        int cores = result.path("machine").path("nproc").asInt(Runtime.getRuntime().availableProcessors());
        String run = result.path("run_id").asText();
        List<LowLoadRow> out = new ArrayList<>();
        for (Entry e : entries(result, "low_load_p99_vs_service_time")) {
            JsonNode t = e.target();
            JsonNode low = e.configNode().path("extra_points").path("at_10pct_of_capacity");
            if (!t.path("measured").isNumber() || !low.path("offered").isNumber()) {
                continue;
            }
            Map<String, String> options = strings(e.configNode().path("options"));
            int sessions = simulated ? 1 : rooflineSessions(result, e).orElseGet(() ->
                    Targets.parallelSessions(options, userOptions, cores));
            int maxBatch = Targets.maxBatch(options, userOptions);
            List<QueueBound.Group> groups = QueueBound.groups(ceiling(e.scenario()), shares(e.scenario()));
            double rate = low.path("offered").asDouble();
            QueueBound.Stats stats = QueueBound.simulate(groups, sessions, maxBatch, rate);
            List<LowLoadClass> classes = new ArrayList<>();
            if (t.path("per_class").isArray()) {
                for (JsonNode c : t.path("per_class")) {
                    String name = c.path("class").asText();
                    int g = groupOfClass(groups, name);
                    if (g >= 0) {
                        classes.add(lowLoadClass(name, groups.get(g), stats.groupP99Seconds()[g], e.floorMs(),
                                c.path("ratio").asDouble()));
                    }
                }
            } else if (groups.size() == 1) {
                classes.add(lowLoadClass("all", groups.get(0), stats.groupP99Seconds()[0], e.floorMs(),
                        t.path("measured").asDouble()));
            }
            out.add(new LowLoadRow(run, e.scenario().path("name").asText(), e.config(), sessions, rate, e.floorMs(),
                    classes));
        }
        return out;
    }

    private static LowLoadClass lowLoadClass(String name, QueueBound.Group group, double p99Seconds, double floorMs,
            double measured) {
        double service = floorMs + 1000 * group.seconds(1);
        double ideal = floorMs + 1000 * p99Seconds;
        return new LowLoadClass(name, service, ideal, ideal / service, measured);
    }

    /** The group of a request class named by its bucket, e.g. class {@code 16 tokens} and group {@code [16]}. */
    static int groupOfClass(List<QueueBound.Group> groups, String className) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("^(\\d+)").matcher(className);
        if (!m.find()) {
            return -1;
        }
        for (int g = 0; g < groups.size(); g++) {
            if (groups.get(g).label().equals("[" + m.group(1) + "]")) {
                return g;
            }
        }
        return -1;
    }

    static String lowLoadMarkdown(List<LowLoadRow> rows) {
        StringBuilder md = new StringBuilder();
        md.append("# Low load in the ideal queue\n\n");
        md.append("For each `low_load_p99_vs_service_time` entry: the same ideal batcher at the rate of the entry's "
                + "10%-of-capacity point, each class's p99 from arrival to answer and its batch-1 time, each with the "
                + "passthrough's unloaded p50 added (the pipeline without its jitter), and their ratio beside the "
                + "ratio the run measured (the target's goal is <= 1.5). An ideal ratio over the goal means that "
                + "with that many threads a request of that class waits behind other batches often enough at 10% "
                + "of capacity to miss the goal in any implementation of the policy.\n\n");
        md.append("| run | scenario | configuration | threads | rate req/s | class | ideal p99 ms | service ms "
                + "| ideal ratio | measured ratio |\n");
        md.append("|---|---|---|---:|---:|---|---:|---:|---:|---:|\n");
        for (LowLoadRow r : rows) {
            for (LowLoadClass c : r.classes()) {
                md.append(String.format("| %s | %s | %s | %d | %.1f | %s | %.2f | %.2f | %s | %.2f |%n", r.run(),
                        r.scenario(), r.config(), r.sessions(), r.rate(), c.name(), c.idealP99Ms(), c.serviceMs(),
                        c.idealRatio() > 1.5 ? String.format("**%.2f**", c.idealRatio())
                                : String.format("%.2f", c.idealRatio()), c.measuredRatio()));
            }
        }
        md.append("\n**Bold**: over the goal in the ideal queue.\n");
        return md.toString();
    }

    static String markdown(List<Row> rows, List<String> sources) {
        StringBuilder md = new StringBuilder();
        md.append("# The SLO's bound on goodput / R\n\n");
        md.append("Generated by `io.flinkgpu.bench.report.QueueBoundReport` from ");
        md.append(String.join(", ", sources.stream().map(s -> "`" + s + "`").toList()));
        md.append(". For each `goodput_vs_roofline` entry: the highest Poisson rate at which an ideal batcher "
                + "with the job's policy (queue delay 0: a free thread takes the oldest request's shape and up to "
                + "max batch of that shape) and the configuration's threads, each at the ceiling's mean batch "
                + "time, with no pipeline cost, keeps the p99 from arrival to answer within the SLO less the "
                + "passthrough's unloaded p50 (discrete-event simulation, 200,000 seeded arrivals per rate). "
                + "`bound / R` (at most 1) is the highest goodput / R any implementation of that policy can "
                + "reach within the SLO on this machine; `goodput / bound` is how close the job came to it; `bound / R, "
                + "batch 1` is the same with batching off (max batch 1), for the question whether batching is what "
                + "limits it; `bound / R, batch 1, shortest first` is the same again with a free thread taking the "
                + "queued shape of the shortest run time first instead of the oldest (shortest job first, no batch "
                + "preempted), for the question whether another order would (scenarios of one shape: -).\n\n");
        md.append("| run | scenario | configuration | threads | max batch | SLO / budget ms | goodput req/s | R req/s "
                + "| goodput / R | SLO bound req/s | bound / R | goodput / bound | bound / R, batch 1 "
                + "| bound / R, batch 1, shortest first |\n");
        md.append("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (Row r : rows) {
            md.append(String.format("| %s | %s | %s | %d | %d | %.0f / %.1f | %.0f | %.0f | %.2f | %.0f | %s | %.2f | %.2f | %s |%n",
                    r.run(), r.scenario(), r.config(), r.sessions(), r.maxBatch(), r.sloMs(), r.budgetMs(), r.goodput(),
                    r.roofline(), r.share(), r.bound(), r.shareBound() < Targets.ROOFLINE_GOAL
                            ? String.format("**%.2f**", r.shareBound()) : String.format("%.2f", r.shareBound()),
                    r.goodput() / r.bound(), r.unbatchedBound(),
                    Double.isNaN(r.shortestFirstBound()) ? "-" : String.format("%.2f", r.shortestFirstBound())));
        }
        md.append("\n**Bold**: under the roofline goal (").append(Targets.ROOFLINE_GOAL)
                .append("): no batcher with that policy can meet the goal within the SLO.\n\n");
        md.append("Service times the simulation used (mean batch time at batch 1, from each run's ceiling):\n\n");
        Map<String, String> seen = new LinkedHashMap<>();
        for (Row r : rows) {
            StringBuilder g = new StringBuilder();
            for (QueueBound.Group group : r.groups()) {
                g.append(g.length() == 0 ? "" : ", ").append(group.label()).append(String.format(" %.0f%%: %.3f ms",
                        100 * group.share(), 1000 * group.seconds(1)));
            }
            seen.putIfAbsent(r.run() + " " + r.scenario(), g.toString());
        }
        seen.forEach((k, v) -> md.append("- ").append(k).append(": ").append(v).append('\n'));
        return md.toString();
    }

    private static JsonNode scenario(JsonNode result, String name) {
        for (JsonNode s : result.path("scenarios")) {
            if (s.path("name").asText().equals(name)) {
                return s;
            }
        }
        throw new IllegalArgumentException("no scenario " + name + " in the result");
    }

    private static List<Ceiling.Point> ceiling(JsonNode scenario) {
        List<Ceiling.Point> out = new ArrayList<>();
        for (JsonNode p : scenario.path("ceiling")) {
            out.add(new Ceiling.Point(p.path("path").asText(), p.path("batch").asInt(),
                    p.path("samplesPerSecond").asDouble(), p.path("p50Ms").asDouble(), p.path("p99Ms").asDouble(),
                    p.path("runs").asLong(), p.path("otherCores").asDouble()));
        }
        return out;
    }

    /** Shape groups' shares from the scenario's facts ({@code samples_per_bucket}: bucket -> samples). */
    static Map<String, Double> shares(JsonNode scenario) {
        Map<String, Double> out = new HashMap<>();
        JsonNode buckets = scenario.path("facts").path("samples_per_bucket");
        double total = 0;
        for (var it = buckets.fields(); it.hasNext();) {
            total += it.next().getValue().asDouble();
        }
        for (var it = buckets.fields(); it.hasNext();) {
            var e = it.next();
            out.put("[" + e.getKey() + "]", e.getValue().asDouble() / total);
        }
        return out;
    }

    /**
     * The operator defaults a run's result.json records ({@code operator_defaults}), or for a run
     * before it recorded them the defaults of then ({@link #DEFAULTS_BEFORE_RECORDED}), with the
     * run's -D options over them: a configuration without its own max batch size ran with its run's
     * default, not with today's.
     */
    static Map<String, String> runOptions(JsonNode result) {
        Map<String, String> out = new HashMap<>(result.has("operator_defaults")
                ? strings(result.path("operator_defaults")) : DEFAULTS_BEFORE_RECORDED);
        out.putAll(strings(result.path("user_options")));
        return out;
    }

    /** The operator's batch cap when runs did not yet record their defaults (it was 32 until it became 128). */
    static final Map<String, String> DEFAULTS_BEFORE_RECORDED =
            Map.of(io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE.key(), "32");

    private static Map<String, String> strings(JsonNode object) {
        Map<String, String> out = new HashMap<>();
        for (var it = object.fields(); it.hasNext();) {
            var e = it.next();
            out.put(e.getKey(), e.getValue().asText());
        }
        return out;
    }
}
