package io.flinkgpu.coordinator.plan;

import java.util.List;
import java.util.Map;

/**
 * What {@link DrfAllocator} gave each claimant: a number of tasks, the dominant share they add
 * up to, and a sentence saying why; plus the trace of the filling (tasks guaranteed in phase 1,
 * the order of phase-2 grants, and after how many grants each claimant's next task stopped
 * fitting), which the fairness properties are stated against.
 */
public record DrfAllocation(
        ResourceVector capacity,
        ResourceVector used,
        Map<String, Integer> tasks,
        Map<String, Double> dominantShares,
        Map<String, String> reasons,
        Map<String, Integer> guaranteed,
        List<String> fillOrder,
        Map<String, Integer> droppedAfter) {

    public int tasks(String id) {
        return tasks.getOrDefault(id, 0);
    }

    public double dominantShare(String id) {
        return dominantShares.getOrDefault(id, 0.0);
    }

    public String reason(String id) {
        return reasons.getOrDefault(id, "");
    }

    /** The tasks {@code id} held after the first {@code grants} phase-2 grants. */
    public int tasksAfter(String id, int grants) {
        int n = guaranteed.getOrDefault(id, 0);
        for (int k = 0; k < grants && k < fillOrder.size(); k++) {
            if (fillOrder.get(k).equals(id)) {
                n++;
            }
        }
        return n;
    }

    public ResourceVector remaining() {
        return capacity.minus(used);
    }
}
