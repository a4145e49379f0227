package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.ParallelismPlanner;
import io.flinkgpu.coordinator.plan.RescaleRecord;
import io.flinkgpu.coordinator.plan.SlotLoad;
import io.flinkgpu.coordinator.realize.Rescaler;
import io.flinkgpu.coordinator.state.StateStore;
import java.util.List;
import java.util.Optional;
import org.apache.flink.configuration.ReadableConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The loop's parallelism step: asks the {@link ParallelismPlanner} how many inference subtasks
 * the job should run and, with a {@link Rescaler} (and not in a dry run), applies it. What it
 * would choose but does not apply is logged once per change of mind, so a standing decision
 * does not fill the log every cycle. Changes are spaced by the planner's minimum interval,
 * counted from the last rescale the coordinator started: with a {@link StateStore} each rescale
 * is recorded there ({@link StateStore#rescales}), so a restarted coordinator waits out the same
 * interval rather than rescaling again at once.
 *
 * <p>It remembers the last logged decision between cycles; the loop calls it from one thread at a
 * time.
 */
public final class ParallelismStep {
    private static final Logger LOG = LoggerFactory.getLogger(ParallelismStep.class);

    private final ParallelismPlanner planner;
    private final Rescaler rescaler;
    /** Where rescales are recorded, or null: remembered in memory only. */
    private final StateStore store;
    private long lastRescaleMillis;
    private String lastLogged;

    /** @param rescaler applies the chosen parallelism, or null to only log what it would choose */
    public ParallelismStep(ParallelismPlanner planner, Rescaler rescaler) {
        this(planner, rescaler, null);
    }

    /** As {@link #ParallelismStep(ParallelismPlanner, Rescaler)}, recording rescales in {@code store} (or null). */
    public ParallelismStep(ParallelismPlanner planner, Rescaler rescaler, StateStore store) {
        this.planner = planner;
        this.rescaler = rescaler;
        this.store = store;
        this.lastRescaleMillis = Long.MIN_VALUE;
    }

    /** When the last rescale started: the store's record (one made through the admin API included), else memory. */
    private long lastRescaleMillis() {
        if (store == null) {
            return lastRescaleMillis;
        }
        List<RescaleRecord> history = store.rescales();
        return history.isEmpty() ? Long.MIN_VALUE : history.get(history.size() - 1).atMillis();
    }

    /** The step as the coordinator's options configure the planner, with {@code rescaler} (or null) and {@code store}. */
    public static ParallelismStep fromConfig(ReadableConfig config, Rescaler rescaler, StateStore store) {
        return new ParallelismStep(new ParallelismPlanner(config.get(CoordinatorOptions.MAX_SLOTS_PER_DEVICE),
                config.get(CoordinatorOptions.DEVICE_COUNT), config.get(CoordinatorOptions.DEVICE_WEIGHTS),
                config.get(CoordinatorOptions.BUSY_HIGH),
                config.get(CoordinatorOptions.TARGET_UTILIZATION), config.get(CoordinatorOptions.HYSTERESIS),
                config.get(CoordinatorOptions.MIN_RESCALE_INTERVAL),
                config.getOptional(CoordinatorOptions.TARGET_BUSY).orElse(Double.NaN)), rescaler, store);
    }

    /**
     * Plans the parallelism for this cycle and adds what it decided to {@code decisions}.
     *
     * @return whether the job is now being rescaled (its counters start again: the loop measures afresh)
     */
    public boolean rescale(MetricSnapshot snapshot, Demand demand, long now, boolean dryRun,
            List<Decision> decisions) {
        Optional<ParallelismPlanner.Result> result = planner.plan(slotLoads(demand), demand.parallelism(), now,
                lastRescaleMillis());
        if (result.isEmpty()) {
            lastLogged = null;
            return false;
        }
        Decision d = result.get().decision();
        Optional<Integer> target = result.get().parallelism();
        if (!applies(target, dryRun)) {
            logOnce(decisions, d, target.isPresent() && rescaler == null
                    ? " (not applied: coordinator.parallelism.mode is off)" : "");
            return false;
        }
        lastRescaleMillis = now;
        lastLogged = null;
        try {
            rescaler.setParallelism(snapshot.jobId(), snapshot.vertexId(), target.get());
            if (store != null) {
                store.appendRescale(new RescaleRecord(now, demand.parallelism(), target.get(), d.reason()));
            }
            decisions.add(d);
            LOG.info("Rescaling: {}", d.reason());
            return true;
        } catch (Exception e) {
            decisions.add(new Decision(now, "HOLD", null, null, d.reason() + "; the rescale failed: " + e.getMessage()));
            LOG.warn("Rescale to {} failed: {}", target.get(), e.toString());
            return false;
        }
    }

    /** A parallelism is applied only where there is one to apply, a rescaler, and the cycle is not a dry run. */
    private boolean applies(Optional<Integer> target, boolean dryRun) {
        return target.isPresent() && rescaler != null && !dryRun;
    }

    private void logOnce(List<Decision> decisions, Decision d, String note) {
        String reason = d.reason() + note;
        if (!reason.equals(lastLogged)) {
            decisions.add(new Decision(d.atMillis(), d.action(), null, null, reason));
            lastLogged = reason;
        }
    }

    private static List<SlotLoad> slotLoads(Demand demand) {
        return demand.devices().values().stream()
                .map(d -> new SlotLoad(d.deviceId(), d.utilization(), d.busyFraction(), d.subtasks(),
                        d.meanBusyFraction(), d.inputRatePerSecond(), d.forecastRatePerSecond()))
                .toList();
    }
}
