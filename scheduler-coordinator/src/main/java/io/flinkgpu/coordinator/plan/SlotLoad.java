package io.flinkgpu.coordinator.plan;

import java.util.List;

/**
 * How busy one device's inference slots (its subtasks) are, and the device itself: what the
 * {@link ParallelismPlanner} decides on, as {@link DeviceSpec} and {@link ModelSpec} are what the
 * placement planner decides on.
 *
 * @param utilization the device's own busy fraction (NaN where unknown)
 * @param busyFraction the busiest of its subtasks' Flink busy time (0..1)
 * @param subtasks the subtasks that report this device (empty: not known), which tell the planner
 *     which device of the slot layout it is
 */
public record SlotLoad(String deviceId, double utilization, double busyFraction, List<Integer> subtasks) {
    public SlotLoad {
        subtasks = subtasks == null ? List.of() : List.copyOf(subtasks);
    }

    /** A device whose subtasks are not known: the planner takes the devices in the order given. */
    public SlotLoad(String deviceId, double utilization, double busyFraction) {
        this(deviceId, utilization, busyFraction, List.of());
    }
}
