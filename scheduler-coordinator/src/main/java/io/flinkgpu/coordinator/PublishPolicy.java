package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.flink.configuration.ReadableConfig;

/**
 * The loop's decide step: whether a proposed placement is worth a new epoch. The first plan is,
 * once there is a model to route or to load; a later one only where the placement or the parallelism
 * changed or a routing weight moved by more than {@code coordinator.plan.weight-change}, so an
 * unchanged load publishes nothing.
 */
public final class PublishPolicy {
    private final double weightChange;

    /** @param weightChange the relative change of a routing weight that is worth publishing */
    public PublishPolicy(double weightChange) {
        this.weightChange = weightChange;
    }

    public static PublishPolicy fromConfig(ReadableConfig config) {
        return new PublishPolicy(config.get(CoordinatorOptions.WEIGHT_CHANGE));
    }

    /**
     * @param last the plan in force, if any
     * @param plan the proposed placement
     * @param routes the routes it implies
     * @param parallelism the job's parallelism now
     */
    public boolean worthPublishing(Optional<ControlMessage> last, PlacementPlan plan, List<ModelRoute> routes,
            int parallelism) {
        return worthPublishing(last, plan, routes, List.of(), parallelism);
    }

    /**
     * As {@link #worthPublishing(Optional, PlacementPlan, List, int)}, with the commands the plan
     * would carry: a first plan is also worth publishing for its LOADs alone (every instance it
     * places is still warming up, so nothing is routed yet).
     */
    public boolean worthPublishing(Optional<ControlMessage> last, PlacementPlan plan, List<ModelRoute> routes,
            List<SubtaskCommand> commands, int parallelism) {
        if (last.isEmpty()) {
            return hasSomethingToRoute(routes) || commands.stream().anyMatch(c -> c.action() == SubtaskCommand.Action.LOAD);
        }
        return plan.changesPlacement() || parallelismChanged(last.get(), parallelism)
                || routesChanged(last.get().routes(), routes, weightChange);
    }

    /** No first plan before there is something to route: until then the job's hash routing is the plan. */
    static boolean hasSomethingToRoute(List<ModelRoute> routes) {
        return !routes.isEmpty();
    }

    /** The plan in force was made for another parallelism (the job was rescaled since). */
    static boolean parallelismChanged(ControlMessage last, int parallelism) {
        return last.parallelism() != parallelism;
    }

    /**
     * Whether the routes differ in the models or subtasks they name, or a target's share of its
     * model's traffic changed by more than {@code threshold} (relative to the larger share).
     */
    static boolean routesChanged(List<ModelRoute> before, List<ModelRoute> after, double threshold) {
        Map<String, Map<Integer, Double>> a = shares(before);
        Map<String, Map<Integer, Double>> b = shares(after);
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
    private static Map<String, Map<Integer, Double>> shares(List<ModelRoute> routes) {
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
}
