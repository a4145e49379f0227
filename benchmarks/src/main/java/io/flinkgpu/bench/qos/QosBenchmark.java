package io.flinkgpu.bench.qos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.load.ArrivalSchedule;
import io.flinkgpu.bench.load.LoadDriver;
import io.flinkgpu.bench.load.StreamAnswers;
import io.flinkgpu.bench.report.SummaryTargets;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sut.JobTopics;
import io.flinkgpu.bench.sut.KafkaTraffic;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The request-QoS benchmarks, through the real path (Kafka in, the job on a local Flink cluster,
 * Kafka out) on a simulated GPU whose speed model ({@code A+B*b} ms) makes a batch's fixed cost
 * dominate, as on a real GPU:
 *
 * <ol>
 *   <li>high-priority p99 on an idle device vs while low-priority traffic saturates it, and the
 *       low-priority level's share against its guaranteed minimum share;
 *   <li>two backlogged tenants with weights 3:1 at one priority level: their measured shares;
 *   <li>fixed queue delay vs SLO-aware sizing vs AIMD: p99 at 10% of capacity and SLO attainment
 *       at 80%.
 * </ol>
 *
 * Open loop (Poisson arrivals); latency is response received minus intended send time. Writes
 * {@code qos.json} and {@code qos.md} to {@code --out}; numbers only come from the run.
 */
@Command(name = "qos-benchmark", mixinStandardHelpOptions = true, description = "Request QoS benchmarks")
public final class QosBenchmark implements Callable<Integer> {
    static final String MODEL = "fashion-mnist-cnn";

    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/qos");

    @Option(names = "--seconds", description = "Measured seconds per phase (default: ${DEFAULT-VALUE})")
    int seconds = 15;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "20+1*b";

    @Option(names = "--slo-ms", description = "SLO of the sizing comparison (default: ${DEFAULT-VALUE})")
    double sloMs = 50;

    @Option(names = "--summary", description = "Also record the QoS targets in this summary.json "
            + "(default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing qos.json in "
            + "--summary")
    boolean summaryOnly;

    private final ObjectMapper json = new ObjectMapper();
    private ImageScenario images;
    private EmbeddedKafka kafka;
    private int runs;

    public static void main(String[] args) {
        System.exit(new CommandLine(new QosBenchmark()).execute(args));
    }

    /** One traffic class: its rate, priority and tenant. */
    record Traffic(String name, double ratePerSecond, int priority, String tenant) {}

    /** What one class saw. */
    static final class Outcome {
        final Histogram latencyUs = new Histogram(120_000_000L, 3);
        final Map<String, Long> codes = new TreeMap<>();
        long sent;
        long ok;

        /** What a class saw: each answer's latency or error code; a request never answered is UNANSWERED (an SLO miss). */
        static Outcome of(StreamAnswers answers) {
            Outcome o = new Outcome();
            o.sent = answers.sent();
            for (int i = 0; i < o.sent; i++) {
                if (answers.answered(i)) {
                    o.answer(answers.latencyNanos(i) / 1000, answers.errorCode(i));
                } else {
                    o.answer(0, "UNANSWERED");
                }
            }
            return o;
        }

        void answer(long latencyUs, String code) {
            if (code == null) {
                ok++;
                this.latencyUs.recordValue(Math.min(latencyUs, this.latencyUs.getHighestTrackableValue()));
            } else {
                codes.merge(code, 1L, Long::sum);
            }
        }

        double p(double percentile) {
            return latencyUs.getValueAtPercentile(percentile) / 1000.0;
        }

        double withinMs(double sloMs) {
            long sloUs = (long) (sloMs * 1000);
            long within = 0;
            for (var v : latencyUs.recordedValues()) {
                if (v.getValueIteratedTo() <= sloUs) {
                    within += v.getCountAtValueIteratedTo();
                }
            }
            return sent == 0 ? 0 : (double) within / sent;
        }
    }

