package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.evaluate.DemandEvaluator;
import io.flinkgpu.coordinator.evaluate.DeviceLoad;
import io.flinkgpu.coordinator.evaluate.ModelDemand;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.ModelSpec;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.coordinator.plan.PlacementPlanner;
import io.flinkgpu.coordinator.plan.ResourceVector;
import io.flinkgpu.coordinator.plan.TenantAccounting;
import io.flinkgpu.coordinator.realize.PlanRealizer;
import io.flinkgpu.coordinator.realize.Rescaler;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control loop, one cycle per {@link #runOnce}: collect -> evaluate -> plan -> realize,
 * like the autoscaler's {@code JobAutoScalerImpl.scale()}.
 *
 * <p>Epochs: a plan is recorded in the state store (which refuses to go back) before it is
 * published, so a crash between the two never reuses an epoch; a plan that was recorded but
 * not published (crash, Kafka down) is published again on start and at the next cycle. The job
 * ignores epochs it already has.
 */
public final class Coordinator {
    private static final Logger LOG = LoggerFactory.getLogger(Coordinator.class);

    /** What one cycle did. */
    public record CycleResult(boolean published, ControlMessage plan, PlacementPlan placement, Demand demand,
            String skipped) {}

    private final ReadableConfig config;
    private final MetricSource source;
    private final DemandEvaluator evaluator;
    private final PlacementPlanner planner;
    private final PlanRealizer realizer;
    private final StateStore store;
    private final CoordinatorMetrics metrics;
    private final Clock clock;
    private final io.flinkgpu.coordinator.plan.ParallelismPlanner parallelismPlanner;
    private final Rescaler rescaler;
    private long lastRescaleMillis = Long.MIN_VALUE;
    private String lastParallelismDecision;

    private volatile MetricSnapshot previous;
    private volatile Demand lastDemand;
    private volatile List<DeviceSpec> lastDevices = List.of();
    private volatile Map<String, TenantAccounting.TenantUsage> lastTenantUsage = Map.of();
    private boolean unpublished;

    public Coordinator(ReadableConfig config, MetricSource source, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock) {
        this(config, source, realizer, store, metrics, clock, null);
    }

    /**
     * @param rescaler applies the planner's parallelism ({@link io.flinkgpu.coordinator.realize.Rescalers}), or
     *     null to only log what it would choose
     */
    public Coordinator(ReadableConfig config, MetricSource source, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock, Rescaler rescaler) {
        this.rescaler = rescaler;
        this.parallelismPlanner = new io.flinkgpu.coordinator.plan.ParallelismPlanner(
                config.get(CoordinatorOptions.MAX_SLOTS_PER_DEVICE), config.get(CoordinatorOptions.DEVICE_COUNT),
                config.get(CoordinatorOptions.BUSY_HIGH), config.get(CoordinatorOptions.TARGET_UTILIZATION),
                config.get(CoordinatorOptions.HYSTERESIS), config.get(CoordinatorOptions.MIN_RESCALE_INTERVAL));
        this.config = config;
        this.source = source;
        this.evaluator = new DemandEvaluator(config.get(CoordinatorOptions.DEFAULT_MODEL_MEMORY).getBytes(),
                config.get(CoordinatorOptions.DEFAULT_SLO).toMillis());
        this.planner = new PlacementPlanner(CoordinatorOptions.plannerSettings(config));
        this.realizer = realizer;
        this.store = store;
        this.metrics = metrics;
        this.clock = clock;
        metrics.epoch(store.lastEpoch());
        metrics.paused(store.paused());
    }

    /** Publishes the last recorded plan again (same epoch), so a restarted coordinator's job is in step. */
    public synchronized Optional<ControlMessage> resume() {
        Optional<ControlMessage> last = store.lastPlan();
        if (last.isPresent()) {
            try {
                realizer.publish(last.get());
                unpublished = false;
                LOG.info("Resumed at plan epoch {}", last.get().epoch());
            } catch (Exception e) {
                unpublished = true;
                LOG.warn("Could not re-publish plan epoch {}: {}", last.get().epoch(), e.toString());
            }
        }
        return last;
    }

    public synchronized CycleResult runOnce(boolean dryRun) {
        long started = System.nanoTime();
        long now = clock.millis();
        if (unpublished && !dryRun) {
            resume();
        }
        MetricSnapshot snapshot;
        try {
            snapshot = source.collect();
        } catch (MetricSource.CollectException e) {
            metrics.cycleFailed();
            LOG.warn("Skipping cycle: {}", e.getMessage());
            return new CycleResult(false, null, null, null, e.getMessage());
        }
        // evaluate
        Map<String, List<LatencySample>> history = new HashMap<>();
        Set<String> names = new java.util.TreeSet<>(store.models().keySet());
        snapshot.subtasks().forEach(s -> s.models().forEach(m -> names.add(m.model())));
        names.forEach(n -> history.put(n, store.latencyHistory(n)));
        Demand demand = evaluator.evaluate(previous, snapshot, store.models(), history);
        boolean measured = previous != null;
        previous = snapshot;
        lastDemand = demand;
        if (!dryRun && measured) {
            for (ModelDemand m : demand.models().values()) {
                store.appendLatency(m.model(), new LatencySample(now, m.alphaMicros(), m.betaMicros(),
                        m.ratePerSecond(), m.batchSize()));
            }
        }
        metrics.paused(store.paused());
        if (!measured) {
            metrics.cycle(seconds(started), 0);
            return new CycleResult(false, null, null, demand, "measuring: rates need a second collection");
        }
        if (!dryRun && store.paused()) {
            metrics.cycle(seconds(started), 0);
            return new CycleResult(false, null, null, demand, "paused");
        }

        // plan
        List<DeviceSpec> devices = devices(demand);
        lastDevices = devices;
        Map<String, Double> weights = store.tenantWeights();
        double defaultWeight = config.get(CoordinatorOptions.DEFAULT_WEIGHT);
        double cpu = config.get(CoordinatorOptions.CPU_PER_INSTANCE);
        Map<String, Map<String, Double>> tenantRates = new TreeMap<>();
        demand.models().values().forEach(m -> {
            if (!m.tenantRates().isEmpty()) {
                tenantRates.put(m.model(), m.tenantRates());
            }
        });
        Map<String, Double> modelWeights = TenantAccounting.modelWeights(demand.models().keySet(), tenantRates, weights,
                defaultWeight);
        List<ModelSpec> models = new ArrayList<>();
        for (ModelDemand m : demand.models().values()) {
            models.add(new ModelSpec(m.model(), m.memoryBytes(), m.deviceSecondsPerSecond(), cpu,
                    modelWeights.get(m.model())));
        }
        Optional<ControlMessage> last = store.lastPlan();
        Placement current = store.placement();
        List<Decision> extra = new ArrayList<>();
        if (last.isEmpty() && current.devicesByModel().isEmpty()) {
            current = observed(demand);
            if (!current.devicesByModel().isEmpty()) {
                extra.add(new Decision(now, "OBSERVE", null, null,
                        "first plan starts from where traffic was served: " + current.devicesByModel()));
            }
        }
        PlacementPlan plan = planner.plan(devices, models, current, store.moves(), now, recentPeakLoads(demand, now));
        Map<String, ResourceVector> held = new TreeMap<>();
        for (ModelSpec m : models) {
            int instances = plan.placement().devices(m.name()).size();
            held.put(m.name(), new ResourceVector((double) m.memoryBytes() * instances, m.load(), m.cpuPerInstance() * instances));
        }
        lastTenantUsage = TenantAccounting.split(tenantRates, held, plan.allocation().capacity(), weights,
                defaultWeight);
        metrics.tenants(lastTenantUsage);
        List<ModelRoute> routes = plan.routes(devices);
        // no first plan before there is something to route: until then the job's hash routing is the plan
        boolean publish = last.isEmpty() ? !routes.isEmpty()
                : plan.changesPlacement() || last.get().parallelism() != demand.parallelism()
                        || routesChanged(last.get().routes(), routes, config.get(CoordinatorOptions.WEIGHT_CHANGE));
        List<Decision> decisions = new ArrayList<>(extra);
        decisions.addAll(plan.decisions());
        if (parallelism(snapshot, demand, now, dryRun, decisions)) {
            // the job restarts at another parallelism: its counters start again, so measure afresh
            previous = null;
            if (!dryRun) {
                store.appendDecisions(decisions);
            }
            metrics.cycle(seconds(started), decisions.size());
            return new CycleResult(false, last.orElse(null), plan, demand, "rescaling");
        }
        if (!publish) {
            if (!dryRun) {
                store.appendDecisions(decisions);
            }
            metrics.cycle(seconds(started), decisions.size());
            return new CycleResult(false, last.orElse(null), plan, demand, "unchanged");
        }

        // realize
        long epoch = store.lastEpoch() + 1;
        ControlMessage message = ControlMessage.of(epoch, now, demand.parallelism(), routes, plan.commands(devices),
                summary(last.isEmpty(), plan, decisions));
        if (dryRun) {
            try {
                realizer.publish(message);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return new CycleResult(true, message, plan, demand, null);
        }
        // placement and moves first: the plan's synced write makes them durable with it
        store.putPlacement(plan.placement());
        store.appendMoves(plan.moves());
        store.recordPlan(message);
        for (ModelDemand m : demand.models().values()) {
            decisions.add(new Decision(now, "DEMAND", m.model(), null, m.reason()));
        }
        for (String line : TenantAccounting.describe(lastTenantUsage, tenantRates)) {
            decisions.add(new Decision(now, "TENANT", null, null, line));
        }
        decisions.add(new Decision(now, "PUBLISH", null, null, "epoch " + epoch + ": " + message.reason()));
        store.appendDecisions(decisions);
        try {
            realizer.publish(message);
            unpublished = false;
            metrics.planPublished(epoch, plan.moves().size());
            LOG.info("Published plan epoch {}: {}", epoch, message.reason());
        } catch (Exception e) {
            unpublished = true;
            metrics.cycleFailed();
            LOG.warn("Plan epoch {} recorded but not published (retried next cycle): {}", epoch, e.toString());
        }
        metrics.cycle(seconds(started), decisions.size());
        return new CycleResult(!unpublished, message, plan, demand, null);
    }

    /**
     * The parallelism step: what the planner would choose is logged once per change of mind; with
     * a rescaler (and not a dry run) it is applied. Returns whether the job is being rescaled.
     */
    private boolean parallelism(MetricSnapshot snapshot, Demand demand, long now, boolean dryRun,
            List<Decision> decisions) {
        Optional<io.flinkgpu.coordinator.plan.ParallelismPlanner.Result> result = parallelismPlanner.plan(
                demand.devices().values(), demand.parallelism(), now, lastRescaleMillis);
        if (result.isEmpty()) {
            lastParallelismDecision = null;
            return false;
        }
        Decision d = result.get().decision();
        Optional<Integer> target = result.get().parallelism();
        if (target.isEmpty() || rescaler == null || dryRun) {
            String reason = d.reason() + (target.isPresent() && rescaler == null
                    ? " (not applied: coordinator.parallelism.mode is off)" : "");
            if (!reason.equals(lastParallelismDecision)) {
                decisions.add(new Decision(d.atMillis(), d.action(), null, null, reason));
                lastParallelismDecision = reason;
            }
            return false;
        }
        lastRescaleMillis = now;
        lastParallelismDecision = null;
        try {
            rescaler.setParallelism(snapshot.jobId(), snapshot.vertexId(), target.get());
            decisions.add(d);
            LOG.info("Rescaling: {}", d.reason());
            return true;
        } catch (Exception e) {
            decisions.add(new Decision(now, "HOLD", null, null, d.reason() + "; the rescale failed: " + e.getMessage()));
            LOG.warn("Rescale to {} failed: {}", target.get(), e.toString());
            return false;
        }
    }

    /**
     * Per model, the highest load within {@code coordinator.plan.scale-in-window}: the current
     * device time per request times the highest rate the latency history recorded in the window.
     */
    private Map<String, Double> recentPeakLoads(Demand demand, long now) {
        long window = config.get(CoordinatorOptions.SCALE_IN_WINDOW).toMillis();
        Map<String, Double> out = new TreeMap<>();
        for (ModelDemand m : demand.models().values()) {
            if (m.ratePerSecond() <= 0) {
                continue;
            }
            double perRequest = m.deviceSecondsPerSecond() / m.ratePerSecond();
            double peakRate = m.ratePerSecond();
            for (LatencySample s : store.latencyHistory(m.model())) {
                if (now - s.atMillis() <= window) {
                    peakRate = Math.max(peakRate, s.ratePerSecond());
                }
            }
            out.put(m.model(), peakRate * perRequest);
        }
        return out;
    }

    private List<DeviceSpec> devices(Demand demand) {
        List<DeviceSpec> out = new ArrayList<>();
        long defaultMemory = config.get(CoordinatorOptions.DEFAULT_DEVICE_MEMORY).getBytes();
        for (DeviceLoad d : demand.devices().values()) {
            out.add(new DeviceSpec(d.deviceId(), d.memoryTotalBytes() > 0 ? d.memoryTotalBytes() : defaultMemory,
                    config.get(CoordinatorOptions.MAX_MODELS_PER_DEVICE), config.get(CoordinatorOptions.CPU_PER_DEVICE),
                    d.subtasks()));
        }
        return out;
    }

    private static Placement observed(Demand demand) {
        Map<String, Set<String>> p = new TreeMap<>();
        demand.models().values().forEach(m -> {
            if (!m.servedOn().isEmpty()) {
                p.put(m.model(), m.servedOn());
            }
        });
        return Placement.of(p);
    }

    static boolean routesChanged(List<ModelRoute> before, List<ModelRoute> after, double threshold) {
        Map<String, Map<Integer, Double>> a = weights(before);
        Map<String, Map<Integer, Double>> b = weights(after);
        if (!a.keySet().equals(b.keySet())) {
            return true;
        }
        for (String m : a.keySet()) {
            if (!a.get(m).keySet().equals(b.get(m).keySet())) {
                return true;
            }
            for (Map.Entry<Integer, Double> e : a.get(m).entrySet()) {
                double x = e.getValue();
                double y = b.get(m).get(e.getKey());
                if (Math.abs(x - y) > threshold * Math.max(x, y)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Each model's weights as shares of its total: only the proportions matter to the router. */
    private static Map<String, Map<Integer, Double>> weights(List<ModelRoute> routes) {
        Map<String, Map<Integer, Double>> out = new TreeMap<>();
        for (ModelRoute r : routes) {
            double total = r.targets().stream().mapToDouble(RouteTarget::weight).sum();
            Map<Integer, Double> w = new TreeMap<>();
            for (RouteTarget t : r.targets()) {
                w.put(t.subtask(), t.weight() / total);
            }
            out.put(r.model(), w);
        }
        return out;
    }

    private static String summary(boolean first, PlacementPlan plan, List<Decision> decisions) {
        List<String> parts = new ArrayList<>();
        for (Decision d : decisions) {
            if (!d.action().equals("HOLD") && !d.action().equals("OBSERVE") && parts.size() < 10) {
                parts.add(d.action() + " " + (d.model() == null ? "" : d.model())
                        + (d.device() == null ? "" : "@" + d.device()));
            }
        }
        String head = first ? "initial plan" : plan.changesPlacement() ? "placement changed" : "routing weights changed";
        return parts.isEmpty() ? head : head + ": " + String.join("; ", parts);
    }

    private static double seconds(long startedNanos) {
        return (System.nanoTime() - startedNanos) / 1e9;
    }

    /** The last collection (job and inference vertex ids), or null before the first. */
    public MetricSnapshot lastSnapshot() {
        return previous;
    }

    public Demand lastDemand() {
        return lastDemand;
    }

    /** Each tenant's share of the fleet at the last plan (tenants measured through per-tenant request counts). */
    public Map<String, TenantAccounting.TenantUsage> lastTenantUsage() {
        return lastTenantUsage;
    }

    public List<DeviceSpec> lastDevices() {
        return lastDevices;
    }

    public StateStore store() {
        return store;
    }

    public CoordinatorMetrics metrics() {
        return metrics;
    }
}
