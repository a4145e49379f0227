package io.flinkgpu.coordinator.plan;

/**
 * The planner's knobs (defaults in the coordinator's options).
 *
 * @param targetUtilization device time a device should carry (0..1); replicas are added to keep each below it
 * @param hysteresis relative margin around thresholds: scale in only below target x (1 - h), rebalance only above target x (1 + h)
 * @param hotThreshold per-instance load from which a model is "hot" (spread onto the least loaded device) rather than "cold" (packed)
 * @param movePenalty device time a move must shave off the busiest device to be worth a reload
 * @param minMoveIntervalMillis a model is not moved again sooner than this
 * @param reversalWindowMillis window of the reversal limit (10 minutes)
 * @param maxReversalsPerWindow moves that undo a previous move of the same model, per window (1)
 * @param maxMovesPerPlan relocations in one plan
 */
public record PlannerSettings(
        double targetUtilization,
        double hysteresis,
        double hotThreshold,
        double movePenalty,
        long minMoveIntervalMillis,
        long reversalWindowMillis,
        int maxReversalsPerWindow,
        int maxMovesPerPlan) {

    public static PlannerSettings defaults() {
        return new PlannerSettings(0.7, 0.15, 0.25, 0.1, 120_000, 600_000, 1, 2);
    }
}
