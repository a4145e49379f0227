package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.apache.flink.configuration.ReadableConfig;

/**
 * The loop's warm-before-route step, between planning and publication: a model instance that a
 * plan adds (REPLICATE, MOVE, LOAD) gets its LOAD command at once but its route only once the job
 * reports the model loaded on that subtask (the operator's per-version {@code loaded} gauge), so
 * requests are not sent to a subtask that is still loading the model and expire there.
 *
 * <p>Per model, each target of the proposed routes is
 *
 * <ul>
 *   <li>routed if the plan in force already routes the model there, or the subtask reports the
 *       model loaded ({@code ROUTE} decision, with how long it waited), or it has waited
 *       {@code coordinator.plan.warm-timeout} without a report ({@code ROUTE}, "routed anyway":
 *       a load that is never reported does not hold the route back for ever);
 *   <li>otherwise held ({@code WARM} decision when the wait starts): left out of the routes, and
 *       its LOAD repeated in every plan published meanwhile.
 * </ul>
 *
 * While a model has a held target, the targets the plan in force routes it to keep serving with
 * their weights in force, even those the placement gives up: a MOVE's old instance serves until
 * the new one is routed, and its UNLOAD is deferred to the plan that drops its route. A model
 * no target of which is routed keeps the job's hash routing until one is. The placement itself is
 * the planner's, recorded as planned; only what is routed and when the old instances unload
 * change. The wait is counted in memory, so a restarted coordinator starts it again; with a
 * parallelism other than the plan in force's, no target counts as already routed. Dry runs change
 * nothing here.
 */
public final class WarmRouting {
    /**
     * What the step publishes.
     *
     * @param routes the routing table: the proposal's, less held targets, plus the targets in
     *     force that keep serving while a held one warms up
     * @param commands the proposal's commands, less the UNLOADs of instances that keep serving,
     *     plus the deferred UNLOADs of instances no longer routed and the held targets' LOADs
     * @param decisions {@code WARM} and {@code ROUTE}, each with its reason
     * @param warming targets held now
     */
    public record Result(List<ModelRoute> routes, List<SubtaskCommand> commands, List<Decision> decisions,
            int warming) {}

    private record Key(String model, int subtask) {}

    private final boolean enabled;
    private final Duration timeout;
    /** When each held target's wait started. */
    private final Map<Key, Long> heldSince = new HashMap<>();

    /**
     * @param enabled off: the proposal's routes and commands go out as they are (routes change
     *     with the plan)
     * @param timeout how long a held target waits for its load to be reported before it is routed anyway
     */
    public WarmRouting(boolean enabled, Duration timeout) {
        if (timeout == null || timeout.isNegative()) {
            throw new IllegalArgumentException(CoordinatorOptions.WARM_TIMEOUT.key() + " must be >= 0, got " + timeout);
        }
        this.enabled = enabled;
        this.timeout = timeout;
    }

    /** The step as {@code coordinator.plan.warm-before-route} and {@code coordinator.plan.warm-timeout} configure it. */
    public static WarmRouting fromConfig(ReadableConfig config) {
        return new WarmRouting(config.get(CoordinatorOptions.WARM_BEFORE_ROUTE), config.get(CoordinatorOptions.WARM_TIMEOUT));
    }

    /** The options' defaults. */
    public static WarmRouting defaults() {
        return new WarmRouting(CoordinatorOptions.WARM_BEFORE_ROUTE.defaultValue(),
                CoordinatorOptions.WARM_TIMEOUT.defaultValue());
    }

    public boolean enabled() {
        return enabled;
    }

