package io.flinkgpu.coordinator.plan;

import java.util.List;

/**
 * A device the planner may place model instances on, and the inference subtasks that run on it.
 *
 * @param memoryBytes memory budget for model weights
 * @param maxModels at most this many models resident at once ({@code inference.cache.max-models-per-device})
 * @param cpuCores host cores that serve this device's subtasks
 */
public record DeviceSpec(String id, long memoryBytes, int maxModels, double cpuCores, List<Integer> subtasks) {
    public DeviceSpec {
        subtasks = subtasks == null ? List.of() : List.copyOf(subtasks);
    }
}
