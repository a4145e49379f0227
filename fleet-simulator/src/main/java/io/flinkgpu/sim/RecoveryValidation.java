package io.flinkgpu.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.plan.PlannerSettings;
import io.flinkgpu.inference.device.SpeedModel;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The coordinator recovery benchmark (benchmarks' {@code RecoveryBenchmark}, published in
 * {@code docs/benchmarks/coordinator/recovery.json}) replayed in the simulator: two simulated GPUs
 * of {@code 1+4*b} ms, {@code fashion-mnist-cnn} at 130/s stepping to 260/s after 60 s, a steady
 * second model at 30/s, SLO 150 ms, target utilisation 0.8, a 1.5 s cycle, metrics fetched every
 * 0.5 s and read after a 0.3 s settle. Every response gets the run's measured p50 before the step
 * added (the Kafka and Flink path the simulation does not model). Time to decision and time to p99
 * recovery are computed as the benchmark computes them, and compared with its measured values.
 * The models run as the benchmark's job runs them: batches of at most the operator's default
 * maximum, no scheduling block (default batch sizing) and requests without a deadline, so an
 * overloaded subtask queues them instead of expiring them.
 * The coordinator runs as in the measured run, which was made before
 * {@code coordinator.plan.warm-before-route} and {@code coordinator.forecast.*} existed: routes
 * change with the plan, and the planner sees the measured demand.
 */
public final class RecoveryValidation {
    /** The outcome: simulated and measured, and their ratio. */
    public record Outcome(double simDecisionSeconds, double measuredDecisionSeconds, double simRecoverySeconds,
            double measuredRecoverySeconds, Map<Integer, Double> windowP99Ms, Map<Integer, Long> windowFailures,
            List<Map<String, Object>> plans, String measuredSource) {
        public double decisionRatio() {
            return simDecisionSeconds / measuredDecisionSeconds;
        }

        public double recoveryRatio() {
            return simRecoverySeconds / measuredRecoverySeconds;
        }
    }

    static final double BEFORE = 60;
    static final double AFTER = 60;
    static final double SLO_MS = 150;
    static final int RECOVERY_WINDOWS = 5;
    /** The job's batches: the model's max_batch_size (64) capped by the operator's default max batch size. */
    static final int MAX_BATCH = Math.min(64, io.flinkgpu.inference.model.BatchingConfig.DEFAULT_MAX_BATCH_SIZE);

    private RecoveryValidation() {}

    @SuppressWarnings("unchecked")
    public static Outcome run(Calibration base, Path repositoryRoot, long seed) throws IOException {
        Calibration cal = base.withKind("recovery-sim", Map.of(Arch.IMAGE_CNN, SpeedModel.parse("1+4*b")),
                "the recovery benchmark's simulated GPU, 1+4*b ms");
        Workload.Spec spec = new Workload.Spec(2, 0, "poisson", 1, 0, 1, 0, 0, new double[] {1, 0, 0, 0, 0}, 0, 1,
                seed);
        // as the benchmark's job runs the shipped CNN: its max_batch_size 64 capped by the operator's default
        // inference.batching.max-batch-size, no max_queue_delay_ms (the operator's default, 0), no scheduling block
        List<SimModel> models = List.of(
                new SimModel(0, "fashion-mnist-cnn", Arch.IMAGE_CNN, 1, 256L << 20, SLO_MS, true, 130, 0, MAX_BATCH,
                        0),
                new SimModel(1, "fashion-mnist-cnn-b", Arch.IMAGE_CNN, 1, 256L << 20, SLO_MS, true, 30, 0, MAX_BATCH,
                        0));
        Workload w = Workload.of(spec, models, new Workload.Step(0, BEFORE, 2.0));
        PlannerSettings d = PlannerSettings.defaults();
        FleetConfig c = new FleetConfig(Collections.nCopies(2, "recovery-sim"), 8L << 30,
                io.flinkgpu.inference.device.LoadTimeModel.parse("50+0.5*mib"), BEFORE + AFTER, 0.001, 1.5, 0.5, 0.3,
                0.05, 4, new PlannerSettings(0.8, d.hysteresis(), d.hotThreshold(), d.movePenalty(),
                        d.minMoveIntervalMillis(), d.reversalWindowMillis(), d.maxReversalsPerWindow(),
                        d.maxMovesPerPlan()), 300, false, 30, 0, 1);
        double[] measured = measured(repositoryRoot.resolve("docs/benchmarks/coordinator/recovery.json"));
        // the real path's unloaded share (two Kafka hops, Flink): the measured p50 before the step
        // the benchmark's requests carry no deadline and its models no scheduling block: nothing expires, it queues
        // the measured run predates queue-aware routing: its router split by the plan's weights alone
        SimResult r = new FleetSimulator(w, c, Policy.PLANNER, cal, true).withPathLatency(measured[2])
                .withoutScheduling().withRoundRobinRouting().run();
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
        return new Outcome(decision, measured[0], recovery, measured[1], p99, failures, plans,
                "docs/benchmarks/coordinator/recovery.json (configuration 'coordinator')");
    }

    /** As the benchmark judges a window: answers, a p99 within the SLO, no failures; a window without answers is not. */
    static boolean inSlo(int s, Map<Integer, Double> p99, Map<Integer, Long> failures) {
        return p99.containsKey(s) && p99.get(s) <= SLO_MS && failures.getOrDefault(s, 0L) == 0;
    }

    /**
     * The measured time to decision, time to p99 recovery (recomputed from the windows with the
     * same rule if the run does not state it) and unloaded p50 of the 'coordinator' configuration.
     */
    static double[] measured(Path file) throws IOException {
        JsonNode root = new ObjectMapper().readTree(Files.readString(file));
        for (JsonNode cfg : root.path("configs")) {
            if (!"coordinator".equals(cfg.path("name").asText())) {
                continue;
            }
            double decision = number(cfg, "time_to_decision_s");
            double recovery = number(cfg, "time_to_p99_recovery_s");
            if (Double.isNaN(recovery)) {
                List<Integer> t = new ArrayList<>();
                List<Boolean> ok = new ArrayList<>();
                for (JsonNode win : cfg.path("windows")) {
                    t.add(win.path("t_s").asInt());
                    ok.add(win.path("within_slo").asBoolean());
                }
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
            return new double[] {decision, recovery, number(cfg, "p50_before_step_ms")};
        }
        throw new IOException(file + " has no 'coordinator' configuration");
    }

    private static double number(JsonNode cfg, String... names) {
        for (String n : names) {
            JsonNode v = cfg.get(n);
            if (v != null && v.isNumber()) {
                return v.asDouble();
            }
        }
        return Double.NaN;
    }

    public static Map<String, Object> describe(Outcome o) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("sim_time_to_decision_s", o.simDecisionSeconds());
        m.put("measured_time_to_decision_s", o.measuredDecisionSeconds());
        m.put("decision_ratio", o.decisionRatio());
        m.put("sim_time_to_recovery_s", o.simRecoverySeconds());
        m.put("measured_time_to_recovery_s", o.measuredRecoverySeconds());
        m.put("recovery_ratio", o.recoveryRatio());
        m.put("measured_source", o.measuredSource());
        return m;
    }
}
