package io.flinkgpu.inference.control;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Picks the subtask for each request of a model from a plan's routing table, in proportion to
 * the targets' weights, by smooth weighted round robin (nginx's): deterministic, exact over
 * every window of sum-of-weights picks, and without bursts to one target. Targets at or beyond
 * the actual parallelism are dropped (a plan made for a larger job); a model with no usable
 * target gets {@link #NO_ROUTE}, and the caller falls back to its default routing.
 * Not thread-safe: one per routing subtask.
 */
public final class RoutingTable {
    public static final int NO_ROUTE = -1;

    private final Map<String, Wheel> wheels = new HashMap<>();

    public RoutingTable(ControlMessage plan, int parallelism) {
        if (plan == null) {
            return;
        }
        for (ModelRoute route : plan.routes()) {
            List<RouteTarget> usable = route.targets().stream()
                    .filter(t -> t.subtask() >= 0 && t.subtask() < parallelism)
                    .filter(t -> Double.isFinite(t.weight()) && t.weight() > 0)
                    .toList();
            if (!usable.isEmpty()) {
                wheels.put(route.model(), new Wheel(usable));
            }
        }
    }

    /** The subtask for the next request of {@code model}, or {@link #NO_ROUTE}. */
    public int select(String model) {
        Wheel wheel = wheels.get(model);
        return wheel == null ? NO_ROUTE : wheel.next();
    }

    /**
     * The subtask for the next request of {@code model}, queue-aware: the target with the fewest
     * outstanding requests ({@code outstanding.applyAsLong(subtask)}, see {@link QueueBoard}), ties
     * going to the round robin's pick, so that an idle fleet still follows the weights. The
     * weights do not scale the counts: the coordinator's weights are each device's headroom, which
     * a device's queue already shows, and a faster GPU has more subtasks (slot weights), each with
     * its own count. Where any target's count is unknown (negative), the round robin's pick, as
     * {@link #select(String)}. The wheel turns on every call either way.
     */
    public int select(String model, java.util.function.IntToLongFunction outstanding) {
        Wheel wheel = wheels.get(model);
        return wheel == null ? NO_ROUTE : wheel.leastOutstanding(outstanding);
    }

    public boolean routes(String model) {
        return wheels.containsKey(model);
    }

    private static final class Wheel {
        final int[] subtasks;
        final double[] weights;
        final double[] current;
        final double total;

        Wheel(List<RouteTarget> targets) {
            subtasks = new int[targets.size()];
            weights = new double[targets.size()];
            current = new double[targets.size()];
            double sum = 0;
            for (int i = 0; i < subtasks.length; i++) {
                subtasks[i] = targets.get(i).subtask();
                weights[i] = targets.get(i).weight();
                sum += weights[i];
            }
            total = sum;
        }

        int next() {
            int best = 0;
            for (int i = 0; i < current.length; i++) {
                current[i] += weights[i];
                if (current[i] > current[best]) {
                    best = i;
                }
            }
            current[best] -= total;
            return subtasks[best];
        }

        int leastOutstanding(java.util.function.IntToLongFunction outstanding) {
            int pick = next();
            if (subtasks.length == 1) {
                return pick;
            }
            int best = -1;
            long fewest = Long.MAX_VALUE;
            for (int i = 0; i < subtasks.length; i++) {
                long n = outstanding.applyAsLong(subtasks[i]);
                if (n < 0) {
                    return pick; // not every replica is visible: the plan's weights decide
                }
                if (n < fewest || (n == fewest && subtasks[i] == pick)) {
                    fewest = n;
                    best = i;
                }
            }
            return subtasks[best];
        }
    }
}
