package io.flinkgpu.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.plan.PlannerSettings;
import io.flinkgpu.inference.device.LoadTimeModel;
import io.flinkgpu.inference.device.SpeedModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The coordinator recovery benchmark (benchmarks' {@code RecoveryBenchmark}, published in
 * {@code docs/benchmarks/coordinator/recovery.json}) replayed in the simulator: two simulated GPUs,
 * {@code fashion-mnist-cnn} at 130/s stepping to 260/s after 60 s, a steady second model at 30/s,
 * SLO 150 ms, target utilisation 0.8, a 1.5 s cycle, metrics fetched every 0.5 s and read after a
 * 0.3 s settle. Every response gets the run's measured p50 before the step added (the Kafka and
 * Flink path the simulation does not model). Time to decision and time to p99 recovery are computed
 * as the benchmark computes them, and compared with its measured values.
 *
 * <p>The devices run at the speed the measured run's operator fitted before the step (its latency
 * model, recorded with every cycle), not at the nominal {@code 1+4*b} ms the simulated GPUs were
 * configured with: the real device path adds its own time per batch. The models run as the
 * benchmark's job runs them: batches of at most the operator's default maximum, no scheduling block
 * (default batch sizing) and requests without a deadline, so an overloaded subtask queues them
 * instead of expiring them. The coordinator and the job run as shipped, as in the measured run: the
 * coordinator's defaults for {@code coordinator.rate-window}, {@code coordinator.forecast.*},
 * {@code coordinator.plan.warm-before-route}, its timeout and
 * {@code coordinator.plan.warm-check-interval}, and the job's queue-aware routing.
 *
 * <p>One measured run is one draw of its arrivals; whether a cycle sees the rising demand above
 * the target, or only the next one 1.5 s later, depends on them. The replay therefore runs several
 * seeds and compares their median with the measured value.
 */
public final class RecoveryValidation {
    /**
     * The outcome: the median over the seeds, each seed's, the first seed's windows and plans, and
     * what was measured.
     */
    public record Outcome(double simDecisionSeconds, double measuredDecisionSeconds, double simRecoverySeconds,
            double measuredRecoverySeconds, Map<Integer, Double> windowP99Ms, Map<Integer, Long> windowFailures,
            List<Map<String, Object>> plans, String measuredSource, List<Double> seedDecisionSeconds,
            List<Double> seedRecoverySeconds, Map<Integer, Double> measuredWindowP99Ms, String speed, String batching) {
        public double decisionRatio() {
            return simDecisionSeconds / measuredDecisionSeconds;
        }

        public double recoveryRatio() {
            return simRecoverySeconds / measuredRecoverySeconds;
        }
    }

    /** What the benchmark measured, from its 'coordinator' configuration. */
    record Measured(double decisionSeconds, double recoverySeconds, double p50BeforeStepMs,
            Map<Integer, Double> windowP99Ms, SpeedModel speed, String speedSource, int maxBatch, boolean maxBatchRecorded) {
        /** How the replay batches, for the report. */
        String batching() {
            return String.format(Locale.ROOT, "batches of up to %d samples, %s", maxBatch, maxBatchRecorded
                    ? "the largest the measured run recorded" : "the operator's cap when the run was measured, before "
                    + "runs recorded it");
        }
    }

    static final double BEFORE = 60;
    static final double AFTER = 60;
    static final double SLO_MS = 150;
    static final int RECOVERY_WINDOWS = 5;
    /**
     * The job's largest batch in a run that does not record it (settings.max_batch_size): the runs
     * before it was recorded took the model's max_batch_size (64) capped by the operator's default
     * inference.batching.max-batch-size of then, 32.
     */
    static final int MAX_BATCH_BEFORE_RECORDED = 32;
    /** The simulated GPUs' configured speed, where the measured run recorded no latency fit. */
    static final String NOMINAL_SPEED = "1+4*b";
    static final String SOURCE = "docs/benchmarks/coordinator/recovery.json";

    private RecoveryValidation() {}

    /** The replay with seeds {@code seed} .. {@code seed + seeds - 1}. */
    public static Outcome run(Calibration base, Path repositoryRoot, long seed, int seeds) throws IOException {
        if (seeds < 1) {
            throw new IllegalArgumentException("seeds >= 1");
        }
        Measured measured = measured(repositoryRoot.resolve(SOURCE));
        List<Double> decisions = new ArrayList<>();
        List<Double> recoveries = new ArrayList<>();
        Replay first = null;
        for (int i = 0; i < seeds; i++) {
            Replay r = replay(base, measured, seed + i);
            decisions.add(r.decisionSeconds);
            recoveries.add(r.recoverySeconds);
            first = first == null ? r : first;
        }
        return new Outcome(median(decisions), measured.decisionSeconds(), median(recoveries),
                measured.recoverySeconds(), first.p99, first.failures, first.plans,
                SOURCE + " (configuration 'coordinator')", decisions, recoveries, measured.windowP99Ms(),
                measured.speedSource(), measured.batching());
    }

