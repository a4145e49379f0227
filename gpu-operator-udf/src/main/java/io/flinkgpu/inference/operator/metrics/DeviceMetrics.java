package io.flinkgpu.inference.operator.metrics;

import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceTelemetry;
import io.flinkgpu.inference.model.ModelId;
import java.util.concurrent.TimeUnit;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * Per-device metrics under {@code gpu_inference.device.<id>} (a key-value group, a
 * {@code device} label in Prometheus): memory, utilisation, temperature and power as the device
 * reports them (NaN where unknown), the model cache's residents, and its loads, swap-ins,
 * evictions and load latencies. It is the cache's listener, so the counts are exact.
 */
public final class DeviceMetrics implements ModelCache.Listener {
    /** Telemetry is read once per reporting round, not once per gauge: utilisation is a window. */
    private static final long TELEMETRY_MAX_AGE_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    private final Device device;
    private final MetricGroup group;
    private final Counter coldLoads;
    private final Counter swapIns;
    private final Counter evictions;
    private final Counter loadFailures;
    private final Histogram coldLoadLatencyUs;
    private final Histogram swapInLatencyUs;
    private DeviceTelemetry telemetry;
    private long telemetryAtNanos;

    public DeviceMetrics(MetricGroup operatorGroup, Device device) {
        this.device = device;
        this.group = operatorGroup.addGroup(InferenceMetrics.GROUP).addGroup(MetricNames.DEVICE, device.id());
        coldLoads = group.counter(MetricNames.MODEL_LOADS);
        swapIns = group.counter(MetricNames.MODEL_SWAP_INS);
        evictions = group.counter(MetricNames.MODEL_EVICTIONS);
        loadFailures = group.counter(MetricNames.MODEL_LOAD_FAILURES);
        coldLoadLatencyUs = group.histogram(MetricNames.MODEL_LOAD_LATENCY_US,
                new DescriptiveStatisticsHistogram(InferenceMetrics.HISTOGRAM_WINDOW));
        swapInLatencyUs = group.histogram(MetricNames.SWAP_IN_LATENCY_US,
                new DescriptiveStatisticsHistogram(InferenceMetrics.HISTOGRAM_WINDOW));
        group.gauge(MetricNames.MEMORY_USED_BYTES, () -> telemetry().memoryUsedBytes());
        group.gauge(MetricNames.MEMORY_TOTAL_BYTES, () -> telemetry().memoryTotalBytes());
        group.gauge(MetricNames.UTILIZATION, () -> telemetry().utilization());
        group.gauge(MetricNames.TEMPERATURE_CELSIUS, () -> telemetry().temperatureCelsius());
        group.gauge(MetricNames.POWER_WATTS, () -> telemetry().powerWatts());
        group.gauge(MetricNames.HEALTHY, () -> device.isHealthy() ? 1 : 0);
    }

    /** Adds the gauges that read the device's model cache. */
    public DeviceMetrics watch(ModelCache cache) {
        group.gauge(MetricNames.MODELS_LOADED, cache::loadedCount);
        group.gauge(MetricNames.MODELS_ON_HOST, () -> cache.hostModels().size());
        group.gauge(MetricNames.HOST_CACHE_BYTES, cache::hostBytes);
        return this;
    }

    private synchronized DeviceTelemetry telemetry() {
        long now = System.nanoTime();
        if (telemetry == null || now - telemetryAtNanos > TELEMETRY_MAX_AGE_NANOS) {
            telemetry = device.telemetry();
            telemetryAtNanos = now;
        }
        return telemetry;
    }

    @Override
    public void loaded(ModelId id, long nanos, boolean fromHost) {
        if (fromHost) {
            swapIns.inc();
            swapInLatencyUs.update(nanos / 1000);
        } else {
            coldLoads.inc();
            coldLoadLatencyUs.update(nanos / 1000);
        }
    }

    @Override
    public void evicted(ModelId id, String reason) {
        evictions.inc();
    }

    @Override
    public void loadFailed(ModelId id, String reason) {
        loadFailures.inc();
    }
}