    /**
     * @param inForce the plan in force, if any
     * @param proposal the plan step's proposal (its routes, placement, devices)
     * @param snapshot this cycle's collection (the {@code loaded} gauges)
     * @param parallelism the job's parallelism now
     */
    public Result apply(Optional<ControlMessage> inForce, PlacementStep.Proposal proposal, MetricSnapshot snapshot,
            int parallelism, long now, boolean dryRun) {
        List<SubtaskCommand> proposedCommands = proposal.plan().commands(proposal.devices());
        if (!enabled) {
            return new Result(proposal.routes(), proposedCommands, List.of(), 0);
        }
        Map<String, Map<Integer, Double>> serving = serving(inForce, parallelism);
        Set<Key> loaded = loaded(snapshot);
        Map<Integer, String> deviceOf = new HashMap<>();
        for (DeviceSpec d : proposal.devices()) {
            d.subtasks().forEach(s -> deviceOf.put(s, d.id()));
        }
        Placement placement = proposal.plan().placement();

        List<ModelRoute> routes = new ArrayList<>();
        List<Decision> decisions = new ArrayList<>();
        Map<Key, String> held = new LinkedHashMap<>();
        for (ModelRoute route : proposal.routes()) {
            Map<Integer, Double> inForceTargets = serving.getOrDefault(route.model(), Map.of());
            List<RouteTarget> ready = new ArrayList<>();
            List<Integer> waiting = new ArrayList<>();
            for (RouteTarget t : route.targets()) {
                Key key = new Key(route.model(), t.subtask());
                String where = route.model() + "@" + deviceOf.getOrDefault(t.subtask(), "subtask " + t.subtask());
                Long since = heldSince.get(key);
                long waitedMillis = since == null ? 0 : now - since;
                double waited = waitedMillis / 1000.0;
                if (inForceTargets.containsKey(t.subtask())) {
                    ready.add(t);
                } else if (loaded.contains(key)) {
                    ready.add(t);
                    if (since == null && inForce.isEmpty()) {
                        continue; // a first plan routes where the models are loaded: nothing was held
                    }
                    decisions.add(new Decision(now, "ROUTE", route.model(), deviceOf.get(t.subtask()),
                            String.format(Locale.ROOT, "%s routed: subtask %d reports it loaded%s", where,
                                    t.subtask(), since == null ? "" : String.format(Locale.ROOT,
                                            " after %.1f s of warm-up", waited))));
                } else if (waitedMillis >= timeout.toMillis()) {
                    ready.add(t);
                    decisions.add(new Decision(now, "ROUTE", route.model(), deviceOf.get(t.subtask()),
                            String.format(Locale.ROOT, "%s routed anyway: subtask %d did not report it loaded within "
                                    + "%s = %.1f s (waited %.1f s)", where, t.subtask(),
                                    CoordinatorOptions.WARM_TIMEOUT.key(), timeout.toMillis() / 1000.0, waited)));
                } else {
                    waiting.add(t.subtask());
                    held.put(key, where);
                }
            }
            if (waiting.isEmpty()) {
                routes.add(route);
                continue;
            }
            // the instances in force keep serving until every new one is routed
            Set<Integer> proposed = route.targets().stream().map(RouteTarget::subtask).collect(Collectors.toSet());
            List<RouteTarget> draining = new ArrayList<>();
            inForceTargets.forEach((s, w) -> {
                if (!proposed.contains(s)) {
                    draining.add(new RouteTarget(s, w));
                }
            });
            List<RouteTarget> targets = new ArrayList<>(ready);
            targets.addAll(draining);
            String drainText = draining.isEmpty() ? "" : "; " + subtasks(draining, deviceOf)
                    + " keep serving it until then (UNLOAD deferred)";
            if (!targets.isEmpty()) {
                routes.add(new ModelRoute(route.model(), targets, route.reason() + "; warming up on "
                        + waiting.stream().map(s -> deviceOf.getOrDefault(s, "subtask " + s)).toList()
                        + ", not routed there until loaded" + drainText));
            }
            for (int s : waiting) {
                Key key = new Key(route.model(), s);
                if (!heldSince.containsKey(key)) {
                    decisions.add(new Decision(now, "WARM", route.model(), deviceOf.get(s), String.format(Locale.ROOT,
                            "%s: LOAD sent, routed once subtask %d reports it loaded (at most %.1f s, %s)%s%s",
                            held.get(key), s, timeout.toMillis() / 1000.0, CoordinatorOptions.WARM_TIMEOUT.key(),
                            targets.isEmpty() ? "; until then its requests keep the job's hash routing" : "",
                            drainText)));
                }
            }
        }

        List<SubtaskCommand> commands = commands(proposedCommands, routes, serving, held, placement, deviceOf);
        if (!dryRun) {
            heldSince.keySet().retainAll(held.keySet());
            held.keySet().forEach(k -> heldSince.putIfAbsent(k, now));
        }
        return new Result(routes, commands, decisions, held.size());
    }

