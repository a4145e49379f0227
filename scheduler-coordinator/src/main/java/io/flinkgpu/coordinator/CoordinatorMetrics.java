package io.flinkgpu.coordinator;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The coordinator's own metrics in Prometheus' text format (served on {@code /metrics}): plans
 * published, moves, cycles and failures, the current epoch, the instances warming up before
 * their route, each rollout's state, step and B's weight with the rollout decisions taken, and
 * the decision latency (collect to realize) as a summary over the last 1,024 cycles.
 */
public final class CoordinatorMetrics {
    private static final int WINDOW = 1024;

    private final AtomicLong plansPublished = new AtomicLong();
    private final AtomicLong moves = new AtomicLong();
    private final AtomicLong cycles = new AtomicLong();
    private final AtomicLong cycleFailures = new AtomicLong();
    private final AtomicLong decisions = new AtomicLong();
    private volatile long epoch;
    private volatile boolean paused;
    private volatile int routesWarming;
    private volatile int modelsAtZero;
    private volatile int modelsUnplaced;
    private volatile io.flinkgpu.coordinator.rollout.RolloutEngine rollouts;
    private final double[] latencies = new double[WINDOW];
    private long latencyCount;
    private double latencySum;

    public void planPublished(long newEpoch, int movesInPlan) {
        plansPublished.incrementAndGet();
        moves.addAndGet(movesInPlan);
        epoch = newEpoch;
    }

    public void cycle(double seconds, int decisionCount) {
        cycles.incrementAndGet();
        decisions.addAndGet(decisionCount);
        synchronized (latencies) {
            latencies[(int) (latencyCount % WINDOW)] = seconds;
            latencyCount++;
            latencySum += seconds;
        }
    }

    public void cycleFailed() {
        cycleFailures.incrementAndGet();
    }

    public void epoch(long e) {
        epoch = e;
    }

    private volatile java.util.Map<String, Double> tenantShares = java.util.Map.of();

    /** Each tenant's dominant share at the last plan. */
    public void tenants(java.util.Map<String, io.flinkgpu.coordinator.plan.TenantAccounting.TenantUsage> usage) {
        java.util.Map<String, Double> shares = new java.util.TreeMap<>();
        usage.forEach((t, u) -> shares.put(t, u.dominantShare()));
        tenantShares = shares;
    }

    public void paused(boolean p) {
        paused = p;
    }

    /** Model instances placed but not routed yet, waiting for their load to be reported (coordinator.plan.warm-before-route). */
    public void routesWarming(int n) {
        routesWarming = n;
    }

    public int routesWarming() {
        return routesWarming;
    }

    /** Models scaled to zero at the last planning cycle (coordinator.plan.scale-to-zero-after). */
    public void modelsAtZero(int n) {
        modelsAtZero = n;
    }

    public int modelsAtZero() {
        return modelsAtZero;
    }

    /**
     * Models with an instance the last plan wanted and could not place: no device had the memory
     * and a free model slot ({@code coordinator.device.max-models}).
     */
    public void modelsUnplaced(int n) {
        modelsUnplaced = n;
    }

    public int modelsUnplaced() {
        return modelsUnplaced;
    }

    /** The rollouts whose state, step, B's weight and decisions {@code /metrics} shows; null: none. */
    public void rollouts(io.flinkgpu.coordinator.rollout.RolloutEngine engine) {
        rollouts = engine;
    }

    public long plansPublished() {
        return plansPublished.get();
    }

    public long moves() {
        return moves.get();
    }

    public String prometheusText() {
        StringBuilder sb = new StringBuilder();
        counter(sb, "coordinator_plans_published_total", "Plans published to the control topic.", plansPublished.get());
        counter(sb, "coordinator_moves_total", "Model instances relocated by published plans.", moves.get());
        counter(sb, "coordinator_decisions_total", "Decisions taken (with reasons, see /api/decisions).", decisions.get());
        counter(sb, "coordinator_cycles_total", "Collect-evaluate-plan-realize cycles completed.", cycles.get());
        counter(sb, "coordinator_cycle_failures_total", "Cycles that failed (metrics unreadable, publish failed).",
                cycleFailures.get());
        gauge(sb, "coordinator_plan_epoch", "Epoch of the last plan published.", epoch);
        gauge(sb, "coordinator_paused", "1 while automatic rebalancing is paused.", paused ? 1 : 0);
        gauge(sb, "coordinator_routes_warming", "Model instances placed but not routed yet, and rollouts whose new "
                + "version gets no traffic yet: their load is not reported yet (coordinator.plan.warm-before-route).",
                routesWarming);
        gauge(sb, "coordinator_models_at_zero", "Models scaled to zero: no request measured for "
                + "coordinator.plan.scale-to-zero-after, so no instance is planned until one comes.", modelsAtZero);
        gauge(sb, "coordinator_models_unplaced", "Models with an instance the last plan wanted and could not place: "
                + "no device had the memory and a free model slot (coordinator.device.max-models).", modelsUnplaced);
        java.util.Map<String, Double> shares = tenantShares;
        if (!shares.isEmpty()) {
            sb.append("# HELP coordinator_tenant_dominant_share A tenant's dominant share of the fleet, shared models' "
                    + "cost split by request rate.\n# TYPE coordinator_tenant_dominant_share gauge\n");
            shares.forEach((t, v) -> sb.append("coordinator_tenant_dominant_share{tenant=\"").append(label(t))
                    .append("\"} ").append(number(v)).append('\n'));
        }
        rolloutMetrics(sb);
        double[] window;
        long count;
        double sum;
        synchronized (latencies) {
            count = latencyCount;
            sum = latencySum;
            window = Arrays.copyOf(latencies, (int) Math.min(count, WINDOW));
        }
        Arrays.sort(window);
        sb.append("# HELP coordinator_decision_latency_seconds Time from collecting metrics to publishing the plan.\n")
                .append("# TYPE coordinator_decision_latency_seconds summary\n");
        for (double q : new double[] {0.5, 0.9, 0.99}) {
            double v = window.length == 0 ? Double.NaN : window[(int) Math.min(window.length - 1, Math.floor(q * window.length))];
            sb.append(String.format(Locale.ROOT, "coordinator_decision_latency_seconds{quantile=\"%s\"} %s%n", q,
                    number(v)));
        }
        sb.append("coordinator_decision_latency_seconds_sum ").append(number(sum)).append('\n');
        sb.append("coordinator_decision_latency_seconds_count ").append(count).append('\n');
        return sb.toString();
    }

