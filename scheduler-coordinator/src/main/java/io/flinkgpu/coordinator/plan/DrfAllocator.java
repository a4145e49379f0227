package io.flinkgpu.coordinator.plan;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Weighted Dominant Resource Fairness (Ghodsi et al., NSDI 2011) for indivisible tasks.
 *
 * <p>A claimant's dominant share is the largest fraction of any one resource its tasks hold;
 * DRF equalises dominant shares divided by weight. Two phases:
 *
 * <ol>
 *   <li><b>Guaranteed share.</b> Each claimant first gets as many whole tasks as fit in its
 *       weighted share {@code w_i / sum(w)} of every resource. These bundles always fit
 *       together, so sharing incentive holds exactly even though tasks are indivisible (plain
 *       progressive filling can leave a claimant one task short of its share).
 *   <li><b>Progressive filling, work-conserving.</b> Then, one task at a time, the claimant with
 *       the lowest weighted dominant share whose next task still fits gets it. A claimant whose
 *       next task does not fit drops out (remaining capacity only shrinks) and the others keep
 *       filling, so no capacity that someone could use is left idle (the paper's Algorithm 1
 *       stops at the first saturated user instead).
 * </ol>
 *
 * Ties go to the lexicographically smaller id, so the result is deterministic. Plain Java.
 *
 * <p>With indivisible tasks not every DRF property can hold exactly (capacity 10, tasks of 6 and 1:
 * (1, 4) denies the second claimant the 5 its half holds, (0, 10) leaves the first envious). This
 * allocator keeps sharing incentive and Pareto efficiency exact; envy-freeness holds up to one
 * task against the bundles as they stood when the envious claimant's next task stopped fitting;
 * inflating a demand never buys a larger guarantee, and beyond it wins at most what one other
 * claimant's task frees. {@code DrfProperties} states and checks each of these.
 */
public final class DrfAllocator {

