package io.flinkgpu.coordinator.plan;

/**
 * A model the planner places, with its measured demand.
 *
 * @param memoryBytes device memory one instance needs (indivisible: all of it on one device)
 * @param load device-seconds per second its traffic needs in total (rate x per-request device time)
 * @param cpuPerInstance host cores one instance uses
 * @param weight its DRF weight (from the tenants that use it)
 * @param batchMillis device time of one of its batches at the batch its demand is priced at
 *     ({@code alpha + beta * b}); 0 where no latency model is known
 * @param sloMillis its latency objective; 0 where none is declared. With {@code batchMillis} it
 *     decides which models may share a device ({@link PlannerSettings#sloColocation()})
 */
public record ModelSpec(String name, long memoryBytes, double load, double cpuPerInstance, double weight,
        double batchMillis, double sloMillis) {

    /** Without a batch time or SLO: shares a device with any model. */
    public ModelSpec(String name, long memoryBytes, double load, double cpuPerInstance, double weight) {
        this(name, memoryBytes, load, cpuPerInstance, weight, 0, 0);
    }

    /**
     * Whether a request of either model can still meet its SLO on a device that runs both: one
     * batch of the other in flight when it arrives, then its own batch, within the tighter SLO.
     * Models without a batch time or an SLO are compatible with every model.
     */
    public boolean compatibleWith(ModelSpec other) {
        if (!(batchMillis > 0) || !(other.batchMillis > 0)) {
            return true;
        }
        double slo = Math.min(sloMillis > 0 ? sloMillis : Double.POSITIVE_INFINITY,
                other.sloMillis > 0 ? other.sloMillis : Double.POSITIVE_INFINITY);
        return batchMillis + other.batchMillis <= slo;
    }
}
