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
 * @param sloColocation keep models whose batches would make each other miss their SLO apart
 *     ({@link ModelSpec#compatibleWith}): new instances go to a device without such a neighbour
 *     where one fits, surplus instances leave conflicting devices first, and moves left over from
 *     rebalancing separate conflicting pairs
 */
public record PlannerSettings(
        double targetUtilization,
        double hysteresis,
        double hotThreshold,
        double movePenalty,
        long minMoveIntervalMillis,
        long reversalWindowMillis,
        int maxReversalsPerWindow,
        int maxMovesPerPlan,
        boolean sloColocation) {

    /** Without SLO co-location. */
    public PlannerSettings(double targetUtilization, double hysteresis, double hotThreshold, double movePenalty,
            long minMoveIntervalMillis, long reversalWindowMillis, int maxReversalsPerWindow, int maxMovesPerPlan) {
        this(targetUtilization, hysteresis, hotThreshold, movePenalty, minMoveIntervalMillis, reversalWindowMillis,
                maxReversalsPerWindow, maxMovesPerPlan, false);
    }

    public static PlannerSettings defaults() {
        return new PlannerSettings(0.7, 0.15, 0.25, 0.1, 120_000, 600_000, 1, 2, false);
    }

    public PlannerSettings withSloColocation(boolean on) {
        return new PlannerSettings(targetUtilization, hysteresis, hotThreshold, movePenalty, minMoveIntervalMillis,
                reversalWindowMillis, maxReversalsPerWindow, maxMovesPerPlan, on);
    }
}
