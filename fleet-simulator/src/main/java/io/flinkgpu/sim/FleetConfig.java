package io.flinkgpu.sim;

import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.plan.PlannerSettings;
import io.flinkgpu.inference.device.LoadTimeModel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The simulated fleet and the loop around it.
 *
 * @param deviceKinds one entry per device: its kind in the {@link Calibration} ({@code a100}, {@code cpu})
 * @param deviceMemoryBytes memory for models on each device
 * @param loadTime how long putting a model of n bytes on a device takes (the library's model)
 * @param horizonSeconds arrivals stop here; the run drains what is queued
 * @param warmupSeconds arrivals before this are served but not counted
 * @param cycleSeconds the coordinator's {@code coordinator.interval}
 * @param metricsFetchSeconds Flink's metric fetcher interval: the coordinator reads counters as of the last
 *     fetch (0: always fresh)
 * @param metricsSettleSeconds the collector's {@code coordinator.flink.metrics-settle} wait before reading
 * @param controlDelaySeconds from a plan's publication to the job applying it (the control topic)
 * @param maxModelsPerDevice {@code coordinator.device.max-models}, also the planner fleet's
 *     {@code max_models_per_device}
 * @param planner the planner's settings ({@code coordinator.plan.*})
 * @param evictionTimeoutSeconds the planner fleet's cache {@code eviction_timeout} (0: off)
 * @param warmBeforeRoute the coordinator's {@code coordinator.plan.warm-before-route}
 * @param warmTimeoutSeconds its {@code coordinator.plan.warm-timeout}
 * @param forecastHorizonSeconds its {@code coordinator.forecast.horizon} (0: no forecast); the forecast's other
 *     settings are the coordinator's defaults
 * @param warmCheckSeconds its {@code coordinator.plan.warm-check-interval}: the time to the next cycle while a
 *     route is held for a load ({@code CycleSchedule})
 */
public record FleetConfig(List<String> deviceKinds, long deviceMemoryBytes, LoadTimeModel loadTime,
        double horizonSeconds, double warmupSeconds, double cycleSeconds, double metricsFetchSeconds,
        double metricsSettleSeconds, double controlDelaySeconds, int maxModelsPerDevice, PlannerSettings planner,
        long evictionTimeoutSeconds, boolean warmBeforeRoute, double warmTimeoutSeconds,
        double forecastHorizonSeconds, double warmCheckSeconds) {

    public FleetConfig {
        deviceKinds = List.copyOf(deviceKinds);
        if (deviceKinds.isEmpty() || deviceMemoryBytes <= 0 || horizonSeconds <= 0 || warmupSeconds < 0
                || warmupSeconds >= horizonSeconds || cycleSeconds <= 0 || maxModelsPerDevice < 1
                || !(warmTimeoutSeconds >= 0) || !(forecastHorizonSeconds >= 0) || !(warmCheckSeconds > 0)) {
            throw new IllegalArgumentException("invalid fleet config");
        }
    }

    public int devices() {
        return deviceKinds.size();
    }

    /**
     * {@code n} devices of one kind with 38 GiB for models (an A100 40 GB less its CUDA context), the
     * library's default load time, the coordinator's default interval (5 s), planner settings,
     * warm-before-route and forecast, up to 8 models per device (the coordinator's default is 4).
     */
    public static FleetConfig of(int n, String kind, double horizonSeconds, double warmupSeconds) {
        return new FleetConfig(Collections.nCopies(n, kind), 38L << 30, LoadTimeModel.parse(LoadTimeModel.DEFAULT_SPEC),
                horizonSeconds, warmupSeconds, 5, 0, 0, 0.05, 8, PlannerSettings.defaults(), 300,
                CoordinatorOptions.WARM_BEFORE_ROUTE.defaultValue(),
                CoordinatorOptions.WARM_TIMEOUT.defaultValue().toMillis() / 1000.0,
                CoordinatorOptions.FORECAST_HORIZON.defaultValue().toMillis() / 1000.0,
                CoordinatorOptions.WARM_CHECK_INTERVAL.defaultValue().toMillis() / 1000.0);
    }

    /** With {@code coordinator.plan.warm-check-interval} at {@code seconds}. */
    public FleetConfig withWarmCheck(double seconds) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, seconds);
    }

    public FleetConfig withWarmRouting(boolean warm, double timeoutSeconds) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warm, timeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    /** With {@code coordinator.forecast.horizon} at {@code forecastSeconds} (0: off). */
    public FleetConfig withForecast(double forecastSeconds) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastSeconds, warmCheckSeconds);
    }

    public FleetConfig withKinds(List<String> kinds) {
        return new FleetConfig(kinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    public FleetConfig withMemory(long bytes) {
        return new FleetConfig(deviceKinds, bytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    public FleetConfig withLoop(double cycle, double fetch, double settle, double controlDelay) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycle, fetch,
                settle, controlDelay, maxModelsPerDevice, planner, evictionTimeoutSeconds, warmBeforeRoute,
                warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    public FleetConfig withPlanner(PlannerSettings p, int maxModels) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModels, p, evictionTimeoutSeconds,
                warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    public FleetConfig withHorizon(double horizon, double warmup) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, loadTime, horizon, warmup, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    public FleetConfig withLoadTime(LoadTimeModel m) {
        return new FleetConfig(deviceKinds, deviceMemoryBytes, m, horizonSeconds, warmupSeconds, cycleSeconds,
                metricsFetchSeconds, metricsSettleSeconds, controlDelaySeconds, maxModelsPerDevice, planner,
                evictionTimeoutSeconds, warmBeforeRoute, warmTimeoutSeconds, forecastHorizonSeconds, warmCheckSeconds);
    }

    /** Parses {@code a100:16,cpu:4} into per-device kinds. */
    public static List<String> parseKinds(String spec) {
        List<String> out = new ArrayList<>();
        for (String part : spec.split(",")) {
            String[] kv = part.trim().split(":");
            if (kv.length != 2) {
                throw new IllegalArgumentException("device spec '" + part + "' is not KIND:COUNT");
            }
            int n = Integer.parseInt(kv[1]);
            if (n < 0) {
                throw new IllegalArgumentException("negative device count in " + part);
            }
            out.addAll(Collections.nCopies(n, kv[0]));
        }
        return out;
    }
}