    /** Actions whose counter every model under rollout shows, 0 until taken. */
    private static final java.util.List<String> ROLLOUT_ACTIONS = java.util.List.of("promote", "rollback", "done");

    private void rolloutMetrics(StringBuilder sb) {
        io.flinkgpu.coordinator.rollout.RolloutEngine engine = rollouts;
        if (engine == null) {
            return;
        }
        java.util.List<io.flinkgpu.coordinator.rollout.Rollout> all = new java.util.ArrayList<>(engine.all());
        all.sort(java.util.Comparator.comparing(io.flinkgpu.coordinator.rollout.Rollout::model));
        java.util.Map<String, java.util.Map<String, Long>> counts = engine.decisionCounts();
        if (all.isEmpty() && counts.isEmpty()) {
            return;
        }
        sb.append("# HELP coordinator_rollout_state A model's rollout (kept until removed): 1 for its state, 0 for "
                + "the others (RUNNING, PAUSED, DONE, ROLLED_BACK, ABORTED).\n# TYPE coordinator_rollout_state gauge\n");
        for (var r : all) {
            for (var state : io.flinkgpu.coordinator.rollout.Rollout.State.values()) {
                sb.append("coordinator_rollout_state{model=\"").append(label(r.model())).append("\",from=\"")
                        .append(label(r.from())).append("\",to=\"").append(label(r.to())).append("\",state=\"")
                        .append(state.name()).append("\"} ").append(r.state() == state ? 1 : 0).append('\n');
            }
        }
        sb.append("# HELP coordinator_rollout_step A model's canary step index (0-based; 0 in the shadow phase, "
                + "see coordinator_rollout_shadow).\n# TYPE coordinator_rollout_step gauge\n");
        all.forEach(r -> sb.append("coordinator_rollout_step{model=\"").append(label(r.model())).append("\"} ")
                .append(r.step()).append('\n'));
        sb.append("# HELP coordinator_rollout_shadow 1 while a model's rollout is in its shadow phase (B gets copies, "
                + "no share).\n# TYPE coordinator_rollout_shadow gauge\n");
        all.forEach(r -> sb.append("coordinator_rollout_shadow{model=\"").append(label(r.model())).append("\"} ")
                .append(r.phase() == io.flinkgpu.coordinator.rollout.Rollout.Phase.SHADOW ? 1 : 0).append('\n'));
        sb.append("# HELP coordinator_rollout_warming 1 while a model's rollout waits for its new version to be "
                + "reported loaded where the old one is, before the new version gets traffic.\n"
                + "# TYPE coordinator_rollout_warming gauge\n");
        all.forEach(r -> sb.append("coordinator_rollout_warming{model=\"").append(label(r.model())).append("\"} ")
                .append(r.state().active() && r.phase() == io.flinkgpu.coordinator.rollout.Rollout.Phase.WARMING ? 1 : 0)
                .append('\n'));
        sb.append("# HELP coordinator_rollout_to_weight B's share of the model's unpinned requests now (0 in the "
                + "shadow phase and after a rollback or abort, 1 when done).\n"
                + "# TYPE coordinator_rollout_to_weight gauge\n");
        all.forEach(r -> sb.append("coordinator_rollout_to_weight{model=\"").append(label(r.model())).append("\"} ")
                .append(number(r.toShare())).append('\n'));
        sb.append("# HELP coordinator_rollout_decisions_total Rollout decisions this coordinator took since it "
                + "started, by model and decision (promote, rollback, done always; start, pause, resume, abort, "
                + "reset, forget once taken).\n# TYPE coordinator_rollout_decisions_total counter\n");
        java.util.Set<String> models = new java.util.TreeSet<>(counts.keySet());
        all.forEach(r -> models.add(r.model()));
        for (String m : models) {
            java.util.Map<String, Long> c = new java.util.TreeMap<>(counts.getOrDefault(m, java.util.Map.of()));
            ROLLOUT_ACTIONS.forEach(a -> c.putIfAbsent(a, 0L));
            c.forEach((a, n) -> sb.append("coordinator_rollout_decisions_total{model=\"").append(label(m))
                    .append("\",decision=\"").append(a).append("\"} ").append(n).append('\n'));
        }
    }

    private static void counter(StringBuilder sb, String name, String help, long v) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(" counter\n")
                .append(name).append(' ').append(v).append('\n');
    }

    private static void gauge(StringBuilder sb, String name, String help, double v) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n')
                .append("# TYPE ").append(name).append(" gauge\n")
                .append(name).append(' ').append(number(v)).append('\n');
    }

    /** Prometheus label value escaping: backslash, double quote, newline. */
    static String label(String v) {
        return v.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }

    private static String number(double v) {
        return Double.isNaN(v) ? "NaN" : v == Math.rint(v) && Math.abs(v) < 1e15 ? String.valueOf((long) v)
                : String.format(Locale.ROOT, "%.6g", v);
    }
}
