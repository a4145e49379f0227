package io.flinkgpu.coordinator.evaluate;

import java.util.List;
import java.util.Map;

/**
 * One device as measured: the subtasks on it, its memory, how busy it is and the requests it takes.
 *
 * @param utilization the device's own busy fraction (NaN where unknown)
 * @param busyFraction the busiest of its subtasks' Flink busy time (0..1)
 * @param backPressuredFraction the most backpressured of its subtasks (0..1)
 * @param meanBusyFraction the mean of its subtasks' Flink busy time (0..1; NaN where unknown)
 * @param inputRatePerSecond the valid requests per second its subtasks took in between the last two
 *     collections, all models together (NaN where not measured: no earlier collection)
 * @param modelRates that rate per model (what the forecast scales)
 * @param forecastRatePerSecond the rate the forecast expects on the device where a model it serves
 *     has a significant rising trend ({@link DemandForecast}); NaN where there is no forecast
 */
public record DeviceLoad(
        String deviceId,
        List<Integer> subtasks,
        long memoryTotalBytes,
        long memoryUsedBytes,
        double utilization,
        double busyFraction,
        double backPressuredFraction,
        double meanBusyFraction,
        double inputRatePerSecond,
        Map<String, Double> modelRates,
        double forecastRatePerSecond) {
    public DeviceLoad {
        subtasks = subtasks == null ? List.of() : List.copyOf(subtasks);
        modelRates = modelRates == null ? Map.of() : Map.copyOf(modelRates);
    }

    /** Without rates: the mean busy time unknown, no rate measured, no forecast. */
    public DeviceLoad(String deviceId, List<Integer> subtasks, long memoryTotalBytes, long memoryUsedBytes,
            double utilization, double busyFraction, double backPressuredFraction) {
        this(deviceId, subtasks, memoryTotalBytes, memoryUsedBytes, utilization, busyFraction, backPressuredFraction,
                Double.NaN, Double.NaN, Map.of(), Double.NaN);
    }

    /** The same device with {@code forecastRatePerSecond} as its forecast rate. */
    public DeviceLoad withForecast(double forecastRate) {
        return new DeviceLoad(deviceId, subtasks, memoryTotalBytes, memoryUsedBytes, utilization, busyFraction,
                backPressuredFraction, meanBusyFraction, inputRatePerSecond, modelRates, forecastRate);
    }
}