    /**
     * The proposal's commands without the UNLOADs of instances still routed, with the deferred
     * UNLOADs of instances the plan in force routed, this one does not and the placement no
     * longer holds, and with a LOAD for every held target.
     */
    private static List<SubtaskCommand> commands(List<SubtaskCommand> proposed, List<ModelRoute> routes,
            Map<String, Map<Integer, Double>> serving, Map<Key, String> held, Placement placement,
            Map<Integer, String> deviceOf) {
        Set<Key> routed = new HashSet<>();
        routes.forEach(r -> r.targets().forEach(t -> routed.add(new Key(r.model(), t.subtask()))));
        List<SubtaskCommand> out = new ArrayList<>();
        Set<Key> unloads = new HashSet<>();
        Set<Key> loads = new HashSet<>();
        for (SubtaskCommand c : proposed) {
            Key key = new Key(c.model(), c.subtask());
            if (c.action() == SubtaskCommand.Action.UNLOAD && routed.contains(key)) {
                continue; // still serving: unloaded once its route goes
            }
            out.add(c);
            (c.action() == SubtaskCommand.Action.UNLOAD ? unloads : loads).add(key);
        }
        serving.forEach((model, targets) -> targets.keySet().forEach(s -> {
            Key key = new Key(model, s);
            String device = deviceOf.get(s);
            if (!routed.contains(key) && !unloads.contains(key) && device != null
                    && !placement.devices(model).contains(device)) {
                out.add(new SubtaskCommand(s, SubtaskCommand.Action.UNLOAD, model, null,
                        "deferred UNLOAD: " + model + " left " + device + " and its new instances are routed now"));
            }
        }));
        held.forEach((key, where) -> {
            if (!loads.contains(key)) {
                out.add(new SubtaskCommand(key.subtask(), SubtaskCommand.Action.LOAD, key.model(), null,
                        "LOAD repeated while " + where + " warms up (not routed until loaded)"));
            }
        });
        return out;
    }

    /** Model -> subtask -> weight of the plan in force, if it was made for this parallelism. */
    private static Map<String, Map<Integer, Double>> serving(Optional<ControlMessage> inForce, int parallelism) {
        Map<String, Map<Integer, Double>> out = new TreeMap<>();
        if (inForce.isEmpty() || (inForce.get().parallelism() > 0 && inForce.get().parallelism() != parallelism)) {
            return out;
        }
        for (ModelRoute r : inForce.get().routes()) {
            Map<Integer, Double> w = new TreeMap<>();
            r.targets().forEach(t -> w.put(t.subtask(), t.weight()));
            out.put(r.model(), w);
        }
        return out;
    }

    /** (model, subtask) of every version a subtask reports loaded. */
    private static Set<Key> loaded(MetricSnapshot snapshot) {
        Set<Key> out = new HashSet<>();
        if (snapshot != null) {
            for (SubtaskSample s : snapshot.subtasks()) {
                for (ModelSample m : s.models()) {
                    if (m.reportsLoaded()) {
                        out.add(new Key(m.model(), s.subtask()));
                    }
                }
            }
        }
        return out;
    }

    private static String subtasks(List<RouteTarget> targets, Map<Integer, String> deviceOf) {
        return targets.stream().map(t -> deviceOf.getOrDefault(t.subtask(), "subtask " + t.subtask())).distinct()
                .toList().toString();
    }
}