    private record Replay(double decisionSeconds, double recoverySeconds, Map<Integer, Double> p99,
            Map<Integer, Long> failures, List<Map<String, Object>> plans) {}

    @SuppressWarnings("unchecked")
    private static Replay replay(Calibration base, Measured measured, long seed) {
        Calibration cal = base.withKind("recovery-sim", Map.of(Arch.IMAGE_CNN, measured.speed()),
                "the recovery benchmark's simulated GPU: " + measured.speedSource());
        Workload.Spec spec = new Workload.Spec(2, 0, "poisson", 1, 0, 1, 0, 0, new double[] {1, 0, 0, 0, 0}, 0, 1,
                seed);
        // as the benchmark's job ran the shipped CNN: batches up to the run's max batch, no max_queue_delay_ms
        // (the operator's default, 0), no scheduling block
        List<SimModel> models = List.of(
                new SimModel(0, "fashion-mnist-cnn", Arch.IMAGE_CNN, 1, 256L << 20, SLO_MS, true, 130, 0, measured.maxBatch(),
                        0),
                new SimModel(1, "fashion-mnist-cnn-b", Arch.IMAGE_CNN, 1, 256L << 20, SLO_MS, true, 30, 0, measured.maxBatch(),
                        0));
        Workload w = Workload.of(spec, models, new Workload.Step(0, BEFORE, 2.0));
        PlannerSettings d = PlannerSettings.defaults();
        FleetConfig c = new FleetConfig(Collections.nCopies(2, "recovery-sim"), 8L << 30,
                LoadTimeModel.parse("50+0.5*mib"), BEFORE + AFTER, 0.001, 1.5, 0.5, 0.3, 0.05, 4,
                new PlannerSettings(0.8, d.hysteresis(), d.hotThreshold(), d.movePenalty(), d.minMoveIntervalMillis(),
                        d.reversalWindowMillis(), d.maxReversalsPerWindow(), d.maxMovesPerPlan()), 300,
                CoordinatorOptions.WARM_BEFORE_ROUTE.defaultValue(),
                seconds(CoordinatorOptions.WARM_TIMEOUT.defaultValue()),
                seconds(CoordinatorOptions.FORECAST_HORIZON.defaultValue()),
                seconds(CoordinatorOptions.WARM_CHECK_INTERVAL.defaultValue()));
        // the real path's unloaded share (two Kafka hops, Flink): the measured p50 before the step
        // the benchmark's requests carry no deadline and its models no scheduling block: nothing expires, it queues
        SimResult r = new FleetSimulator(w, c, Policy.PLANNER, cal, true).withPathLatency(measured.p50BeforeStepMs())
                .withoutScheduling().withRateWindow(seconds(CoordinatorOptions.RATE_WINDOW.defaultValue())).run();
        Map<Integer, Double> p99 = (Map<Integer, Double>) r.extra().get("window_p99_ms");
        Map<Integer, Long> failures = (Map<Integer, Long>) r.extra().get("window_failures");
        List<Map<String, Object>> plans = (List<Map<String, Object>>) r.extra().get("plans");

        // time to decision: the first plan after t0 that routes the stepped model to a subtask the plan in force did not
        double decision = Double.NaN;
        List<Integer> inForce = List.of();
        for (Map<String, Object> p : plans) {
            double t = (double) p.get("t_s");
            Map<String, List<Integer>> subtasks = (Map<String, List<Integer>>) p.get("subtasks");
            List<Integer> now = subtasks.getOrDefault("fashion-mnist-cnn", List.of());
            if (t >= BEFORE && !inForce.containsAll(now)) {
                decision = t - BEFORE;
                break;
            }
            inForce = now;
        }
        // recovery: from the first window out of SLO at or after t0, the first window that starts 5 in SLO
        int t0 = (int) BEFORE;
        int end = (int) (BEFORE + AFTER);
        int firstViolation = -1;
        for (int s = t0; s < end; s++) {
            if (!inSlo(s, p99, failures)) {
                firstViolation = s;
                break;
            }
        }
        double recovery = firstViolation < 0 ? 0 : Double.NaN;
        if (firstViolation >= 0) {
            for (int s = firstViolation + 1; s + RECOVERY_WINDOWS <= end; s++) {
                boolean ok = true;
                for (int k = 0; k < RECOVERY_WINDOWS; k++) {
                    ok &= inSlo(s + k, p99, failures);
                }
                if (ok) {
                    recovery = s - t0;
                    break;
                }
            }
        }
        return new Replay(decision, recovery, p99, failures, plans);
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }

