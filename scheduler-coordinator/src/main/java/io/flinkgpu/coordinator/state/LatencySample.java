package io.flinkgpu.coordinator.state;

/**
 * One observation of a model's latency model and traffic, kept as history so that a restarted
 * coordinator has fits and rates before its first new measurement.
 *
 * @param alphaMicros fixed cost per batch (latency model intercept)
 * @param betaMicros cost per sample (slope)
 * @param ratePerSecond requests per second across all subtasks
 * @param meanBatchSize samples per batch
 * @param plannedRatePerSecond the rate the planner was given that cycle: the measured one, or where the
 *     forecast raised the model's demand, the forecast's (the scale-in window's peak includes it);
 *     0 in samples recorded before this field existed, which then count with their measured rate
 */
public record LatencySample(long atMillis, double alphaMicros, double betaMicros, double ratePerSecond,
        double meanBatchSize, double plannedRatePerSecond) {

    /** A sample whose planned rate is the measured one. */
    public LatencySample(long atMillis, double alphaMicros, double betaMicros, double ratePerSecond,
            double meanBatchSize) {
        this(atMillis, alphaMicros, betaMicros, ratePerSecond, meanBatchSize, ratePerSecond);
    }

    /** The rate the scale-in window holds: the larger of the measured and the planned rate. */
    public double peakRatePerSecond() {
        return Math.max(ratePerSecond, Double.isFinite(plannedRatePerSecond) ? plannedRatePerSecond : 0);
    }
}
