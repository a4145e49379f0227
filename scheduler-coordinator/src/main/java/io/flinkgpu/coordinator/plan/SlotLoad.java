package io.flinkgpu.coordinator.plan;

/**
 * How busy one device's inference slots (its subtasks) are, and the device itself: what the
 * {@link ParallelismPlanner} decides on, as {@link DeviceSpec} and {@link ModelSpec} are what the
 * placement planner decides on.
 *
 * @param utilization the device's own busy fraction (NaN where unknown)
 * @param busyFraction the busiest of its subtasks' Flink busy time (0..1)
 */
public record SlotLoad(String deviceId, double utilization, double busyFraction) {}
