package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.evaluate.DemandEvaluator;
import io.flinkgpu.coordinator.evaluate.ModelDemand;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.coordinator.plan.TenantAccounting;
import io.flinkgpu.coordinator.realize.PlanRealizer;
import io.flinkgpu.coordinator.realize.Rescaler;
import io.flinkgpu.coordinator.rollout.RolloutEngine;
import io.flinkgpu.coordinator.rollout.RolloutSettings;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.VersionSplit;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.apache.flink.configuration.ReadableConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control loop, one cycle per {@link #runOnce}. Like the autoscaler's
 * {@code JobAutoScalerImpl}, it gets its steps as constructor arguments and {@link #runOnce}
 * reads as the algorithm:
 *
 * <ol>
 *   <li>collect ({@link MetricSource}): the inference operator's metrics;
 *   <li>evaluate ({@link DemandEvaluator}): each model's demand and each device's load, from this
 *       collection and the newest one at least {@code coordinator.rate-window} older (the previous
 *       one right after a start), so the first collection only measures;
 *   <li>plan ({@link PlacementStep}): weighted DRF placement from where the fleet is; models whose
 *       request counters stood still for {@code coordinator.plan.scale-to-zero-after} get no instance;
 *   <li>rescale ({@link ParallelismStep}): a parallelism change restarts the job and ends the cycle;
 *   <li>warm ({@link WarmRouting}): a new instance is routed only once the job reports it loaded;
 *   <li>decide ({@link PublishPolicy}): whether the proposal is worth a new epoch;
 *   <li>realize: record the plan in the {@link StateStore}, then publish it ({@link PlanRealizer}).
 * </ol>
 *
 * Gray releases ({@link RolloutEngine}) are judged on each collection, right after the
 * evaluation; every plan carries the rollouts' version splits, and a changed split is published
 * at once as its own epoch (the routes of the plan in force, no commands), whatever the rest of
 * the cycle does.
 *
 * A cycle that stops early says why ({@link CycleResult#skipped}): the collection failed, rates
 * are still being measured, the operator paused planning, the job is being rescaled, or nothing
 * changed. A dry run plans as usual but records nothing and hands the plan to the realizer only
 * to show it.
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

    /** One cycle's mode, clock reading and start. */
    private record Cycle(boolean dryRun, long now, long startedNanos) {
        double seconds() {
            return (System.nanoTime() - startedNanos) / 1e9;
        }
    }

    private final MetricSource source;
    private final DemandEvaluator evaluator;
    private final PlacementStep placement;
    private final ParallelismStep parallelism;
    private final PublishPolicy publishPolicy;
    private final WarmRouting warmRouting;
    private final PlanRealizer realizer;
    private final StateStore store;
    private final CoordinatorMetrics metrics;
    private final Clock clock;
    private final RolloutEngine rollouts;
    /** Routes the last cycle's warm-before-route step held back for their loads. */
    private int routesHeld;

    private volatile MetricSnapshot previous;
    /** The recent collections, oldest first: rates are measured against the newest one at least the rate window old. */
    private final java.util.ArrayDeque<MetricSnapshot> recent = new java.util.ArrayDeque<>();
    private volatile Demand lastDemand;
    private volatile List<DeviceSpec> lastDevices = List.of();
    private volatile Map<String, TenantAccounting.TenantUsage> lastTenantUsage = Map.of();
    private boolean unpublished;

    public Coordinator(ReadableConfig config, MetricSource source, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock) {
        this(config, source, realizer, store, metrics, clock, null);
    }

    /**
     * The loop with its steps as the coordinator's options configure them.
     *
     * @param rescaler applies the planner's parallelism ({@link io.flinkgpu.coordinator.realize.Rescalers}), or
     *     null to only log what it would choose
     */
    public Coordinator(ReadableConfig config, MetricSource source, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock, Rescaler rescaler) {
        this(source, demandEvaluator(config), PlacementStep.fromConfig(config),
                ParallelismStep.fromConfig(config, rescaler, store), WarmRouting.fromConfig(config),
                PublishPolicy.fromConfig(config), realizer, store, metrics, clock,
                new RolloutEngine(store, CoordinatorOptions.rolloutSettings(config)));
    }

    /** The loop from its steps, with the warm-before-route step at its defaults ({@link WarmRouting#defaults}). */
    public Coordinator(MetricSource source, DemandEvaluator evaluator, PlacementStep placement,
            ParallelismStep parallelism, PublishPolicy publishPolicy, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock) {
        this(source, evaluator, placement, parallelism, WarmRouting.defaults(), publishPolicy, realizer, store,
                metrics, clock);
    }

    /** The loop from its steps, in the order a cycle runs them (rollouts judged by the default settings). */
    public Coordinator(MetricSource source, DemandEvaluator evaluator, PlacementStep placement,
            ParallelismStep parallelism, WarmRouting warmRouting, PublishPolicy publishPolicy, PlanRealizer realizer,
            StateStore store, CoordinatorMetrics metrics, Clock clock) {
        this(source, evaluator, placement, parallelism, warmRouting, publishPolicy, realizer, store, metrics, clock,
                new RolloutEngine(store, RolloutSettings.defaults()));
    }

    /** The loop from its steps and its rollout engine (over the same {@code store}), warm-before-route at its defaults. */
    public Coordinator(MetricSource source, DemandEvaluator evaluator, PlacementStep placement,
            ParallelismStep parallelism, PublishPolicy publishPolicy, PlanRealizer realizer, StateStore store,
            CoordinatorMetrics metrics, Clock clock, RolloutEngine rollouts) {
        this(source, evaluator, placement, parallelism, WarmRouting.defaults(), publishPolicy, realizer, store,
                metrics, clock, rollouts);
    }

    /** The loop from all its steps. */
    public Coordinator(MetricSource source, DemandEvaluator evaluator, PlacementStep placement,
            ParallelismStep parallelism, WarmRouting warmRouting, PublishPolicy publishPolicy, PlanRealizer realizer,
            StateStore store, CoordinatorMetrics metrics, Clock clock, RolloutEngine rollouts) {
        this.rollouts = rollouts;
        this.source = source;
        this.evaluator = evaluator;
        this.placement = placement;
        this.parallelism = parallelism;
        this.warmRouting = warmRouting;
        this.publishPolicy = publishPolicy;
        this.realizer = realizer;
        this.store = store;
        this.metrics = metrics;
        this.clock = clock;
        metrics.epoch(store.lastEpoch());
        metrics.paused(store.paused());
        metrics.rollouts(rollouts);
    }

    private static DemandEvaluator demandEvaluator(ReadableConfig config) {
        return new DemandEvaluator(config.get(CoordinatorOptions.DEFAULT_MODEL_MEMORY).getBytes(),
                config.get(CoordinatorOptions.DEFAULT_SLO).toMillis(), config.get(CoordinatorOptions.RATE_WINDOW).toMillis(),
                new io.flinkgpu.coordinator.evaluate.DemandForecast(
                        config.get(CoordinatorOptions.FORECAST_HORIZON).toMillis() / 1000.0,
                        config.get(CoordinatorOptions.FORECAST_WINDOW).toMillis() / 1000.0,
                        config.get(CoordinatorOptions.FORECAST_SIGNIFICANCE),
                        config.get(CoordinatorOptions.RATE_WINDOW).toMillis() / 1000.0));
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
        Cycle cycle = new Cycle(dryRun, clock.millis(), System.nanoTime());
        if (owesPublication(cycle)) {
            resume();
        }
        MetricSnapshot snapshot;
        try {
            snapshot = source.collect();
        } catch (MetricSource.CollectException e) {
            return collectionFailed(e);
        }
        MetricSnapshot before = baseline(snapshot);
        Demand demand = evaluate(before, snapshot, cycle);
        advanceRollouts(snapshot, cycle);
        metrics.paused(store.paused());
        if (!ratesMeasured(before)) {
            return skip(cycle, demand, "measuring: rates need a second collection");
        }
        if (pausedByOperator(cycle)) {
            return skip(cycle, demand, "paused");
        }
        Optional<ControlMessage> last = store.lastPlan();
        PlacementStep.Proposal proposal = plan(demand, snapshot, last, cycle);
        List<Decision> decisions = new ArrayList<>(proposal.decisions());
        if (parallelism.rescale(snapshot, demand, cycle.now(), dryRun, decisions)) {
            previous = null; // the job restarts at another parallelism: its counters start again, so measure afresh
            recent.clear();
            return hold(cycle, last, proposal, demand, decisions, "rescaling");
        }
        WarmRouting.Result routing = warmRouting.apply(last, proposal, snapshot, demand.parallelism(), cycle.now(),
                dryRun);
        decisions.addAll(routing.decisions());
        if (!dryRun) {
            routesHeld = routing.warming();
            metrics.routesWarming(routesHeld + rollouts.warming());
        }
        if (!publishPolicy.worthPublishing(last, proposal.plan(), routing.routes(), routing.commands(),
                demand.parallelism())) {
            return hold(cycle, last, proposal, demand, decisions, "unchanged");
        }
        ControlMessage message = nextPlan(last, demand, proposal, routing, decisions, cycle);
        if (dryRun) {
            return show(message, proposal, demand);
        }
        record(message, proposal, demand, decisions, cycle);
        return publish(message, proposal, demand, decisions, cycle);
    }

    // ---- guards -------------------------------------------------------------------------

    /**
     * A plan recorded but not published (crash, Kafka down) goes out again before anything new;
     * dry runs leave it to a real cycle.
     */
    private boolean owesPublication(Cycle cycle) {
        return unpublished && !cycle.dryRun();
    }

    /** Rates are the growth of counters between two collections: without an earlier one there are none yet. */
    private static boolean ratesMeasured(MetricSnapshot before) {
        return before != null;
    }

    /** The operator's switch ({@code POST /api/pause}): collect and evaluate, plan nothing. Dry runs plan anyway. */
    private boolean pausedByOperator(Cycle cycle) {
        return !cycle.dryRun() && store.paused();
    }

    // ---- steps --------------------------------------------------------------------------

    /**
     * Demand from this collection and the one before, with the catalog and each model's latency
     * history; outside dry runs, measured rates and fits are added to that history.
     */
    private Demand evaluate(MetricSnapshot before, MetricSnapshot snapshot, Cycle cycle) {
        Demand measured = evaluator.evaluate(before, snapshot, store.models(), latencyHistory(snapshot));
        // What the planner sees: significant rising trends raised to their forecast; the history keeps measurements.
        Demand demand = ratesMeasured(before) ? evaluator.forecast(measured, !cycle.dryRun()) : measured;
        previous = snapshot;
        remember(snapshot);
        lastDemand = demand;
        if (!cycle.dryRun() && ratesMeasured(before)) {
            for (ModelDemand m : measured.models().values()) {
                ModelDemand planned = demand.models().getOrDefault(m.model(), m);
                store.appendLatency(m.model(), new LatencySample(cycle.now(), m.alphaMicros(), m.betaMicros(),
                        m.ratePerSecond(), m.batchSize(), planned.ratePerSecond()));
            }
        }
        return demand;
    }

    /** The latency history of every model in the catalog or in the collection. */
    private Map<String, List<LatencySample>> latencyHistory(MetricSnapshot snapshot) {
        Set<String> names = new TreeSet<>(store.models().keySet());
        snapshot.subtasks().forEach(s -> s.models().forEach(m -> names.add(m.model())));
        Map<String, List<LatencySample>> history = new HashMap<>();
        names.forEach(n -> history.put(n, store.latencyHistory(n)));
        return history;
    }

    private PlacementStep.Proposal plan(Demand demand, MetricSnapshot snapshot, Optional<ControlMessage> last,
            Cycle cycle) {
        PlacementStep.Proposal proposal = placement.propose(demand, snapshot, store, noPlacementYet(last), cycle.now(),
                cycle.dryRun());
        lastDevices = proposal.devices();
        lastTenantUsage = proposal.tenantUsage();
        metrics.tenants(lastTenantUsage);
        if (!cycle.dryRun()) {
            metrics.modelsAtZero(proposal.idleness().in(io.flinkgpu.coordinator.evaluate.IdleTracker.State.ZERO).size());
            reportUnplaced(proposal);
        }
        return proposal;
    }

    /**
     * Counts the models the plan could not place (the {@code coordinator_models_unplaced} gauge) and
     * warns when some first could not: with fewer model slots than models, those left out are only
     * loaded on demand by the job, evicting planned ones.
     */
    private void reportUnplaced(PlacementStep.Proposal proposal) {
        Set<String> unplaced = new TreeSet<>();
        proposal.decisions().stream().filter(d -> "UNPLACED".equals(d.action())).forEach(d -> unplaced.add(d.model()));
        if (!unplaced.isEmpty() && metrics.modelsUnplaced() == 0) {
            LOG.warn("{} model(s) have an instance that no device can take (memory or a free model slot: {} devices, "
                    + "coordinator.device.max-models each), e.g. {}; they are loaded on demand and evict planned "
                    + "models. Raise coordinator.device.max-models (and inference.cache.max-models-per-device) or add "
                    + "devices", unplaced.size(), proposal.devices().size(), unplaced.iterator().next());
        }
        metrics.modelsUnplaced(unplaced.size());
    }

    /** The proposal, its routes and commands as the warm-before-route step let them through, as the next epoch. */
    private ControlMessage nextPlan(Optional<ControlMessage> last, Demand demand, PlacementStep.Proposal proposal,
            WarmRouting.Result routing, List<Decision> decisions, Cycle cycle) {
        return ControlMessage.of(store.lastEpoch() + 1, cycle.now(), demand.parallelism(), routing.routes(),
                routing.commands(), summary(noPlacementYet(last), proposal.plan(), decisions))
                .withVersionSplits(rollouts.splits());
    }

    /** A dry run hands the plan to the realizer to show it, and records nothing. */
    private CycleResult show(ControlMessage message, PlacementStep.Proposal proposal, Demand demand) {
        try {
            realizer.publish(message);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
        return new CycleResult(true, message, proposal.plan(), demand, null);
    }

    /**
     * Records the plan before it is published: placement and moves first (the plan's synced
     * write makes them durable with it), the plan under its epoch, then the cycle's decisions
     * with how the demand was derived, each tenant's share and the publication.
     */
    private void record(ControlMessage message, PlacementStep.Proposal proposal, Demand demand,
            List<Decision> decisions, Cycle cycle) {
        store.putPlacement(proposal.plan().placement());
        store.appendMoves(proposal.plan().moves());
        store.recordPlan(message);
        for (ModelDemand m : demand.models().values()) {
            decisions.add(new Decision(cycle.now(), "DEMAND", m.model(), null, m.reason()));
        }
        for (String line : TenantAccounting.describe(proposal.tenantUsage(), proposal.tenantRates())) {
            decisions.add(new Decision(cycle.now(), "TENANT", null, null, line));
        }
        decisions.add(new Decision(cycle.now(), "PUBLISH", null, null,
                "epoch " + message.epoch() + ": " + message.reason()));
        store.appendDecisions(decisions);
    }

    /** Publishes a recorded plan; one that does not go out is published again at the next cycle. */
    private CycleResult publish(ControlMessage message, PlacementStep.Proposal proposal, Demand demand,
            List<Decision> decisions, Cycle cycle) {
        try {
            realizer.publish(message);
            unpublished = false;
            metrics.planPublished(message.epoch(), proposal.plan().moves().size());
            LOG.info("Published plan epoch {}: {}", message.epoch(), message.reason());
        } catch (Exception e) {
            unpublished = true;
            metrics.cycleFailed();
            LOG.warn("Plan epoch {} recorded but not published (retried next cycle): {}", message.epoch(),
                    e.toString());
        }
        metrics.cycle(cycle.seconds(), decisions.size());
        return new CycleResult(!unpublished, message, proposal.plan(), demand, null);
    }

    // ---- gray releases --------------------------------------------------------------------

    /** Judges the running rollouts on this collection (not in dry runs) and publishes a changed split. */
    private void advanceRollouts(MetricSnapshot snapshot, Cycle cycle) {
        if (!cycle.dryRun()) {
            rollouts.advance(snapshot, cycle.now());
            publishVersionSplits("rollout");
            metrics.routesWarming(routesHeld + rollouts.warming());
        }
    }

    /**
     * Publishes the rollouts' version splits at once where they differ from the plan in force's:
     * a new epoch with that plan's parallelism and routes and no commands (before any plan: no
     * routes, so the job keeps hashing while it pins versions). Called by each cycle and by the
     * admin API after a rollout request, so a rollback or an abort goes out without waiting.
     *
     * @return the plan published (or recorded, if publishing failed: the next cycle retries), or empty
     *     where the splits were current
     */
    public synchronized Optional<ControlMessage> publishVersionSplits(String why) {
        List<VersionSplit> splits = rollouts.splits();
        List<SubtaskCommand> commands = rollouts.takeCommands();
        Optional<ControlMessage> last = store.lastPlan();
        if (commands.isEmpty() && last.map(ControlMessage::versionSplits).orElse(List.of()).equals(splits)) {
            return Optional.empty();
        }
        long now = clock.millis();
        List<String> parts = new ArrayList<>();
        splits.forEach(s -> parts.add(s.model() + ": " + s.reason()));
        String reason = "version splits (" + why + "): " + (parts.isEmpty() ? "none" : String.join("; ", parts));
        if (!commands.isEmpty()) {
            List<String> what = new ArrayList<>();
            commands.forEach(c -> what.add(c.action() + " " + c.model() + ":" + c.version() + " on subtask " + c.subtask()));
            reason += "; " + String.join(", ", what);
        }
        ControlMessage message = new ControlMessage(ControlMessage.SCHEMA_VERSION, store.lastEpoch() + 1, now,
                last.map(ControlMessage::parallelism).orElse(0), last.map(ControlMessage::routes).orElse(List.of()),
                commands, reason, splits);
        store.recordPlan(message);
        store.appendDecisions(List.of(new Decision(now, "PUBLISH", null, null,
                "epoch " + message.epoch() + ": " + reason)));
        try {
            realizer.publish(message);
            unpublished = false;
            metrics.planPublished(message.epoch(), 0);
            LOG.info("Published plan epoch {}: {}", message.epoch(), reason);
        } catch (Exception e) {
            unpublished = true;
            LOG.warn("Plan epoch {} recorded but not published (retried next cycle): {}", message.epoch(),
                    e.toString());
        }
        return Optional.of(message);
    }

    /** No placement was published yet: no plan, or only plans that carried version splits. */
    private static boolean noPlacementYet(Optional<ControlMessage> last) {
        // a plan of version splits (a rollout's) places nothing, nor do its LOADs and UNLOADs of a named
        // version; one of LOADs only (warm before route) does: the placement's commands name no version
        return last.isEmpty() || (last.get().routes().isEmpty()
                && last.get().commands().stream().allMatch(c -> c.version() != null));
    }

    /** The rollouts, their admin requests and their splits. */
    public RolloutEngine rollouts() {
        return rollouts;
    }

    /** The coordinator's clock now: what its cycles judge rollout steps by, so what the rollout API times them with. */
    public long nowMillis() {
        return clock.millis();
    }

    // ---- early ends ---------------------------------------------------------------------

    private CycleResult collectionFailed(MetricSource.CollectException e) {
        metrics.cycleFailed();
        LOG.warn("Skipping cycle: {}", e.getMessage());
        return new CycleResult(false, null, null, null, e.getMessage());
    }

    /** Ends a cycle before planning. */
    private CycleResult skip(Cycle cycle, Demand demand, String why) {
        metrics.cycle(cycle.seconds(), 0);
        return new CycleResult(false, null, null, demand, why);
    }

    /** Ends a cycle that planned but publishes nothing: its decisions are kept (outside dry runs). */
    private CycleResult hold(Cycle cycle, Optional<ControlMessage> last, PlacementStep.Proposal proposal,
            Demand demand, List<Decision> decisions, String why) {
        if (!cycle.dryRun()) {
            store.appendDecisions(decisions);
        }
        metrics.cycle(cycle.seconds(), decisions.size());
        return new CycleResult(false, last.orElse(null), proposal.plan(), demand, why);
    }

    private static String summary(boolean first, PlacementPlan plan, List<Decision> decisions) {
        List<String> parts = new ArrayList<>();
        for (Decision d : decisions) {
            if (!d.action().equals("HOLD") && !d.action().equals("OBSERVE") && parts.size() < 10) {
                parts.add(d.action() + " " + (d.model() == null ? "" : d.model())
                        + (d.device() == null ? "" : "@" + d.device()));
            }
        }
        boolean routed = decisions.stream().anyMatch(d -> d.action().equals("ROUTE"));
        String head = first ? "initial plan" : plan.changesPlacement() ? "placement changed"
                : routed ? "warmed-up instances routed" : "routing weights changed";
        return parts.isEmpty() ? head : head + ": " + String.join("; ", parts);
    }

    /**
     * The collection to measure rates against: the newest one at least the evaluator's rate window
     * older than {@code current}, else the oldest kept (right after a start, the previous one). A
     * rate over one short cycle aliases with the moments Flink's REST API refreshed its counters
     * (one cycle sees a stale counter, the next twice the growth); over the window that error is
     * spread thin.
     */
    private MetricSnapshot baseline(MetricSnapshot current) {
        long window = evaluator.rateWindowMillis();
        java.util.Iterator<MetricSnapshot> newestFirst = recent.descendingIterator();
        while (newestFirst.hasNext()) {
            MetricSnapshot s = newestFirst.next();
            if (current.atMillis() - s.atMillis() >= window) {
                return s;
            }
        }
        return recent.peekFirst();
    }

    /** Keeps {@code snapshot}, and of the older ones only those a later baseline can still pick. */
    private void remember(MetricSnapshot snapshot) {
        recent.addLast(snapshot);
        long window = evaluator.rateWindowMillis();
        while (recent.size() > 1) {
            java.util.Iterator<MetricSnapshot> it = recent.iterator();
            it.next();
            MetricSnapshot second = it.next();
            if (snapshot.atMillis() - second.atMillis() >= window) {
                recent.pollFirst(); // the second-oldest already covers the window
            } else {
                break;
            }
        }
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