    @Override
    public Integer call() throws Exception {
        if (summaryOnly) {
            recordTargets((ObjectNode) json.readTree(out.resolve("qos.json").toFile()));
            return 0;
        }
        images = new ImageScenario(FashionMnist.findRoot());
        Files.createDirectories(out);
        ObjectNode result = json.createObjectNode();
        result.put("started", Instant.now().toString());
        result.put("command", "mvn -B -q -pl benchmarks exec:exec -Dbench.main=io.flinkgpu.bench.qos.QosBenchmark "
                + "-Dbench.args=\"--seconds=" + seconds + " --speed=" + speed + " --slo-ms=" + sloMs + "\"");
        result.put("machine", Runtime.getRuntime().availableProcessors() + " cores, Java "
                + System.getProperty("java.version"));
        result.put("speed_model_ms", speed);
        StringBuilder md = new StringBuilder();
        try (EmbeddedKafka broker = EmbeddedKafka.start()) {
            kafka = broker;
            double capacity = capacity();
            result.put("capacity_samples_per_s", capacity);
            md.append(String.format(Locale.ROOT, "Simulated GPU `%s` ms (batch of b samples); modelled capacity at "
                    + "batch 32: %.0f samples/s. %d s per phase.%n%n", speed, capacity, seconds));

            // 1. priorities
            String priorities = "{\"priority_levels\": 2, \"default_priority\": 2, \"default_timeout_ms\": 2000,"
                    + " \"levels\": {\"2\": {\"max_queue_size\": 64, \"min_share\": 0.2}}}";
            Traffic high = new Traffic("high", 20, 1, "t");
            Map<String, Outcome> idle = run(priorities, 5, List.of(high));
            Map<String, Outcome> loaded = run(priorities, 5, List.of(high, new Traffic("low", 2 * capacity, 2, "t")));
            Map<String, Outcome> isolated = run(priorities.replace("{\"priority_levels\"",
                    "{\"isolate_levels\": true, \"priority_levels\""), 5,
                    List.of(high, new Traffic("low", 2 * capacity, 2, "t")));
            Map<String, Outcome> capped = run(priorities.replace("{\"priority_levels\"",
                    "{\"isolate_levels\": true, \"low_priority_batch_ms\": 30, \"priority_levels\""), 5,
                    List.of(high, new Traffic("low", 2 * capacity, 2, "t")));
            double p99Idle = idle.get("high").p(99);
            double p99Capped = capped.get("high").p(99);
            double p99Loaded = loaded.get("high").p(99);
            double p99Isolated = isolated.get("high").p(99);
            double lowShare = (double) loaded.get("low").ok
                    / Math.max(1, loaded.get("low").ok + loaded.get("high").ok);
            ObjectNode a = result.putObject("priority");
            a.put("high_p99_idle_ms", p99Idle);
            a.put("high_p99_loaded_ms", p99Loaded);
            a.put("ratio", p99Loaded / p99Idle);
            a.put("ratio_goal", 1.2);
            a.put("high_p99_loaded_isolated_levels_ms", p99Isolated);
            a.put("ratio_isolated_levels", p99Isolated / p99Idle);
            a.put("high_p99_loaded_isolated_capped_ms", p99Capped);
            a.put("ratio_isolated_capped", p99Capped / p99Idle);
            a.put("low_share_of_served", lowShare);
            a.put("low_guaranteed_share", 0.2);
            a.put("low_share_vs_guarantee", lowShare / 0.2);
            a.put("low_share_goal", 0.8);
            a.set("loaded_codes", json.valueToTree(loaded.get("low").codes));
            md.append("### High priority under low-priority saturation\n\n")
                    .append("| | high p50 | high p99 | low answered | low refused |\n|---|---|---|---|---|\n")
                    .append(row("idle (high 20 req/s only)", idle.get("high"), null))
                    .append(row("low priority at 2x capacity", loaded.get("high"), loaded.get("low")))
                    .append(row("same, isolate_levels", isolated.get("high"), isolated.get("low")))
                    .append(row("same, isolate_levels + low_priority_batch_ms 30", capped.get("high"), capped.get("low")))
                    .append(String.format(Locale.ROOT, "%nHigh-priority p99 loaded / idle: **%.2f** levels mixed in "
                            + "batches, **%.2f** with isolate_levels, **%.2f** with low-priority batches also capped at "
                            + "30 ms while high-priority traffic is about (goal <= 1.2). Low priority's share of answered "
                            + "requests (levels mixed): %.2f against a guaranteed minimum share of 0.2 (%.1fx; goal >= 0.8x); "
                            + "with the cap: %.2f.%n%n",
                            p99Loaded / p99Idle, p99Isolated / p99Idle, p99Capped / p99Idle, lowShare, lowShare / 0.2,
                            (double) capped.get("low").ok / Math.max(1, capped.get("low").ok + capped.get("high").ok)));

            // 2. tenants
            Map<String, Outcome> tenants = run("{\"priority_levels\": 1, \"default_timeout_ms\": 5000,"
                    + " \"levels\": {\"1\": {\"max_queue_size\": 256}}}", 5, List.of(
                    new Traffic("gold", 2 * capacity, 1, "gold"), new Traffic("silver", 2 * capacity, 1, "silver")));
            double goldShare = (double) tenants.get("gold").ok / Math.max(1, tenants.get("gold").ok + tenants.get("silver").ok);
            ObjectNode b = result.putObject("tenants");
            b.put("gold_weight", 3);
            b.put("silver_weight", 1);
            b.put("gold_share", goldShare);
            b.put("goal_share", 0.75);
            b.put("relative_error", Math.abs(goldShare - 0.75) / 0.75);
            md.append("### Two backlogged tenants, weights 3:1\n\n")
                    .append(String.format(Locale.ROOT, "Gold answered %d, silver %d: gold's share **%.3f** (goal 0.75 "
                            + "within 5%%: relative error %.1f%%).%n%n", tenants.get("gold").ok, tenants.get("silver").ok,
                            goldShare, 100 * Math.abs(goldShare - 0.75) / 0.75));

            // 3. sizing policies
            md.append("### Batch sizing: fixed delay vs SLO-aware vs AIMD (SLO ").append(sloMs).append(" ms)\n\n")
                    .append("| policy | p99 at 10% load | p50 at 10% load | within SLO at 80% load | p99 at 80% load |\n")
                    .append("|---|---|---|---|---|\n");
            ArrayNode c = result.putArray("sizing");
            for (String policy : List.of("FIXED_DELAY", "SLO_AWARE", "AIMD")) {
                String scheduling = "{\"priority_levels\": 1, \"batch_sizing\": \"" + policy + "\", \"slo_ms\": " + sloMs
                        + ", \"default_timeout_ms\": 10000}";
                double delayMs = policy.equals("FIXED_DELAY") ? 5 : sloMs;
                Outcome low = run(scheduling, delayMs, List.of(new Traffic("x", 0.1 * capacity, 1, "t"))).get("x");
                Outcome busy = run(scheduling, delayMs, List.of(new Traffic("x", 0.8 * capacity, 1, "t"))).get("x");
                ObjectNode p = c.addObject();
                p.put("policy", policy);
                p.put("max_queue_delay_ms", delayMs);
                p.put("p99_at_10pct_ms", low.p(99));
                p.put("p50_at_10pct_ms", low.p(50));
                p.put("slo_attainment_at_80pct", busy.withinMs(sloMs));
                p.put("p99_at_80pct_ms", busy.p(99));
                md.append(String.format(Locale.ROOT, "| %s (max delay %.0f ms) | %.1f ms | %.1f ms | %.1f%% | %.1f ms |%n",
                        policy, delayMs, low.p(99), low.p(50), 100 * busy.withinMs(sloMs), busy.p(99)));
            }
        }
        result.put("finished", Instant.now().toString());
        ToolFiles.writeJson(out.resolve("qos.json"), result);
        ToolFiles.writeReport(out.resolve("qos.md"), "QosBenchmark", result, md);
        recordTargets(result);
        System.out.println(md);
        return 0;
    }

