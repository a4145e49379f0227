package io.flinkgpu.coordinator;

import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The coordinator's own metrics in Prometheus' text format (served on {@code /metrics}): plans
 * published, moves, cycles and failures, the current epoch, the instances warming up before
 * their route, and the decision latency (collect to
 * realize) as a summary over the last 1,024 cycles.
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
        gauge(sb, "coordinator_routes_warming", "Model instances placed but not routed yet: their load is not "
                + "reported yet (coordinator.plan.warm-before-route).", routesWarming);
        gauge(sb, "coordinator_models_at_zero", "Models scaled to zero: no request measured for "
                + "coordinator.plan.scale-to-zero-after, so no instance is planned until one comes.", modelsAtZero);
        java.util.Map<String, Double> shares = tenantShares;
        if (!shares.isEmpty()) {
            sb.append("# HELP coordinator_tenant_dominant_share A tenant's dominant share of the fleet, shared models' "
                    + "cost split by request rate.\n# TYPE coordinator_tenant_dominant_share gauge\n");
            shares.forEach((t, v) -> sb.append("coordinator_tenant_dominant_share{tenant=\"").append(label(t))
                    .append("\"} ").append(number(v)).append('\n'));
        }
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
