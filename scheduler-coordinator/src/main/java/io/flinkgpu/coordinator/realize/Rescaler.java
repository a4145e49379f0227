package io.flinkgpu.coordinator.realize;

import java.io.IOException;

/**
 * Applies a parallelism to the job's inference vertex: in place through the adaptive scheduler
 * ({@link AdaptiveSchedulerRescaler}), by stop-with-savepoint and resubmit
 * ({@link StopWithSavepointRescaler}), the one with the other as fallback
 * ({@link Rescalers#withFallback}), or a fake in tests. Unlike a {@link PlanRealizer}, which hands
 * a plan to the running job, a rescale restarts the job.
 */
@FunctionalInterface
public interface Rescaler {
    void setParallelism(String jobId, String vertexId, int parallelism) throws IOException, InterruptedException;
}