    /** Replaces the QoS targets in {@code summary} with the ones this run measured. */
    private void recordTargets(ObjectNode result) throws java.io.IOException {
        String run = "qos/qos.json " + result.path("started").asText();
        List<ObjectNode> targets = new ArrayList<>();
        ObjectNode a = (ObjectNode) result.get("priority");
        double best = Math.min(a.path("ratio").asDouble(), Math.min(a.path("ratio_isolated_levels").asDouble(Double.MAX_VALUE),
                a.path("ratio_isolated_capped").asDouble(Double.MAX_VALUE)));
        targets.add(target(run, "high_priority_p99_under_saturation", "high-priority p99 loaded / idle, best setting "
                + "(isolate_levels + low_priority_batch_ms where measured)", best, "<= 1.2", best <= 1.2));
        targets.add(target(run, "low_priority_share_vs_guarantee", "low priority's share of answers / its min_share 0.2",
                a.path("low_share_vs_guarantee").asDouble(), ">= 0.8", a.path("low_share_vs_guarantee").asDouble() >= 0.8));
        ObjectNode b = (ObjectNode) result.get("tenants");
        targets.add(target(run, "tenant_shares_3_to_1", "gold's share of answers (weights 3:1); relative error to 0.75",
                b.path("relative_error").asDouble(), "<= 0.05", b.path("relative_error").asDouble() <= 0.05));
        for (var p : result.withArray("sizing")) {
            targets.add(target(run, "sizing_" + p.path("policy").asText(), "p99 at 10% load (ms) / SLO attainment at 80% "
                    + "load: " + p.path("p99_at_10pct_ms").asDouble() + " / " + p.path("slo_attainment_at_80pct").asDouble(),
                    p.path("slo_attainment_at_80pct").asDouble(), "compare", null));
        }
        SummaryTargets.replace(summary, "qos", targets);
    }

