package io.flinkgpu.coordinator.collect;

import java.util.List;

/** What one collection saw: the job, its inference vertex and every subtask's metrics. */
public record MetricSnapshot(long atMillis, String jobId, String vertexId, int parallelism,
        List<SubtaskSample> subtasks) {
    public MetricSnapshot {
        subtasks = subtasks == null ? List.of() : List.copyOf(subtasks);
    }
}
