package io.flinkgpu.coordinator.state;

import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.MoveRecord;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.contract.control.ControlMessage;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Everything the coordinator must remember across restarts. Like the autoscaler's
 * {@code AutoScalerStateStore}: one interface, a durable implementation
 * ({@link RocksDbStateStore}) and an in-memory one for tests ({@link InMemoryStateStore}).
 * Implementations are thread-safe; every write survives a crash of the process when the method
 * returns, and {@link #recordPlan} (with everything written before it) a crash of the machine.
 */
public interface StateStore extends AutoCloseable, io.flinkgpu.coordinator.rollout.RolloutStore {

    // model catalog
    Map<String, ModelInfo> models();

    void putModel(ModelInfo model);

    void removeModel(String name);

    // latency-model and rate history, newest last, bounded per model
    void appendLatency(String model, LatencySample sample);

    List<LatencySample> latencyHistory(String model);

    // placements and the moves that led to them (for hysteresis and the reversal limit)
    Placement placement();

    void putPlacement(Placement placement);

    List<MoveRecord> moves();

    void appendMoves(List<MoveRecord> moves);

    // rescales of the inference vertex (the minimum interval between them holds across restarts)
    List<io.flinkgpu.coordinator.plan.RescaleRecord> rescales();

    void appendRescale(io.flinkgpu.coordinator.plan.RescaleRecord rescale);

    // scale to zero: each model's idle clock (the counters it compared, since when they stood still)
    Map<String, IdleClock> idleClocks();

    /** Replaces every idle clock by these (models left out lose theirs), in one write. */
    void putIdleClocks(Map<String, IdleClock> clocks);

    // gray releases: each model's latest rollout (RolloutStore), so a restart resumes at the same step
    @Override
    Map<String, io.flinkgpu.coordinator.rollout.Rollout> rollouts();

    @Override
    void putRollout(io.flinkgpu.coordinator.rollout.Rollout rollout);

    @Override
    void removeRollout(String model);

    // plans
    /** The epoch of the last plan recorded, 0 before the first. */
    long lastEpoch();

    Optional<ControlMessage> lastPlan();

    /**
     * Records a plan as published. Its epoch must be greater than {@link #lastEpoch()}: a store never
     * goes back, so a restarted coordinator never publishes an older epoch.
     *
     * @throws IllegalStateException if the epoch is not newer
     */
    void recordPlan(ControlMessage plan);

    // decision log, newest last, bounded
    @Override
    void appendDecisions(List<Decision> decisions);

    List<Decision> recentDecisions(int limit);

    // tenants
    Map<String, Double> tenantWeights();

    void putTenantWeight(String tenant, double weight);

    // operator switch
    boolean paused();

    void setPaused(boolean paused);

    @Override
    void close();
}
