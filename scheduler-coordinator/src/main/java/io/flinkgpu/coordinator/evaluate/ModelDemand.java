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
 * @param tenantRates requests per second of each tenant that sent the model traffic
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
        String reason,
        java.util.Map<String, Double> tenantRates) {
    public ModelDemand {
        tenantRates = tenantRates == null ? java.util.Map.of() : java.util.Map.copyOf(tenantRates);
    }

    /** Without a per-tenant breakdown. */
    public ModelDemand(String model, String version, double ratePerSecond, double batchSize,
            double deviceSecondsPerSecond, long memoryBytes, double alphaMicros, double betaMicros,
            Set<String> servedOn, String reason) {
        this(model, version, ratePerSecond, batchSize, deviceSecondsPerSecond, memoryBytes, alphaMicros, betaMicros,
                servedOn, reason, java.util.Map.of());
    }
}
