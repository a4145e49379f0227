package io.flinkgpu.coordinator.plan;

/**
 * A model the planner places, with its measured demand.
 *
 * @param memoryBytes device memory one instance needs (indivisible: all of it on one device)
 * @param load device-seconds per second its traffic needs in total (rate x per-request device time)
 * @param cpuPerInstance host cores one instance uses
 * @param weight its DRF weight (from the tenants that use it)
 */
public record ModelSpec(String name, long memoryBytes, double load, double cpuPerInstance, double weight) {}
