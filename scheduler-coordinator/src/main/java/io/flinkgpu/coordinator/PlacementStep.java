package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.evaluate.DeviceLoad;
import io.flinkgpu.coordinator.evaluate.IdleTracker;
import io.flinkgpu.coordinator.evaluate.ModelDemand;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.ModelSpec;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.coordinator.plan.PlacementPlanner;
import io.flinkgpu.coordinator.plan.ResourceVector;
import io.flinkgpu.coordinator.plan.ScaleToZero;
import io.flinkgpu.coordinator.plan.TenantAccounting;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ModelRoute;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;

/**
 * The loop's plan step: turns a cycle's demand into the {@link PlacementPlanner}'s inputs, runs
 * weighted DRF placement from where the fleet is, and splits the fleet among the tenants.
 *
 * <ul>
 *   <li>devices: every measured device, with its reported memory (else the default), the model
 *       limit and its host cores;
 *   <li>models: each model's memory, device time and CPU per instance, its DRF weight derived
 *       from the tenants that send it traffic ({@link TenantAccounting#modelWeights});
 *   <li>where from: the stored placement, or before the first plan where traffic was served
 *       (an {@code OBSERVE} decision says so);
 *   <li>scale-in: each model's highest load within {@code coordinator.plan.scale-in-window};
 *   <li>scale to zero ({@link IdleTracker}, {@code coordinator.plan.scale-to-zero-after}): the
 *       models whose request counters stood still that long get no instance, and those at zero
 *       whose counters grew come back, first on a device that served them meanwhile.
 * </ul>
 *
 * Apart from the idle clocks (written back outside dry runs) it only reads the state store; the
 * loop records what it publishes.
 */
public final class PlacementStep {
    /**
     * What the plan step proposes.
     *
     * @param devices the devices it planned over (the routes and commands address their subtasks)
     * @param plan the placement and the planner's decisions
     * @param routes the routing table the placement implies
     * @param decisions the step's decisions: {@code OBSERVE} (if any) followed by the planner's
     * @param tenantRates model -> tenant -> requests per second
     * @param tenantUsage each tenant's share of what the placement holds
     * @param idleness each model's idle clock at this cycle (scale to zero)
     */
    public record Proposal(List<DeviceSpec> devices, PlacementPlan plan, List<ModelRoute> routes,
            List<Decision> decisions, Map<String, Map<String, Double>> tenantRates,
            Map<String, TenantAccounting.TenantUsage> tenantUsage, IdleTracker.Idleness idleness) {
        /** Without idle clocks. */
        public Proposal(List<DeviceSpec> devices, PlacementPlan plan, List<ModelRoute> routes,
                List<Decision> decisions, Map<String, Map<String, Double>> tenantRates,
                Map<String, TenantAccounting.TenantUsage> tenantUsage) {
            this(devices, plan, routes, decisions, tenantRates, tenantUsage, IdleTracker.Idleness.NONE);
        }
    }

    private final PlacementPlanner planner;
    private final long defaultDeviceMemoryBytes;
    private final int maxModelsPerDevice;
    private final double cpuPerDevice;
    private final double cpuPerInstance;
    private final double defaultWeight;
    private final long scaleInWindowMillis;
    private final IdleTracker idle;

    /**
     * @param defaultDeviceMemoryBytes memory of a device that does not report its total
     * @param maxModelsPerDevice models resident on one device at most
     * @param cpuPerDevice host cores that serve one device's subtasks
     * @param cpuPerInstance host cores one model instance uses
     * @param defaultWeight DRF weight of a tenant or model without a configured one
     * @param scaleInWindow how long a model's load must stay low before it gives an instance back
     */
    public PlacementStep(PlacementPlanner planner, long defaultDeviceMemoryBytes, int maxModelsPerDevice,
            double cpuPerDevice, double cpuPerInstance, double defaultWeight, Duration scaleInWindow) {
        this(planner, defaultDeviceMemoryBytes, maxModelsPerDevice, cpuPerDevice, cpuPerInstance, defaultWeight,
                scaleInWindow, IdleTracker.disabled());
    }

