package io.flinkgpu.coordinator;

import java.time.Duration;
import java.util.Objects;
import org.apache.flink.configuration.ReadableConfig;

/**
 * When the loop runs its next cycle: {@code coordinator.interval} after the last one, or
 * {@code coordinator.plan.warm-check-interval} after it while a new instance's route is held for
 * its load ({@link WarmRouting}), so that the instance is routed soon after the job reports it
 * loaded instead of a whole interval later. The service's loop and the fleet simulator both ask it.
 *
 * @param interval the time between two cycles
 * @param warmCheck the time to the next cycle while routes are held (no effect at or above {@code interval})
 */
public record CycleSchedule(Duration interval, Duration warmCheck) {
    public CycleSchedule {
        Objects.requireNonNull(interval, "interval");
        Objects.requireNonNull(warmCheck, "warm check interval");
        if (interval.isNegative() || interval.isZero() || warmCheck.isNegative() || warmCheck.isZero()) {
            throw new IllegalArgumentException("coordinator.interval (" + interval + ") and "
                    + CoordinatorOptions.WARM_CHECK_INTERVAL.key() + " (" + warmCheck + ") must be positive");
        }
    }

    public static CycleSchedule fromConfig(ReadableConfig config) {
        return new CycleSchedule(config.get(CoordinatorOptions.INTERVAL),
                config.get(CoordinatorOptions.WARM_CHECK_INTERVAL));
    }

    /** The time from the end of a cycle that left {@code routesWarming} routes held to the next cycle. */
    public Duration delayAfter(int routesWarming) {
        return routesWarming > 0 && warmCheck.compareTo(interval) < 0 ? warmCheck : interval;
    }
}