    public DrfAllocation allocate(ResourceVector capacity, List<DrfClaimant> claimants) {
        if (capacity == null || !capacity.isValid()) {
            throw new IllegalArgumentException("capacity must be finite and non-negative: " + capacity);
        }
        Map<String, Integer> tasks = new LinkedHashMap<>();
        Map<String, Double> perTaskShare = new LinkedHashMap<>();
        Map<String, Resource> dominant = new LinkedHashMap<>();
        Map<String, String> reasons = new LinkedHashMap<>();
        Map<String, DrfClaimant> byId = new LinkedHashMap<>();
        double totalWeight = 0;
        for (DrfClaimant c : claimants) {
            if (byId.put(c.id(), c) != null) {
                throw new IllegalArgumentException("claimant " + c.id() + " listed twice");
            }
            tasks.put(c.id(), 0);
            Resource dom = Resource.DEVICE_MEMORY;
            double share = 0;
            boolean impossible = false;
            for (Resource r : Resource.values()) {
                double d = c.demandPerTask().get(r);
                if (d <= 0) {
                    continue;
                }
                if (capacity.get(r) <= 0) {
                    impossible = true;
                    dom = r;
                    break;
                }
                if (d / capacity.get(r) > share) {
                    share = d / capacity.get(r);
                    dom = r;
                }
            }
            dominant.put(c.id(), dom);
            if (impossible) {
                perTaskShare.put(c.id(), Double.POSITIVE_INFINITY);
            } else {
                perTaskShare.put(c.id(), share);
                totalWeight += c.weight();
            }
        }

        ResourceVector used = ResourceVector.ZERO;
        Map<String, Integer> guaranteed = new LinkedHashMap<>();
        // Phase 1: every claimant's whole tasks within its weighted share of every resource.
        for (DrfClaimant c : claimants) {
            double share = perTaskShare.get(c.id());
            int g;
            if (Double.isInfinite(share)) {
                g = 0;
            } else if (share == 0) {
                g = c.maxTasks() == Integer.MAX_VALUE ? 0 : c.maxTasks(); // free tasks: all it asks for
            } else {
                double entitled = c.weight() / totalWeight / share;
                g = (int) Math.min(c.maxTasks(), Math.floor(entitled * (1 + 1e-9)));
            }
            if (g > 0) {
                ResourceVector bundle = c.demandPerTask().times(g);
                if (!used.plus(bundle).fitsIn(capacity)) { // rounding only; shares sum to at most 1
                    g = 0;
                } else {
                    used = used.plus(bundle);
                }
            }
            tasks.put(c.id(), g);
            guaranteed.put(c.id(), g);
        }

        // Phase 2: progressive filling on weighted dominant share among claimants that can still grow.
        Comparator<DrfClaimant> lowestShareFirst = Comparator
                .comparingDouble((DrfClaimant c) -> tasks.get(c.id()) * perTaskShare.get(c.id()) / c.weight())
                .thenComparing(DrfClaimant::id);
        PriorityQueue<DrfClaimant> active = new PriorityQueue<>(lowestShareFirst);
        Map<String, String> stopped = new LinkedHashMap<>();
        List<String> fillOrder = new ArrayList<>();
        Map<String, Integer> droppedAfter = new LinkedHashMap<>();
        for (DrfClaimant c : claimants) {
            if (Double.isInfinite(perTaskShare.get(c.id()))) {
                stopped.put(c.id(), "needs " + dominant.get(c.id()).label() + ", of which there is none");
            } else if (perTaskShare.get(c.id()) == 0) {
                stopped.put(c.id(), "demands nothing");
            } else if (tasks.get(c.id()) >= c.maxTasks()) {
                stopped.put(c.id(), "has all " + c.maxTasks() + " it asked for");
            } else {
                active.add(c);
            }
        }
        while (!active.isEmpty()) {
            DrfClaimant c = active.poll();
            ResourceVector next = used.plus(c.demandPerTask());
            if (!next.fitsIn(capacity)) {
                stopped.put(c.id(), "next instance does not fit: " + exhausted(capacity, used, c.demandPerTask())
                        + " exhausted");
                droppedAfter.put(c.id(), fillOrder.size());
                continue;
            }
            used = next;
            fillOrder.add(c.id());
            int t = tasks.merge(c.id(), 1, Integer::sum);
            if (t >= c.maxTasks()) {
                stopped.put(c.id(), "has all " + c.maxTasks() + " it asked for");
            } else {
                active.add(c);
            }
        }

        Map<String, Double> shares = new LinkedHashMap<>();
        for (DrfClaimant c : claimants) {
            double share = Double.isInfinite(perTaskShare.get(c.id())) ? 0 : tasks.get(c.id()) * perTaskShare.get(c.id());
            shares.put(c.id(), share);
            reasons.put(c.id(), String.format(Locale.ROOT,
                    "%d instance(s) of %s wanted; weight %s; dominant resource %s, share %.3f (%.3f per instance); "
                            + "%d guaranteed by its weighted share, %d by progressive filling; stopped: %s",
                    tasks.get(c.id()), c.maxTasks() == Integer.MAX_VALUE ? "unbounded" : String.valueOf(c.maxTasks()),
                    trim(c.weight()), dominant.get(c.id()).label(), share,
                    Double.isInfinite(perTaskShare.get(c.id())) ? 0.0 : perTaskShare.get(c.id()),
                    guaranteed.get(c.id()), tasks.get(c.id()) - guaranteed.get(c.id()), stopped.get(c.id())));
        }
        return new DrfAllocation(capacity, used, Map.copyOf(tasks), Map.copyOf(shares), Map.copyOf(reasons),
                Map.copyOf(guaranteed), List.copyOf(fillOrder), Map.copyOf(droppedAfter));
    }

    private static String exhausted(ResourceVector capacity, ResourceVector used, ResourceVector demand) {
        StringBuilder sb = new StringBuilder();
        for (Resource r : Resource.values()) {
            if (used.get(r) + demand.get(r) > capacity.get(r) * (1 + 1e-9) + 1e-12) {
                if (sb.length() > 0) {
                    sb.append(", ");
                }
                sb.append(r.label());
            }
        }
        return sb.toString();
    }

    private static String trim(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
