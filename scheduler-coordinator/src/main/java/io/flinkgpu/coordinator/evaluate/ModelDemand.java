package io.flinkgpu.coordinator.evaluate;

import java.util.Set;

/**
 * What one model needs, derived from measurements.
 *
 * @param ratePerSecond requests per second over all subtasks
 * @param batchSize the batch size the demand assumes (measured mean, capped where the SLO allows)
 * @param deviceSecondsPerSecond device time its traffic needs (1.0 = one device fully busy)
 * @param memoryBytes memory of one instance
 * @param servedOn devices whose subtasks answered its requests since the last collection
 * @param reason how the numbers were derived
 */
public record ModelDemand(
        String model,
        String version,
        double ratePerSecond,
        double batchSize,
        double deviceSecondsPerSecond,
        long memoryBytes,
        double alphaMicros,
        double betaMicros,
        Set<String> servedOn,
        String reason) {}
