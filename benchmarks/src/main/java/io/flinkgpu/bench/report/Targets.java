package io.flinkgpu.bench.report;

import io.flinkgpu.bench.load.CpuSplit;
import io.flinkgpu.bench.load.GcPauses;
import io.flinkgpu.bench.run.BenchmarkRunner;
import io.flinkgpu.bench.run.BenchmarkRunner.ConfigResult;
import io.flinkgpu.bench.run.BenchmarkRunner.ScenarioResult;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.sut.Ceiling;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The benchmark targets, evaluated from measured results only. */
public final class Targets {
    /** The scenario of run-wide targets (not of one inference scenario). */
    public static final String ALL_SCENARIOS = "all";

    private Targets() {}

    public static List<Map<String, Object>> evaluate(List<ScenarioResult> scenarios, String runId) {
        return evaluate(scenarios, runId, false, Map.of());
    }

    /**
     * {@code simulatedGpu}: the run's jobs and ceiling ran on a simulated GPU (its targets are the GPU
     * gains); {@code userOptions}: the -D options applied to every job (for the execution threads a
     * configuration ran with where its own options do not set them).
     */
    public static List<Map<String, Object>> evaluate(List<ScenarioResult> scenarios, String runId,
            boolean simulatedGpu, Map<String, String> userOptions) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (ScenarioResult s : scenarios) {
            double c1 = ceiling(s, 1);
            double cBest = 0;
            int bestBatch = 0;
            for (Ceiling.Point p : s.ceiling) {
                if (p.path().equals("raw") && p.samplesPerSecond() > cBest) {
                    cBest = p.samplesPerSecond();
                    bestBatch = p.batch();
                }
            }
            double available = c1 > 0 ? cBest / c1 : Double.NaN;
            ConfigResult off = s.configs.get("job-batching-off");
            double perRecord = 0;
            ConfigResult perRecordBest = null;
            for (ConfigResult r : s.configs.values()) {
                if (r.config.role().equals("per-record") && (perRecordBest == null || r.goodput() > perRecord)) {
                    perRecord = r.goodput();
                    perRecordBest = r;
                }
            }
            List<String> evaluated = new ArrayList<>();
            if (s.best != null) {
                evaluated.add(s.best);
            }
            if (s.configs.containsKey("job-batching-default") && !evaluated.contains("job-batching-default")) {
                evaluated.add("job-batching-default");
            }
            for (String name : evaluated) {
                ConfigResult r = s.configs.get(name);
                String label = name + (name.equals(s.best) ? " (best found)" : "");
                // 1. batching gain vs the gain raw ONNX Runtime shows
                if (off != null && off.goodput() > 0 && !Double.isNaN(available)) {
                    double gain = r.goodput() / off.goodput();
                    Map<String, Object> t = target(s, "batching_gain_capture", label, runId);
                    t.put("description", "(goodput gain over batching off - 1) / (raw ONNX Runtime gain batch "
                            + bestBatch + " vs 1 - 1)");
                    t.put("job_gain", gain);
                    t.put("available_gain", available);
                    if (available < 1.1) {
                        t.put("measured", null);
                        t.put("goal", ">= 0.9");
                        t.put("pass", null);
                        t.put("detail", String.format("raw ONNX Runtime shows no gain to capture (%.2fx); the job's "
                                + "gain is %.2fx", available, gain));
                    } else {
                        double capture = (gain - 1) / (available - 1);
                        t.put("measured", capture);
                        t.put("goal", ">= 0.9");
                        t.put("pass", capture >= 0.9);
                        t.put("detail", String.format("job gain %.2fx of an available %.2fx", gain, available));
                    }
                    out.add(t);
                    if (available >= 3) {
                        Map<String, Object> t2 = target(s, "batching_gain_at_least_2_5x", label, runId);
                        t2.put("description", "goodput with batching / goodput with batching off, where raw ONNX "
                                + "Runtime allows >= 3x");
                        t2.put("measured", gain);
                        t2.put("goal", ">= 2.5");
                        t2.put("pass", gain >= 2.5);
                        out.add(t2);
                    }
                }
                // 2. end-to-end goodput vs the roofline (pipeline floor and ceiling together) at the
                // batch size the job ran at, and, for information, vs the ceiling alone
                // (a job whose sweep met the SLO at no rate has goodput 0: its share is 0, with R at batch 1)
                if (r.sweep != null && c1 > 0) {
                    double batch = r.sweep.atGoodput() == null ? Double.NaN : r.sweep.atGoodput().meanBatch();
                    // the ceiling is one session on one core; a job running k batches at once on the
                    // CPU can use up to k cores for inference, so its bound counts k ceilings
                    double perSession = interpolate(s, Double.isNaN(batch) ? 1 : batch);
                    int sessions = simulatedGpu ? 1 : parallelSessions(r.config.options(), userOptions,
                            Runtime.getRuntime().availableProcessors(), (long) (1e9 / perSession));
                    double ceilingAt = sessions * perSession;
                    Map<String, Object> roof = roofline(s, r, label, runId, batch, ceilingAt);
                    roof.put("ceiling_sessions", sessions);
                    sloBound(roof, s, sessions, maxBatch(r.config.options(), userOptions));
                    out.add(roof);
                    Map<String, Object> t = target(s, "e2e_goodput_vs_ceiling", label, runId);
                    t.put("description", "goodput / raw ONNX Runtime samples/s at the mean batch size the job ran at "
                            + "its goodput (interpolated between measured batch sizes), times the sessions it ran at "
                            + "once (ceiling_sessions, as the roofline counts them); information only: the "
                            + "ceiling leaves out Kafka and Flink, which goodput_vs_roofline counts");
                    t.put("measured", r.goodput() / ceilingAt);
                    t.put("goal", null);
                    t.put("pass", null);
                    t.put("status", "information");
                    t.put("detail", Double.isNaN(batch) ? NO_GOODPUT + String.format(" (%.0f samples/s at batch 1)",
                            ceilingAt) : String.format("%.0f req/s vs %.0f samples/s at mean batch %.1f", r.goodput(),
                            ceilingAt, batch));
                    out.add(t);
                }
                cpu(s, r, label, runId, out);
                out.add(pipelineCpu(s, r, label, runId));
                // 3. low load: p99 at 10% of capacity vs single-request service time
                PointResult low = r.extra.get("at_10pct_of_capacity");
                if (low != null && off != null && off.unloaded != null && hasClasses(low, off.unloaded)) {
                    out.add(withPassthroughFloor(lowLoadByClass(s, label, runId, low, off.unloaded), s, low));
                } else if (low != null && off != null && off.unloaded != null) {
                    double service = off.unloaded.p50();
                    Map<String, Object> t = target(s, "low_load_p99_vs_service_time", label, runId);
                    t.put("description", "p99 at 10% of capacity / single-request service time (p50 of one request "
                            + "at a time through job-batching-off, end to end)");
                    t.put("measured", low.p99() / service);
                    t.put("goal", "<= 1.5");
                    t.put("pass", low.p99() / service <= 1.5);
                    t.put("detail", String.format("p99 %.2f ms at %.0f req/s; service time %.2f ms", low.p99(),
                            low.offered(), service));
                    out.add(withPassthroughFloor(t, s, low));
                }
                // 4. SLO attainment at 80% of capacity
                PointResult high = r.extra.get("at_80pct_of_capacity");
                if (high != null) {
                    Map<String, Object> t = target(s, "slo_attainment_at_80pct_capacity", label, runId);
                    t.put("description", "share of requests within the SLO at 80% of goodput");
                    t.put("measured", high.attainment());
                    t.put("goal", ">= 0.99");
                    t.put("pass", high.attainment() >= 0.99);
                    t.put("detail", String.format("%.0f req/s, p99 %.2f ms, SLO %.0f ms", high.offered(), high.p99(),
                            high.sloMs()));
                    out.add(t);
                }
                // 5. vs the per-record baseline
                if (perRecordBest != null && perRecord > 0) {
                    double ratio = r.goodput() / perRecord;
                    boolean big = !Double.isNaN(available) && available >= 3;
                    Map<String, Object> t = target(s, "goodput_vs_per_record", label, runId);
                    t.put("description", "goodput / best per-record Flink baseline goodput (" + perRecordBest.config.name()
                            + "); >= 2.5 where the available gain is >= 3x, else never worse (>= 1.0)");
                    t.put("measured", ratio);
                    t.put("goal", big ? ">= 2.5" : ">= 1.0");
                    t.put("pass", ratio >= (big ? 2.5 : 1.0));
                    t.put("detail", String.format("%.0f vs %.0f req/s", r.goodput(), perRecord));
                    out.add(t);
                    PointResult same = r.extra.get("at_per_record_goodput");
                    PointResult theirs = perRecordBest.sweep == null ? null : perRecordBest.sweep.atGoodput();
                    if (same != null && theirs != null) {
                        Map<String, Object> t2 = target(s, "p99_vs_per_record_at_its_goodput", label, runId);
                        t2.put("description", "p99 at the per-record baseline's goodput rate / the baseline's p99 there");
                        t2.put("measured", same.p99() / theirs.p99());
                        t2.put("goal", "<= 1.0");
                        t2.put("pass", same.p99() <= theirs.p99());
                        t2.put("detail", String.format("%.2f ms vs %.2f ms at %.0f req/s", same.p99(), theirs.p99(),
                                theirs.offered()));
                        out.add(t2);
                    }
                }
            }
        }
        for (ScenarioResult s : scenarios) {
            sql(s, runId, out);
        }
        for (ScenarioResult s : scenarios) {
            ConfigResult floor = s.configs.get(BenchmarkRunner.PASSTHROUGH);
            if (floor != null) {
                cpu(s, floor, floor.config.name(), runId, out);
            }
        }
        if (scenarios.stream().noneMatch(s -> s.scenario.name().startsWith("nlp"))) {
            out.add(notMeasured("nlp", "all targets", "The NLP scenarios (all-MiniLM-L6-v2: nlp FP32, nlp-int8) were "
                    + "not part of this run; add them with --scenarios=...,nlp,nlp-int8"));
        }
        if (!simulatedGpu) {
            out.add(notMeasured(ALL_SCENARIOS, "gpu_simulated_device_gains", "This run used the CPU. The batching gains on a "
                    + "GPU come from a run with -Dinference.device.type=simulated "
                    + "-Dinference.device.simulated.speed=A+B*b, whose ceiling and jobs run on the simulated device "
                    + "(published separately, e.g. docs/benchmarks/simulated/)"));
        }
        return out;
    }

    /** sql_batched_vs_batch1's goal, where raw ONNX Runtime's ceiling ratio is at least {@link #SQL_GAIN_AVAILABLE}. */
    static final double SQL_GAIN_GOAL = 2.5;
    static final double SQL_GAIN_AVAILABLE = 3;
    /** sql_vs_datastream's goal. */
    static final double SQL_VS_JOB_GOAL = 0.8;

    /**
     * The SQL configurations' targets: ML_PREDICT batched vs one row per call, against raw ONNX
     * Runtime's ceiling ratio between batch b (sql-batched's max-batch-size) and batch 1; ML_PREDICT
     * batched vs the DataStream job at the same options (job-batching-default); and their CPU per
     * request (information).
     */
    static void sql(ScenarioResult s, String runId, List<Map<String, Object>> out) {
        ConfigResult batched = s.configs.get(BenchmarkRunner.SQL_BATCHED);
        ConfigResult one = s.configs.get(BenchmarkRunner.SQL_BATCH1);
        if (batched == null && one == null) {
            return;
        }
        Map<String, Object> gain = target(s, "sql_batched_vs_batch1", BenchmarkRunner.SQL_BATCHED, runId);
        int b = batched == null ? 0 : Integer.parseInt(batched.config.options().getOrDefault(
                io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE.key(), "0"));
        double c1 = ceiling(s, 1);
        double cb = b > 0 ? Roofline.ceilingAt(s.ceiling, b) : Double.NaN;
        double available = c1 > 0 && cb > 0 ? cb / c1 : Double.NaN;
        gain.put("description", "goodput of ML_PREDICT with max-batch-size b / with max-batch-size 1 (one row per "
                + "inference call); goal >= " + SQL_GAIN_GOAL + " where raw ONNX Runtime's samples/s at batch b / at "
                + "batch 1 (ceiling_ratio) is >= " + SQL_GAIN_AVAILABLE + ", n/a below");
        gain.put("goal", ">= " + SQL_GAIN_GOAL + " where ceiling_ratio >= " + SQL_GAIN_AVAILABLE);
        gain.put("ceiling_batch", b);
        gain.put("ceiling_ratio", Double.isNaN(available) ? null : available);
        if (batched == null || one == null || one.goodput() <= 0 || batched.goodput() <= 0) {
            gain.put("measured", null);
            gain.put("pass", null);
            gain.put("status", "not measured");
            gain.put("detail", batched == null || one == null ? "this run had only one of " + BenchmarkRunner.SQL_BATCHED
                    + " and " + BenchmarkRunner.SQL_BATCH1 : "no goodput: " + BenchmarkRunner.SQL_BATCHED + " "
                    + describe(batched) + ", " + BenchmarkRunner.SQL_BATCH1 + " " + describe(one));
        } else {
            double ratio = batched.goodput() / one.goodput();
            gain.put("measured", ratio);
            if (Double.isNaN(available)) {
                gain.put("pass", null);
                gain.put("status", "not measured");
                gain.put("detail", String.format("%.0f vs %.0f req/s; no ceiling at batch 1 and %d in this run "
                        + "(add --configs=ceiling,...)", batched.goodput(), one.goodput(), b));
            } else if (available < SQL_GAIN_AVAILABLE) {
                gain.put("pass", null);
                gain.put("status", "n/a");
                gain.put("detail", String.format("n/a: raw ONNX Runtime gains only %.2fx from batch 1 to batch %d "
                        + "(< %.0f); measured %.0f vs %.0f req/s", available, b, SQL_GAIN_AVAILABLE,
                        batched.goodput(), one.goodput()));
            } else {
                gain.put("pass", ratio >= SQL_GAIN_GOAL);
                gain.put("detail", String.format("%.0f vs %.0f req/s; raw ONNX Runtime ceiling ratio %.2fx (batch %d "
                        + "vs 1)", batched.goodput(), one.goodput(), available, b));
            }
        }
        out.add(gain);

        ConfigResult job = s.configs.get("job-batching-default");
        Map<String, Object> vs = target(s, "sql_vs_datastream", BenchmarkRunner.SQL_BATCHED, runId);
        vs.put("description", "goodput of ML_PREDICT with the job's batching options / goodput of the DataStream "
                + "job with the same options (job-batching-default)");
        vs.put("goal", ">= " + SQL_VS_JOB_GOAL);
        if (batched == null || job == null || job.goodput() <= 0) {
            vs.put("measured", null);
            vs.put("pass", null);
            vs.put("status", "not measured");
            vs.put("detail", batched == null ? "no " + BenchmarkRunner.SQL_BATCHED + " in this run"
                    : job == null ? "no job-batching-default in this run (add --configs=...,job-batching-default)"
                    : "job-batching-default had no goodput " + describe(job));
        } else {
            double ratio = batched.goodput() / job.goodput();
            vs.put("measured", ratio);
            vs.put("pass", ratio >= SQL_VS_JOB_GOAL);
            vs.put("detail", String.format("%.0f vs %.0f req/s", batched.goodput(), job.goodput()));
        }
        out.add(vs);
        for (ConfigResult r : new ConfigResult[] {batched, one}) {
            if (r != null) {
                cpu(s, r, r.config.name(), runId, out);
            }
        }
    }

    private static String describe(ConfigResult r) {
        if (r == null) {
            return "(not run)";
        }
        return r.failure != null ? "(failed: " + r.failure + ")" : String.format("(goodput %.0f/s)", r.goodput());
    }

    /** Said of a job whose sweep met the SLO at no rate. */
    static final String NO_GOODPUT = "no rate of the sweep met the SLO (goodput 0)";

    /** Roofline goal: goodput at least this share of R. */
    static final double ROOFLINE_GOAL = 0.9;

    /**
     * goodput / R, R = 1 / (1/passthrough + 1/ceiling(b)) at the job's mean batch size b; "not
     * measured" when the run had no passthrough goodput for the scenario.
     */
    static Map<String, Object> roofline(ScenarioResult s, ConfigResult r, String label, String runId, double batch,
            double ceilingAt) {
        Map<String, Object> t = target(s, "goodput_vs_roofline", label, runId);
        t.put("description", "goodput / R, R = 1 / (1/passthrough goodput + 1/raw ONNX Runtime samples/s at the "
                + "mean batch size the job ran at its goodput, times the batches it ran at once on the CPU "
                + "(ceiling_sessions)): the pipeline's cost and inference's added up");
        ConfigResult floor = s.configs.get(BenchmarkRunner.PASSTHROUGH);
        double passthrough = floor == null ? 0 : floor.goodput();
        double bound = Roofline.bound(passthrough, ceilingAt);
        t.put("goal", ">= " + ROOFLINE_GOAL);
        t.put("passthrough_goodput", passthrough);
        t.put("ceiling_at_batch", ceilingAt);
        t.put("mean_batch", Double.isNaN(batch) ? null : batch);
        t.put("roofline", Double.isNaN(bound) ? null : bound);
        if (Double.isNaN(bound)) {
            t.put("measured", null);
            t.put("pass", null);
            t.put("status", "not measured");
            t.put("detail", floor == null ? "no passthrough in this run (add --configs=...,passthrough)"
                    : "the passthrough had no goodput" + (floor.failure == null ? "" : ": " + floor.failure));
            return t;
        }
        double share = r.goodput() / bound;
        t.put("measured", share);
        t.put("pass", share >= ROOFLINE_GOAL);
        // Both goodputs are the highest passing rate of a geometric grid, so each is known only
        // to lie between it and the next rate that failed: say how far that lets the share move.
        double jobFail = Roofline.firstFailAbove(r.sweep.points(), r.goodput());
        double passthroughFail = Roofline.firstFailAbove(floor.sweep.points(), passthrough);
        double[] range = Roofline.shareRange(r.goodput(), jobFail, passthrough, passthroughFail, ceilingAt);
        t.put("goodput_first_failing_rate", Double.isInfinite(jobFail) ? null : jobFail);
        t.put("passthrough_first_failing_rate", Double.isInfinite(passthroughFail) ? null : passthroughFail);
        t.put("share_low", range[0]);
        t.put("share_high", Double.isInfinite(range[1]) ? null : range[1]);
        String within = range[0] >= ROOFLINE_GOAL ? "passes anywhere within it"
                : range[1] < ROOFLINE_GOAL ? "fails anywhere within it" : "the goal lies within it";
        t.put("detail", (Double.isNaN(batch) ? NO_GOODPUT + "; R at batch 1: " : "") + String.format(
                "%.0f req/s vs R %.0f (passthrough %.0f req/s, ceiling %.0f samples/s at mean "
                        + "batch %.1f); the sweeps' grids place goodput / R between %.2f and %s: %s%s",
                r.goodput(), bound, passthrough, ceilingAt, Double.isNaN(batch) ? 1 : batch, range[0],
                Double.isInfinite(range[1]) ? "unbounded (the job never failed)" : String.format("%.2f", range[1]),
                within, Double.isInfinite(passthroughFail)
                        ? "; the passthrough passed every rate it was offered, so R is a lower bound" : ""));
        return t;
    }

    /**
     * Adds to a roofline entry what the SLO itself allows ({@link QueueBound}): the highest rate at
     * which an ideal batcher with the job's policy, {@code sessions} threads at the ceiling's speed
     * and no pipeline cost keeps the p99 within the SLO less the passthrough's unloaded p50
     * ({@code slo_queue_bound}), and that rate over R, at most 1 ({@code slo_share_bound}): the
     * highest goodput / R any such batcher can reach within the SLO. Information beside the
     * target, which it does not change.
     */
    static void sloBound(Map<String, Object> roof, ScenarioResult s, int sessions, int maxBatch) {
        ConfigResult floor = s.configs.get(BenchmarkRunner.PASSTHROUGH);
        Object r = roof.get("roofline");
        if (!(r instanceof Double) || floor == null || floor.unloaded == null || s.ceiling.isEmpty()) {
            return;
        }
        List<QueueBound.Group> groups = QueueBound.groups(s.ceiling, Ceiling.groupShares(s.scenario));
        if (groups.isEmpty()) {
            return;
        }
        double budgetMs = s.scenario.sloMs() - floor.unloaded.p50();
        double bound = QueueBound.maxRate(groups, sessions, maxBatch, budgetMs / 1000);
        double share = Math.min(1, bound / (Double) r);
        roof.put("slo_budget_ms", budgetMs);
        roof.put("slo_queue_bound", bound);
        roof.put("slo_share_bound", share);
        roof.put("detail", roof.get("detail") + sloBoundDetail(sessions, maxBatch, budgetMs, bound, share));
    }

    /** The roofline detail's sentence on the SLO's bound. */
    static String sloBoundDetail(int sessions, int maxBatch, double budgetMs, double bound, double share) {
        return String.format("; within the SLO (%.1f ms after the passthrough's unloaded p50) an ideal batcher "
                + "(queue delay 0, max batch %d, %d thread%s at the ceiling's speed, no pipeline cost) serves at most "
                + "%.0f req/s, %.2f of R%s", budgetMs, maxBatch, sessions, sessions == 1 ? "" : "s", bound, share,
                share < ROOFLINE_GOAL ? ": the goal is above what the SLO allows" : "");
    }

    /** The max batch size a job configuration ran with: its options, else the run's, else the default. */
    static int maxBatch(Map<String, String> options, Map<String, String> userOptions) {
        Map<String, String> merged = merged(options, userOptions);
        try {
            return org.apache.flink.configuration.Configuration.fromMap(merged)
                    .get(io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE);
        } catch (RuntimeException e) {
            return io.flinkgpu.inference.operator.GpuInferenceOptions.MAX_BATCH_SIZE.defaultValue();
        }
    }

    /** A configuration's own options over the run's -D options. */
    private static Map<String, String> merged(Map<String, String> options, Map<String, String> userOptions) {
        Map<String, String> merged = new java.util.HashMap<>(userOptions);
        merged.putAll(options);
        return merged;
    }

    /**
     * How many ONNX Runtime sessions a job configuration ran at once on the CPU: its
     * inference.execution-threads (its own options, else the run's -D options), else what the
     * operator sizes from the CPU device where it is unset ({@code cores} of the benchmark's one
     * task slot less one, divided by the intra-op threads, at least 1), and the core kept for the
     * task too where the model's batches take at least the reserved core's threshold per sample
     * ({@code perSampleNanos}, raw ONNX Runtime's at the job's batch size; see {@link
     * io.flinkgpu.inference.operator.ExecutionSlots}); at most {@code cores}.
     */
    static int parallelSessions(Map<String, String> options, Map<String, String> userOptions, int cores,
            long perSampleNanos) {
        Map<String, String> merged = merged(options, userOptions);
        int threads;
        try {
            io.flinkgpu.inference.operator.ExecutionSlots slots = io.flinkgpu.inference.operator.InferenceSettings
                    .fromConfiguration(org.apache.flink.configuration.Configuration.fromMap(merged))
                    .executionSlots(io.flinkgpu.inference.device.DeviceKind.CPU, cores);
            threads = slots.threads() + (perSampleNanos >= slots.minReservedSampleNanos() ? slots.reserved() : 0);
        } catch (RuntimeException e) {
            threads = 1; // options the job itself refuses: it did not run them
        }
        return Math.max(1, Math.min(threads, cores));
    }

    /** As {@link #parallelSessions(Map, Map, int, long)} for batches too short for the core kept for the task. */
    static int parallelSessions(Map<String, String> options, Map<String, String> userOptions, int cores) {
        return parallelSessions(options, userOptions, cores, 0);
    }

    /** CPU-microseconds per answered request at a configuration's goodput, split by thread (information). */
    static void cpu(ScenarioResult s, ConfigResult r, String label, String runId, List<Map<String, Object>> out) {
        PointResult g = r.sweep == null ? null : r.sweep.atGoodput();
        CpuSplit split = g == null ? null : g.cpuPerRequest();
        if (split == null) {
            return;
        }
        Map<String, Object> t = target(s, "cpu_us_per_request_at_goodput", label, runId);
        t.put("description", "CPU-microseconds of the benchmark JVM per answered request at the goodput point "
                + "(job, broker, load generator and the rest of the process; information)");
        t.put("measured", split.processUs());
        t.put("goal", null);
        t.put("pass", null);
        t.put("status", "information");
        t.put("goodput", r.goodput());
        t.put("cpu_us_per_request", split.partsUs());
        t.put("detail", String.format("at %.0f req/s: process %.0f us = job %.0f + broker %.0f + load generator %.0f "
                        + "+ Flink runtime %.0f + other threads %.0f + unattributed (JIT, GC, native) %.0f",
                r.goodput(), split.processUs(), split.jobUs(), split.part("broker"), split.part("load_generator"),
                split.part("flink_runtime"), split.part("other_threads"), split.unattributedUs())
                + memory(split));
        out.add(t);
    }

    /**
     * What a point allocated per request and how the collector paused over it, for a detail line:
     * "; allocated 2100 bytes per request (job 900); GC paused 3 times, 41 ms in all, longest 18 ms";
     * empty where neither was measured.
     */
    static String memory(CpuSplit split) {
        StringBuilder b = new StringBuilder();
        if (split != null && !Double.isNaN(split.allocatedBytes())) {
            b.append(String.format("; allocated %.0f bytes per request (job %.0f)", split.allocatedBytes(),
                    split.jobAllocatedBytes()));
        }
        GcPauses.Summary gc = split == null ? null : split.gcPauses();
        if (gc != null) {
            b.append(gc.count() == 0 ? "; no GC pause"
                    : String.format("; GC paused %d time%s, %.0f ms in all, longest %.0f ms", gc.count(),
                            gc.count() == 1 ? "" : "s", gc.totalMs(), gc.longestMs()));
        }
        return b.toString();
    }

    private static boolean hasClasses(PointResult low, PointResult unloaded) {
        return low.classes() != null && !low.classes().isEmpty() && unloaded.classes() != null
                && !unloaded.classes().isEmpty();
    }

    /**
     * low_load_p99_vs_service_time where requests have classes of different service times (the
     * NLP scenario's sequence-length buckets): per class, its p99 at 10% of capacity over its own
     * single-request service time (its p50 one request at a time through job-batching-off); the
     * measure is the worst class's. A median over the mix is not a service time: a 128-token
     * request takes several times a 16-token one.
     */
    static Map<String, Object> lowLoadByClass(ScenarioResult s, String label, String runId, PointResult low,
            PointResult unloaded) {
        Map<String, Object> t = target(s, "low_load_p99_vs_service_time", label, runId);
        t.put("description", "per request class (sequence-length bucket): p99 at 10% of capacity / that class's "
                + "single-request service time (p50 of its requests one at a time through job-batching-off, end to "
                + "end); the worst class's ratio");
        t.put("goal", "<= 1.5");
        List<String> parts = new ArrayList<>();
        List<Map<String, Object>> perClass = classRatios(low, unloaded, parts);
        double worst = perClass.stream().mapToDouble(e -> (Double) e.get("ratio")).max().orElse(Double.NaN);
        t.put("per_class", perClass);
        t.put("measured", Double.isNaN(worst) ? null : worst);
        t.put("pass", Double.isNaN(worst) ? null : worst <= 1.5);
        if (Double.isNaN(worst)) {
            t.put("status", "not measured");
        }
        t.put("detail", String.format("at %.0f req/s, per class: %s", low.offered(), String.join("; ", parts)));
        return t;
    }

    /**
     * Each class's p99 at {@code low} over its service time in {@code unloaded}, for the classes
     * measured in both; {@code parts} gets a line per class, measured or not.
     */
    static List<Map<String, Object>> classRatios(PointResult low, PointResult unloaded, List<String> parts) {
        List<Map<String, Object>> perClass = new ArrayList<>();
        for (PointResult.ClassLatency c : low.classes()) {
            PointResult.ClassLatency service = unloaded.classNamed(c.name());
            if (service == null || service.requests() == 0 || c.requests() == 0 || !(service.p50() > 0)) {
                parts.add(c.name() + ": not measured");
                continue;
            }
            double ratio = c.p99() / service.p50();
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("class", c.name());
            e.put("requests", c.requests());
            e.put("p99_ms", c.p99());
            e.put("service_time_ms", service.p50());
            e.put("service_requests", service.requests());
            e.put("ratio", ratio);
            perClass.add(e);
            parts.add(String.format("%s %.2f (p99 %.2f ms of %d vs %.2f ms)", c.name(), ratio, c.p99(), c.requests(),
                    service.p50()));
        }
        return perClass;
    }

    /**
     * Adds to a low_load_p99_vs_service_time entry the same ratio for Flink and Kafka alone: the
     * passthrough's p99 at its point nearest {@code low}'s rate (within a factor of 2: its own
     * point at that rate where the run measured one, else a sweep point) over its own p50 one
     * request at a time, as {@code passthrough_floor} and at the end of the detail, and the same for
     * Kafka alone (the kafka-relay configuration, no Flink) as {@code kafka_relay_floor}.
     * Information only: where the floor itself is over the goal, the host's scheduling and the
     * broker set the tail, not inference. Also the p99 of each part of the low-load point's answers
     * ({@link PointResult.StageTail}: queued, inference, outside) as {@code stages}, where they carry
     * the operator's timings.
     */
    static Map<String, Object> withPassthroughFloor(Map<String, Object> t, ScenarioResult s, PointResult low) {
        withFloor(t, s.configs.get(BenchmarkRunner.PASSTHROUGH), low, "passthrough_floor",
                "Flink and Kafka alone (passthrough)");
        withFloor(t, s.configs.get(BenchmarkRunner.KAFKA_RELAY), low, "kafka_relay_floor", "Kafka alone (kafka-relay)");
        return withStages(t, low);
    }

    /** Adds {@code floor}'s ratio nearest {@code low}'s rate to a low-load entry as {@code key}, named {@code what}. */
    private static void withFloor(Map<String, Object> t, ConfigResult floor, PointResult low, String key,
            String what) {
        Map<String, Object> f = floor == null || floor.sweep == null ? null
                : passthroughFloor(floor.unloaded, floor.openPoints(), low.offered());
        if (f != null) {
            t.put(key, f);
            t.put("detail", t.get("detail") + String.format("; %s at %.0f req/s: p99 %.2f ms / its own service time "
                    + "%.2f ms = %.2f", what, f.get("rate"), f.get("p99_ms"), f.get("service_time_ms"), f.get("ratio")));
        }
    }

    /** Adds {@code low}'s {@link PointResult.StageTail} to a low-load entry (as {@code stages} and in its detail). */
    static Map<String, Object> withStages(Map<String, Object> t, PointResult low) {
        PointResult.StageTail stages = low.stages();
        if (stages != null) {
            Map<String, Object> st = new LinkedHashMap<>();
            st.put("queue_p99_ms", stages.queueP99());
            st.put("inference_p99_ms", stages.inferenceP99());
            st.put("outside_p50_ms", stages.outsideP50());
            st.put("outside_p99_ms", stages.outsideP99());
            t.put("stages", st);
            t.put("detail", t.get("detail") + String.format("; p99 of its parts: queued %.2f ms, inference %.2f ms, "
                    + "outside the operator's batch %.2f ms", stages.queueP99(), stages.inferenceP99(),
                    stages.outsideP99()));
        }
        PointResult.SendLag lag = low.sendLag();
        if (lag != null) {
            Map<String, Object> sl = new LinkedHashMap<>();
            sl.put("sent_late_p99_ms", lag.lagP99());
            sl.put("sent_late_max_ms", lag.lagMax());
            sl.put("p99_from_actual_send_ms", lag.fromSendP99());
            t.put("send_lag", sl);
            t.put("detail", t.get("detail") + String.format("; the load generator sent late by p99 %.2f ms (max "
                    + "%.1f ms), p99 from the actual send %.2f ms", lag.lagP99(), lag.lagMax(), lag.fromSendP99()));
        }
        CpuSplit split = low.cpuPerRequest();
        if (split != null && split.gcPauses() != null) {
            // every thread stands still for a pause: one longer than the service time reaches the tail
            t.put("gc_pauses", split.gcPauses());
            t.put("detail", t.get("detail") + memory(split));
        }
        return t;
    }

    /**
     * The passthrough's p99 at its open-loop point nearest {@code rate} (within a factor of 2) over
     * its p50 one request at a time ({@code unloaded}): rate, p99_ms, service_time_ms, ratio; null
     * where it has no such point.
     */
    static Map<String, Object> passthroughFloor(PointResult unloaded, List<PointResult> points, double rate) {
        if (unloaded == null || !(unloaded.p50() > 0)) {
            return null;
        }
        PointResult nearest = null;
        for (PointResult p : points) {
            if ("open".equals(p.mode()) && p.answered() > 0 && (nearest == null
                    || Math.abs(Math.log(p.offered() / rate)) < Math.abs(Math.log(nearest.offered() / rate)))) {
                nearest = p;
            }
        }
        if (nearest == null || Math.abs(Math.log(nearest.offered() / rate)) > Math.log(2) + 1e-9) {
            return null;
        }
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("rate", nearest.offered());
        f.put("p99_ms", nearest.p99());
        f.put("service_time_ms", unloaded.p50());
        f.put("ratio", nearest.p99() / unloaded.p50());
        return f;
    }

    /** cpu_outside_inference_vs_passthrough's goal. */
    static final double PIPELINE_CPU_GOAL = 1.25;

    /**
     * The scenarios whose cpu_outside_inference_vs_passthrough is judged: those whose requests
     * cost the pipeline more than the model (a few microseconds of inference per request). Where
     * inference costs milliseconds per request (the NLP scenarios), the pipeline's share is a few
     * percent of a request's CPU and the ratio is reported for comparison only.
     */
    static final java.util.Set<String> PIPELINE_CPU_JUDGED = java.util.Set.of("image", "recommendation");

    /** cpu_outside_inference_vs_passthrough's goal for {@code scenario}: {@code <= 1.25} or {@code compare}. */
    static String pipelineCpuGoal(String scenario) {
        return PIPELINE_CPU_JUDGED.contains(scenario) ? "<= " + PIPELINE_CPU_GOAL : "compare";
    }

    /**
     * The job's own CPU per request outside inference against the passthrough's at the same rate:
     * the job's threads except the inference execution threads (which run ONNX Runtime) at the
     * configuration's goodput point, over the passthrough's job threads at that offered rate
     * (log-log interpolated between the passthrough's sweep points, whose grid is the same). Per
     * request costs fall with the rate (polling and flushing are shared by more requests), so the
     * two are compared at one rate, not each at its own goodput. The detail also gives ONNX
     * Runtime's own CPU per request at the job's mean batch size by the raw ceiling, and what the
     * inference threads spend beyond it.
     */
    static Map<String, Object> pipelineCpu(ScenarioResult s, ConfigResult r, String label, String runId) {
        Map<String, Object> t = target(s, "cpu_outside_inference_vs_passthrough", label, runId);
        t.put("description", "CPU-microseconds per request of the job's threads except the inference execution "
                + "threads, at the goodput point / the passthrough's job threads at the same offered rate "
                + "(interpolated between its sweep points)");
        String goal = pipelineCpuGoal(s.scenario.name());
        boolean judged = !goal.equals("compare");
        t.put("goal", goal);
        PointResult g = r.sweep == null ? null : r.sweep.atGoodput();
        CpuSplit split = g == null ? null : g.cpuPerRequest();
        ConfigResult floor = s.configs.get(BenchmarkRunner.PASSTHROUGH);
        double floorUs = floor == null || floor.sweep == null || g == null ? Double.NaN
                : passthroughJobUsAt(floor.sweep.points(), g.offered());
        if (split == null || Double.isNaN(floorUs)) {
            t.put("measured", null);
            t.put("pass", null);
            t.put("status", "not measured");
            t.put("detail", floor == null ? "no passthrough in this run (add --configs=...,passthrough)"
                    : split == null ? "no CPU reading at the goodput point"
                    : String.format("the passthrough's sweep does not span %.0f req/s", g.offered()));
            return t;
        }
        double inference = split.part("job_inference_threads");
        double outside = split.jobUs() - (Double.isNaN(inference) ? 0 : inference);
        double ratio = outside / floorUs;
        double batch = Double.isNaN(g.meanBatch()) ? 1 : g.meanBatch();
        double ceilingAt = interpolate(s, batch);
        double ortUs = ceilingAt > 0 ? 1e6 / ceilingAt : Double.NaN;
        t.put("measured", ratio);
        if (judged) {
            t.put("pass", ratio <= PIPELINE_CPU_GOAL);
        }
        t.put("rate", g.offered());
        t.put("job_outside_inference_us", outside);
        t.put("passthrough_job_us", floorUs);
        t.put("inference_threads_us", inference);
        t.put("onnx_runtime_us_by_ceiling", Double.isNaN(ortUs) ? null : ortUs);
        // the whole JVM (broker and load generator too) at the same rate: inference included on the
        // job's side, so where this is near 1 the pipeline's own cost shrank by what inference took
        double processUs = split.processUs();
        double floorProcessUs = passthroughUsAt(floor.sweep.points(), g.offered(), CpuSplit::processUs);
        t.put("job_process_us", processUs);
        t.put("passthrough_process_us", Double.isNaN(floorProcessUs) ? null : floorProcessUs);
        t.put("process_vs_passthrough", Double.isNaN(floorProcessUs) ? null : processUs / floorProcessUs);
        t.put("detail", pipelineCpuDetail(g.offered(), outside, floorUs, inference, batch, ortUs, processUs,
                floorProcessUs));
        return t;
    }

    /**
     * The cpu_outside_inference_vs_passthrough entry's detail; a reading the run lacks (raw ONNX
     * Runtime where the run had no ceiling sweep, the passthrough's whole process outside its
     * points' rates) is named as not measured, never printed as NaN.
     */
    static String pipelineCpuDetail(double rate, double outsideUs, double floorUs, double inferenceUs, double batch,
            double ortUs, double processUs, double floorProcessUs) {
        String ort = Double.isNaN(ortUs)
                ? String.format(Locale.ROOT, "raw ONNX Runtime at mean batch %.1f not measured in this run (no ceiling)",
                        batch)
                : String.format(Locale.ROOT, "raw ONNX Runtime at mean batch %.1f %.0f us", batch, ortUs);
        String process = Double.isNaN(floorProcessUs)
                ? String.format(Locale.ROOT, "the whole process %.0f us, the passthrough's not measured at that rate",
                        processUs)
                : String.format(Locale.ROOT, "the whole process %.0f us vs the passthrough's %.0f us at the same rate "
                        + "(x%.2f)", processUs, floorProcessUs, processUs / floorProcessUs);
        return String.format(Locale.ROOT, "at %.0f req/s: job %.0f us outside the inference threads vs passthrough "
                + "%.0f us; the inference threads %.0f us, %s; %s", rate, outsideUs, floorUs, inferenceUs, ort,
                process);
    }

    /**
     * The passthrough's job-thread CPU per request at {@code rate}: log-log interpolation between
     * the nearest points below and above it (the point itself where one ran at that rate); NaN
     * outside the points' range.
     */
    static double passthroughJobUsAt(List<PointResult> points, double rate) {
        return passthroughUsAt(points, rate, CpuSplit::jobUs);
    }

    /** As {@link #passthroughJobUsAt}, for any per-request reading of the points' CPU split. */
    static double passthroughUsAt(List<PointResult> points, double rate,
            java.util.function.ToDoubleFunction<CpuSplit> reading) {
        java.util.TreeMap<Double, List<Double>> byRate = new java.util.TreeMap<>();
        for (PointResult p : points) {
            if (p.cpuPerRequest() != null && p.cpuPerRequest().answers() > 0) {
                byRate.computeIfAbsent(p.offered(), k -> new ArrayList<>()).add(reading.applyAsDouble(p.cpuPerRequest()));
            }
        }
        Map.Entry<Double, List<Double>> lo = byRate.floorEntry(rate);
        Map.Entry<Double, List<Double>> hi = byRate.ceilingEntry(rate);
        if (lo == null || hi == null) {
            return Double.NaN;
        }
        double a = median(lo.getValue());
        double b = median(hi.getValue());
        if (lo.getKey().equals(hi.getKey())) {
            return a;
        }
        double f = Math.log(rate / lo.getKey()) / Math.log(hi.getKey() / lo.getKey());
        return Math.exp(Math.log(a) + f * (Math.log(b) - Math.log(a)));
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(null);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    private static Map<String, Object> target(ScenarioResult s, String name, String config, String runId) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("scenario", s.scenario.name());
        t.put("target", name);
        t.put("config", config);
        t.put("run", runId);
        return t;
    }

    private static Map<String, Object> notMeasured(String scenario, String name, String why) {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("scenario", scenario);
        t.put("target", name);
        t.put("measured", null);
        t.put("goal", null);
        t.put("pass", null);
        t.put("status", "not measured");
        t.put("detail", why);
        return t;
    }

    static double ceiling(ScenarioResult s, int batch) {
        for (Ceiling.Point p : s.ceiling) {
            if (p.path().equals("raw") && p.batch() == batch) {
                return p.samplesPerSecond();
            }
        }
        return 0;
    }

    /** Raw samples/s at a (fractional) batch size, linear between measured sizes, clamped at the ends. */
    static double interpolate(ScenarioResult s, double batch) {
        return Roofline.ceilingAt(s.ceiling, batch);
    }
}
