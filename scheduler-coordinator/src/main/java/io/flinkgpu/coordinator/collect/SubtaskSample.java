package io.flinkgpu.coordinator.collect;

import java.util.List;

/**
 * One inference subtask's metrics: its device (from the {@code gpu_inference.device.<id>} group
 * it registers), the device's memory and utilisation, Flink's busy/backpressure time and its
 * models.
 */
public record SubtaskSample(
        int subtask,
        String deviceId,
        double memoryUsedBytes,
        double memoryTotalBytes,
        double utilization,
        double busyMsPerSecond,
        double backPressuredMsPerSecond,
        double queuedRequests,
        List<ModelSample> models) {
    public SubtaskSample {
        models = models == null ? List.of() : List.copyOf(models);
    }
}
