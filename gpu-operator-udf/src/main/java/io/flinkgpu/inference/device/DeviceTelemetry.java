package io.flinkgpu.inference.device;

/**
 * A device's state at one instant. Values a device cannot know are {@code NaN} (utilisation,
 * temperature, power) so that a dashboard shows "no data" rather than a made-up zero.
 *
 * @param utilization busy fraction in [0, 1] since the previous sample
 */
public record DeviceTelemetry(long memoryUsedBytes, long memoryTotalBytes, double utilization,
        double temperatureCelsius, double powerWatts) {}
