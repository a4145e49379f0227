package io.flinkgpu.coordinator.rollout;

import io.flinkgpu.coordinator.plan.Decision;
import java.util.List;
import java.util.Map;

/**
 * What the {@link RolloutEngine} keeps: one {@link Rollout} per model (the latest, finished or
 * not) and the decision log it writes to. The coordinator's state store is one
 * ({@code StateStore} extends it), so a restarted coordinator resumes every rollout where it was.
 */
public interface RolloutStore {
    /** model -> its latest rollout, in model order. */
    Map<String, Rollout> rollouts();

    void putRollout(Rollout rollout);

    void removeRollout(String model);

    void appendDecisions(List<Decision> decisions);
}
