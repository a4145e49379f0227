package io.flinkgpu.coordinator.state;

/**
 * One observation of a model's latency model and traffic, kept as history so that a restarted
 * coordinator has fits and rates before its first new measurement.
 *
 * @param alphaMicros fixed cost per batch (latency model intercept)
 * @param betaMicros cost per sample (slope)
 * @param ratePerSecond requests per second across all subtasks
 * @param meanBatchSize samples per batch
 */
public record LatencySample(long atMillis, double alphaMicros, double betaMicros, double ratePerSecond,
        double meanBatchSize) {}