    /** @param idle the models' idle clocks: which go to zero, which come back ({@link IdleTracker#disabled()}: none) */
    public PlacementStep(PlacementPlanner planner, long defaultDeviceMemoryBytes, int maxModelsPerDevice,
            double cpuPerDevice, double cpuPerInstance, double defaultWeight, Duration scaleInWindow,
            IdleTracker idle) {
        this.idle = idle;
        this.planner = planner;
        this.defaultDeviceMemoryBytes = defaultDeviceMemoryBytes;
        this.maxModelsPerDevice = maxModelsPerDevice;
        this.cpuPerDevice = cpuPerDevice;
        this.cpuPerInstance = cpuPerInstance;
        this.defaultWeight = defaultWeight;
        this.scaleInWindowMillis = scaleInWindow.toMillis();
    }

    /** The step as the coordinator's options configure it. */
    public static PlacementStep fromConfig(ReadableConfig config) {
        return new PlacementStep(new PlacementPlanner(CoordinatorOptions.plannerSettings(config)),
                config.get(CoordinatorOptions.DEFAULT_DEVICE_MEMORY).getBytes(),
                config.get(CoordinatorOptions.MAX_MODELS_PER_DEVICE), config.get(CoordinatorOptions.CPU_PER_DEVICE),
                config.get(CoordinatorOptions.CPU_PER_INSTANCE), config.get(CoordinatorOptions.DEFAULT_WEIGHT),
                config.get(CoordinatorOptions.SCALE_IN_WINDOW),
                new IdleTracker(config.get(CoordinatorOptions.SCALE_TO_ZERO_AFTER)));
    }

    /**
     * @param state read for the tenant weights, the current placement, the moves and the latency history
     * @param firstPlan whether no plan was recorded yet
     */
    public Proposal propose(Demand demand, StateStore state, boolean firstPlan, long now) {
        return propose(demand, null, state, firstPlan, now, true);
    }

    /**
     * @param snapshot this cycle's collection, for the idle clocks (null: no model goes to zero or comes back)
     * @param dryRun read the idle clocks but do not write them back
     */
    public Proposal propose(Demand demand, MetricSnapshot snapshot, StateStore state, boolean firstPlan, long now,
            boolean dryRun) {
        IdleTracker.Idleness idleness = snapshot == null ? IdleTracker.Idleness.NONE
                : idle.observe(snapshot, demand.models().keySet(), state, now, !dryRun);
        List<DeviceSpec> devices = devices(demand);
        Map<String, Double> weights = state.tenantWeights();
        Map<String, Map<String, Double>> tenantRates = tenantRates(demand);
        List<ModelSpec> models = models(demand, tenantRates, weights, state.models());
        List<Decision> decisions = new ArrayList<>();
        Placement current = state.placement();
        if (firstPlan && current.devicesByModel().isEmpty()) {
            current = observed(demand);
            if (!current.devicesByModel().isEmpty()) {
                decisions.add(new Decision(now, "OBSERVE", null, null,
                        "first plan starts from where traffic was served: " + current.devicesByModel()));
            }
        }
        PlacementPlan plan = planner.plan(devices, models, current, state.moves(), now,
                recentPeakLoads(demand, state, now), scaleToZero(idleness));
        decisions.addAll(plan.decisions());
        Map<String, TenantAccounting.TenantUsage> tenantUsage = TenantAccounting.split(tenantRates,
                held(models, plan), plan.allocation().capacity(), weights, defaultWeight);
        return new Proposal(devices, plan, plan.routes(devices), decisions, tenantRates, tenantUsage, idleness);
    }

    /** The planner's view of the idle clocks: the models at zero, and those back from zero with where they were served. */
    private static ScaleToZero scaleToZero(IdleTracker.Idleness idleness) {
        Map<String, String> atZero = new TreeMap<>();
        idleness.in(IdleTracker.State.ZERO).forEach((m, i) -> atZero.put(m, i.reason()));
        Map<String, ScaleToZero.Back> back = new TreeMap<>();
        idleness.in(IdleTracker.State.BACK).forEach((m, i) -> back.put(m, new ScaleToZero.Back(i.servedOn(), i.reason())));
        return new ScaleToZero(atZero, back);
    }

