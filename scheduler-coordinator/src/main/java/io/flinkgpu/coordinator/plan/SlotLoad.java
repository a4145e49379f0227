package io.flinkgpu.coordinator.plan;

import java.util.List;

/**
 * How busy one device's inference slots (its subtasks) are, the requests they take, and the device
 * itself: what the {@link ParallelismPlanner} decides on, as {@link DeviceSpec} and {@link ModelSpec}
 * are what the placement planner decides on.
 *
 * @param utilization the device's own busy fraction (NaN where unknown)
 * @param busyFraction the busiest of its subtasks' Flink busy time (0..1)
 * @param subtasks the subtasks that report this device (empty: not known), which tell the planner
 *     which device of the slot layout it is
 * @param meanBusyFraction the mean of its subtasks' busy time (0..1; NaN: take {@code busyFraction})
 * @param ratePerSecond the requests per second its subtasks took in, all together (NaN: not measured)
 * @param forecastRatePerSecond the requests per second the forecast expects on it (NaN: no forecast)
 */
public record SlotLoad(String deviceId, double utilization, double busyFraction, List<Integer> subtasks,
        double meanBusyFraction, double ratePerSecond, double forecastRatePerSecond) {
    public SlotLoad {
        subtasks = subtasks == null ? List.of() : List.copyOf(subtasks);
    }

    /** Without rates: the planner steps by busy time alone. */
    public SlotLoad(String deviceId, double utilization, double busyFraction, List<Integer> subtasks) {
        this(deviceId, utilization, busyFraction, subtasks, Double.NaN, Double.NaN, Double.NaN);
    }

    /** A device whose subtasks are not known: the planner takes the devices in the order given. */
    public SlotLoad(String deviceId, double utilization, double busyFraction) {
        this(deviceId, utilization, busyFraction, List.of());
    }

    /** The mean busy time of its subtasks, the busiest one's where the mean is not known. */
    public double meanBusy() {
        return Double.isFinite(meanBusyFraction) ? meanBusyFraction : busyFraction;
    }

    /** The rate to size for: the larger of the measured one and the forecast where there is one. */
    public double demandRate() {
        return Double.isFinite(forecastRatePerSecond) ? Math.max(ratePerSecond, forecastRatePerSecond) : ratePerSecond;
    }
}