    /** The median; NaN (a seed that never decided or recovered) sorts last, as a time longer than any. */
    static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort((a, b) -> Double.isNaN(a) ? (Double.isNaN(b) ? 0 : 1)
                : Double.isNaN(b) ? -1 : Double.compare(a, b));
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }

    /** As the benchmark judges a window: answers, a p99 within the SLO, no failures; a window without answers is not. */
    static boolean inSlo(int s, Map<Integer, Double> p99, Map<Integer, Long> failures) {
        return p99.containsKey(s) && p99.get(s) <= SLO_MS && failures.getOrDefault(s, 0L) == 0;
    }

    /**
     * The measured time to decision, time to p99 recovery (recomputed from the windows with the
     * same rule if the run does not state it), unloaded p50 and p99 per window of the 'coordinator'
     * configuration, and the device speed its operator fitted before the step: the median intercept
     * and slope of the stepped model's latency fit over the cycles before t0 (the nominal speed where
     * the run recorded none), and the job's largest batch.
     */
    static Measured measured(Path file) throws IOException {
        JsonNode root = new ObjectMapper().readTree(Files.readString(file));
        for (JsonNode cfg : root.path("configs")) {
            if (!"coordinator".equals(cfg.path("name").asText())) {
                continue;
            }
            double decision = number(cfg, "time_to_decision_s");
            double recovery = number(cfg, "time_to_p99_recovery_s");
            List<Integer> t = new ArrayList<>();
            List<Boolean> ok = new ArrayList<>();
            Map<Integer, Double> p99 = new TreeMap<>();
            for (JsonNode win : cfg.path("windows")) {
                t.add(win.path("t_s").asInt());
                ok.add(win.path("within_slo").asBoolean());
                if (win.path("p99_ms").isNumber()) {
                    p99.put(win.path("t_s").asInt(), win.path("p99_ms").asDouble());
                }
            }
            if (Double.isNaN(recovery)) {
                int first = -1;
                for (int i = 0; i < t.size(); i++) {
                    if (t.get(i) >= 0 && !ok.get(i)) {
                        first = i;
                        break;
                    }
                }
                for (int i = first + 1; first >= 0 && i + RECOVERY_WINDOWS <= t.size(); i++) {
                    boolean all = true;
                    for (int k = 0; k < RECOVERY_WINDOWS; k++) {
                        all &= ok.get(i + k);
                    }
                    if (all) {
                        recovery = t.get(i);
                        break;
                    }
                }
            }
            List<Double> alphas = new ArrayList<>();
            List<Double> betas = new ArrayList<>();
            for (JsonNode cycle : cfg.path("cycles")) {
                double a = number(cycle, "stepped_alpha_us");
                double b = number(cycle, "stepped_beta_us");
                if (cycle.path("t_s").asDouble() < 0 && a > 0 && b > 0) {
                    alphas.add(a);
                    betas.add(b);
                }
            }
            SpeedModel speed = SpeedModel.parse(NOMINAL_SPEED);
            String speedSource = NOMINAL_SPEED + " ms, as configured (the run recorded no latency fit)";
            if (!alphas.isEmpty()) {
                double alphaMs = median(alphas) / 1000;
                double betaMs = median(betas) / 1000;
                speed = SpeedModel.linear(alphaMs, betaMs);
                speedSource = String.format(Locale.ROOT, "%.3f + %.3f*b ms, the median of the operator's latency fit "
                        + "over the %d cycles before the step (configured %s ms)", alphaMs, betaMs, alphas.size(),
                        NOMINAL_SPEED);
            }
            JsonNode recorded = root.path("settings").path("max_batch_size");
            int maxBatch = recorded.asInt(MAX_BATCH_BEFORE_RECORDED);
            return new Measured(decision, recovery, number(cfg, "p50_before_step_ms"), p99, speed, speedSource,
                    maxBatch, recorded.isNumber());
        }
        throw new IOException(file + " has no 'coordinator' configuration");
    }

    private static double number(JsonNode node, String name) {
        JsonNode v = node.get(name);
        return v != null && v.isNumber() ? v.asDouble() : Double.NaN;
    }

    public static Map<String, Object> describe(Outcome o) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sim_time_to_decision_s", o.simDecisionSeconds());
        m.put("measured_time_to_decision_s", o.measuredDecisionSeconds());
        m.put("decision_ratio", o.decisionRatio());
        m.put("sim_time_to_recovery_s", o.simRecoverySeconds());
        m.put("measured_time_to_recovery_s", o.measuredRecoverySeconds());
        m.put("recovery_ratio", o.recoveryRatio());
        m.put("sim_time_to_decision_s_per_seed", o.seedDecisionSeconds());
        m.put("sim_time_to_recovery_s_per_seed", o.seedRecoverySeconds());
        m.put("device_speed", o.speed());
        m.put("measured_source", o.measuredSource());
        m.put("batching", o.batching());
        return m;
    }
}