    public IdleTracker idleTracker() {
        return idle;
    }

    private List<DeviceSpec> devices(Demand demand) {
        List<DeviceSpec> out = new ArrayList<>();
        for (DeviceLoad d : demand.devices().values()) {
            out.add(new DeviceSpec(d.deviceId(), d.memoryTotalBytes() > 0 ? d.memoryTotalBytes()
                    : defaultDeviceMemoryBytes, maxModelsPerDevice, cpuPerDevice, d.subtasks()));
        }
        return out;
    }

    private static Map<String, Map<String, Double>> tenantRates(Demand demand) {
        Map<String, Map<String, Double>> out = new TreeMap<>();
        demand.models().values().forEach(m -> {
            if (!m.tenantRates().isEmpty()) {
                out.put(m.model(), m.tenantRates());
            }
        });
        return out;
    }

    /**
     * The planner's models: each with its demand, its batch time at the batch the demand is priced
     * at (from the latency model, where one is fitted) and its declared SLO, which together decide
     * which models may share a device.
     */
    private List<ModelSpec> models(Demand demand, Map<String, Map<String, Double>> tenantRates,
            Map<String, Double> weights, Map<String, io.flinkgpu.coordinator.state.ModelInfo> catalog) {
        Map<String, Double> modelWeights = TenantAccounting.modelWeights(demand.models().keySet(), tenantRates,
                weights, defaultWeight);
        List<ModelSpec> out = new ArrayList<>();
        for (ModelDemand m : demand.models().values()) {
            double batchMs = m.alphaMicros() > 0 || m.betaMicros() > 0
                    ? (Math.max(0, m.alphaMicros()) + Math.max(0, m.betaMicros()) * m.batchSize()) / 1000 : 0;
            io.flinkgpu.coordinator.state.ModelInfo info = catalog.get(m.model());
            double sloMs = info != null && info.sloMillis() > 0 ? info.sloMillis() : 0;
            out.add(new ModelSpec(m.model(), m.memoryBytes(), m.deviceSecondsPerSecond(), cpuPerInstance,
                    modelWeights.get(m.model()), Double.isFinite(batchMs) ? batchMs : 0, sloMs));
        }
        return out;
    }

    /** Before the first plan: each model on the devices whose subtasks answered its requests. */
    private static Placement observed(Demand demand) {
        Map<String, Set<String>> p = new TreeMap<>();
        demand.models().values().forEach(m -> {
            if (!m.servedOn().isEmpty()) {
                p.put(m.model(), m.servedOn());
            }
        });
        return Placement.of(p);
    }

    /**
     * Per model, the highest load within the scale-in window: the current device time per
     * request times the highest rate the latency history recorded in the window, measured or
     * planned (a forecast that added a replica holds it as long as a measurement would).
     */
    private Map<String, Double> recentPeakLoads(Demand demand, StateStore state, long now) {
        Map<String, Double> out = new TreeMap<>();
        for (ModelDemand m : demand.models().values()) {
            if (m.ratePerSecond() <= 0) {
                continue;
            }
            double perRequest = m.deviceSecondsPerSecond() / m.ratePerSecond();
            double peakRate = m.ratePerSecond();
            for (LatencySample s : state.latencyHistory(m.model())) {
                if (now - s.atMillis() <= scaleInWindowMillis) {
                    peakRate = Math.max(peakRate, s.peakRatePerSecond());
                }
            }
            out.put(m.model(), peakRate * perRequest);
        }
        return out;
    }

    /** What each model holds under the plan: its instances' memory and CPU, and its device time. */
    private static Map<String, ResourceVector> held(List<ModelSpec> models, PlacementPlan plan) {
        Map<String, ResourceVector> out = new TreeMap<>();
        for (ModelSpec m : models) {
            int instances = plan.placement().devices(m.name()).size();
            out.put(m.name(), new ResourceVector((double) m.memoryBytes() * instances, m.load(),
                    m.cpuPerInstance() * instances));
        }
        return out;
    }
}
