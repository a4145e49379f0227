package io.flinkgpu.coordinator.evaluate;

import java.util.List;

/**
 * One device as measured: the subtasks on it, its memory, and how busy it is.
 *
 * @param utilization the device's own busy fraction (NaN where unknown)
 * @param busyFraction the busiest of its subtasks' Flink busy time (0..1)
 * @param backPressuredFraction the most backpressured of its subtasks (0..1)
 */
public record DeviceLoad(
        String deviceId,
        List<Integer> subtasks,
        long memoryTotalBytes,
        long memoryUsedBytes,
        double utilization,
        double busyFraction,
        double backPressuredFraction) {}