    private static ObjectNode target(String run, String name, String description, double measured, String goal,
            Boolean pass) {
        return SummaryTargets.target("qos", run, name, description, measured, goal, pass);
    }

    private static String row(String label, Outcome high, Outcome low) {
        return String.format(Locale.ROOT, "| %s | %.1f ms | %.1f ms | %s | %s |%n", label, high.p(50), high.p(99),
                low == null ? "-" : String.valueOf(low.ok), low == null ? "-" : low.codes.toString());
    }

    /** Modelled samples per second at batch 32 under the speed model. */
    private double capacity() {
        String[] parts = speed.replace("*b", "").split("\\+");
        double a = Double.parseDouble(parts[0]);
        double b = Double.parseDouble(parts[1]);
        return 32 / ((a + 32 * b) / 1000);
    }

    /** Runs the job with {@code scheduling} for the model and the given traffic; returns what each class saw. */
    private Map<String, Outcome> run(String scheduling, double delayMs, List<Traffic> traffic) throws Exception {
        String prefix = "qos" + (runs++);
        Path repo = Files.createTempDirectory("qos-repo");
        JsonNode schedulingBlock = json.readTree(scheduling);
        ModelRepoWriter.copy(FashionMnist.findRoot().resolve("models").resolve(MODEL), repo, MODEL, false, config -> {
            config.set("scheduling", schedulingBlock);
            ((ObjectNode) config.get("dynamic_batching")).put("max_queue_delay_ms", delayMs);
            config.put("max_batch_size", 32);
            // refusals (max_queue_size per tenant), not backpressure, keep the input flowing under overload
            ((ObjectNode) config.get("dynamic_batching")).put("max_enqueued_batches", 64);
        });
        Files.writeString(repo.resolve("tenants.json"), "{\"tenants\": [{\"name\": \"gold\", \"weight\": 3},"
                + " {\"name\": \"silver\", \"weight\": 1}]}");

        JobTopics topics = JobTopics.prefixed(prefix);
        kafka.createTopics(1, topics.requests(), topics.responses(), topics.deadLetter());
        Configuration conf = topics.jobConfiguration(kafka.bootstrapServers(), "latest", repo);
        conf.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        conf.set(GpuInferenceOptions.SIMULATED_SPEED, speed);
        conf.set(GpuInferenceOptions.WARMUP_WORKERS, 1);
        JobClient job = Deployments.startJob(conf, 1, prefix);
        try (KafkaTraffic kafkaTraffic = new KafkaTraffic(kafka.bootstrapServers(), topics.requests(),
                topics.responses())) {
            // until the job answers, so that measurement starts on a loaded, warm model
            kafkaTraffic.stream((id, seq) -> images.request(id, seq, MODEL, new RequestParameters(1, 0, "t")))
                    .awaitAnswers(kafkaTraffic.newRun(), 50, false, Duration.ofMillis(100), Duration.ofSeconds(120));
            List<LoadDriver.Stream> streams = new ArrayList<>();
            for (Traffic t : traffic) {
                RequestParameters parameters = new RequestParameters(t.priority(), 0, t.tenant());
                streams.add(new LoadDriver.Stream(
                        kafkaTraffic.stream((id, seq) -> images.request(id, seq, MODEL, parameters)),
                        kafkaTraffic.newRun(), ArrivalSchedule.Rate.constant(t.ratePerSecond()),
                        new Random(t.name().hashCode())));
            }
            long start = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(200);
            List<StreamAnswers> answers = LoadDriver.timed(streams, start, start + TimeUnit.SECONDS.toNanos(seconds),
                    Duration.ofSeconds(5));
            Map<String, Outcome> outcomes = new LinkedHashMap<>();
            for (int i = 0; i < traffic.size(); i++) {
                outcomes.put(traffic.get(i).name(), Outcome.of(answers.get(i)));
            }
            return outcomes;
        } finally {
            job.cancel().get(30, TimeUnit.SECONDS);
        }
    }
}
