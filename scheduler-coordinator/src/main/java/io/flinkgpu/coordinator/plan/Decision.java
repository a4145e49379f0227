package io.flinkgpu.coordinator.plan;

/**
 * One decision of a plan and why it was taken, in words (which metric, which threshold).
 *
 * @param action LOAD, REPLICATE, SCALE_IN, SCALE_TO_ZERO (an idle model's instance unloaded, its route
 *     removed), MOVE, EVICT, UNLOAD, UNPLACED, HOLD, ALLOCATE, and the loop's
 *     OBSERVE, WARM (a new instance not routed until it is loaded), ROUTE (a warmed instance routed),
 *     PARALLELISM, DEMAND, TENANT, PUBLISH
 * @param device the device concerned, or null
 */
public record Decision(long atMillis, String action, String model, String device, String reason) {}
