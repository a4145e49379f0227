package io.flinkgpu.coordinator.plan;

/**
 * A party that DRF divides resources among (a model in the coordinator; a user in the DRF
 * paper). It asks for up to {@code maxTasks} indivisible tasks (model instances) of
 * {@code demandPerTask} each.
 *
 * @param weight relative entitlement (weighted DRF): a claimant of weight 2 is entitled to twice
 *     the dominant share of one of weight 1
 * @param maxTasks how many tasks it can use ({@link Integer#MAX_VALUE}: unbounded)
 */
public record DrfClaimant(String id, double weight, ResourceVector demandPerTask, int maxTasks) {
    public DrfClaimant {
        if (id == null || id.isBlank()) {
            throw new IllegalArgumentException("claimant needs an id");
        }
        if (!Double.isFinite(weight) || weight <= 0) {
            throw new IllegalArgumentException("weight of " + id + " must be positive, got " + weight);
        }
        if (demandPerTask == null || !demandPerTask.isValid()) {
            throw new IllegalArgumentException("demand of " + id + " must be finite and non-negative: " + demandPerTask);
        }
        if (maxTasks < 0) {
            throw new IllegalArgumentException("maxTasks of " + id + " must not be negative");
        }
    }
}
