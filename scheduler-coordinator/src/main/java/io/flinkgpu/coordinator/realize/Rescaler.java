package io.flinkgpu.coordinator.realize;

import java.io.IOException;

/** Sets a vertex's parallelism: {@link ParallelismRealizer}, or a fake in tests. */
@FunctionalInterface
public interface Rescaler {
    void setParallelism(String jobId, String vertexId, int parallelism) throws IOException, InterruptedException;
}
