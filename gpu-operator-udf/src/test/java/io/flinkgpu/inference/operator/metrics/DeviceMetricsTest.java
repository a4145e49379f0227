package io.flinkgpu.inference.operator.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.cache.ModelCacheSettings;
import io.flinkgpu.inference.cache.ModelLease;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.testutils.MetricListener;
import org.junit.jupiter.api.Test;

/** Device metric names are a contract (docs/METRICS.md): pin them down with a real cache on a simulated GPU. */
class DeviceMetricsTest {
    static final String[] DEVICE = {"gpu_inference", "device", "sim:0"};

    private static String[] path(String name) {
        String[] p = java.util.Arrays.copyOf(DEVICE, DEVICE.length + 1);
        p[DEVICE.length] = name;
        return p;
    }

    @Test
    void reportsMemoryModelsLoadsSwapInsAndEvictionsPerDevice() throws Exception {
        MetricListener listener = new MetricListener();
        SimulatedDevice device = new SimulatedDevice("sim:0", 64L << 20, SpeedModel.CPU_SPEED);
        DeviceMetrics metrics = new DeviceMetrics(listener.getMetricGroup(), device);
        ModelRepository repo = ModelRepository.open(Path.of("src/test/resources/models"));
        ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withMaxModels(1).withBackgroundEviction(false)
                .withWarmupWorkers(0).withRoomWait(Duration.ZERO);
        try (ModelCache cache = new ModelCache(device, settings, System::nanoTime, metrics)) {
            metrics.watch(cache);
            for (String m : new String[] {"echo-fp32", "affine-fp32", "echo-fp32"}) {
                try (ModelLease lease = cache.acquire(repo.resolve(m, null))) {
                    assertThat(lease.id()).isEqualTo(new ModelId(m, "1"));
                }
            }

            assertThat(counter(listener, "modelLoads")).isEqualTo(2);
            assertThat(counter(listener, "modelSwapIns")).isEqualTo(1);
            assertThat(counter(listener, "modelEvictions")).isEqualTo(2);
            assertThat(counter(listener, "modelLoadFailures")).isZero();
            assertThat(listener.getHistogram(path("swapInLatencyUs")).orElseThrow().getCount()).isEqualTo(1);
            assertThat(listener.getHistogram(path("modelLoadLatencyUs")).map(Histogram::getCount)).contains(2L);
            assertThat(gauge(listener, "modelsLoaded")).isEqualTo(1);
            assertThat(gauge(listener, "modelsOnHost")).isEqualTo(1);
            assertThat((Long) gauge(listener, "memoryUsedBytes")).isEqualTo(SimulatedDevice.PAGE_BYTES);
            assertThat(gauge(listener, "memoryTotalBytes")).isEqualTo(64L << 20);
            assertThat((Double) gauge(listener, "temperatureCelsius")).isNaN();
            assertThat(gauge(listener, "healthy")).isEqualTo(1);
            device.injectDeviceLost();
            assertThat(gauge(listener, "healthy")).isEqualTo(0);
        }
    }

    private static long counter(MetricListener l, String name) {
        return l.getCounter(path(name)).map(Counter::getCount).orElseThrow(() -> new AssertionError(name));
    }

    private static Object gauge(MetricListener l, String name) {
        return l.getGauge(path(name)).map(Gauge::getValue).orElseThrow(() -> new AssertionError(name));
    }
}
