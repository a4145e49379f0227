package io.flinkgpu.inference.operator.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.ErrorCode;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.testutils.MetricListener;
import org.junit.jupiter.api.Test;

/** The metric names are a contract (docs/METRICS.md, dashboards): pin them down. */
class InferenceMetricsTest {
    private static final ModelId MODEL = new ModelId("cnn", "2");

    @Test
    void registersDocumentedNamesWithModelAndVersionGroups() {
        MetricListener listener = new MetricListener();
        io.flinkgpu.inference.qos.LatencyModel latency = new io.flinkgpu.inference.qos.LatencyModel();
        latency.record(1, 3_000_000);
        latency.record(5, 7_000_000); // t(b) = 2 ms + 1 ms * b
        InferenceMetrics metrics = new InferenceMetrics(listener.getMetricGroup(), () -> 7, () -> 2, () -> 1,
                new InferenceMetrics.ModelGauges() {
                    @Override
                    public long queuedSamples(ModelId id) {
                        return id.equals(MODEL) ? 5 : 0;
                    }

                    @Override
                    public io.flinkgpu.inference.qos.LatencyModel latencyModel(ModelId id) {
                        return latency;
                    }

                    @Override
                    public int batchCap(ModelId id) {
                        return 12;
                    }

                    @Override
                    public boolean loaded(ModelId id) {
                        return id.equals(MODEL);
                    }
                });

        metrics.requestIn(MODEL);
        metrics.requestIn(MODEL);
        metrics.requestIn(null); // rejected before a model was resolved
        metrics.batchCompleted(MODEL, 2, 1.5, 0.5); // 1 ms of it waiting for a busy device
        metrics.queued(MODEL, 0.25);
        metrics.predicted(MODEL, 1_000_000, 1_400_000);
        metrics.responseOut(MODEL, null);
        metrics.responseOut(MODEL, ErrorCode.INFERENCE_FAILED);
        metrics.responseOut(null, ErrorCode.UNKNOWN_MODEL);

        String[] model = {"gpu_inference", "model", "cnn", "version", "2"};
        assertThat(counter(listener, "gpu_inference", "requestsIn")).isEqualTo(3);
        assertThat(counter(listener, "gpu_inference", "responsesOut")).isEqualTo(3);
        assertThat(counter(listener, append(model, "requestsIn"))).isEqualTo(2);
        assertThat(counter(listener, append(model, "responsesOut"))).isEqualTo(2);
        assertThat(counter(listener, append(model, "batches"))).isEqualTo(1);
        assertThat(counter(listener, "gpu_inference", "error", "UNKNOWN_MODEL", "errors")).isEqualTo(1);
        assertThat(counter(listener, "gpu_inference", "error", "INFERENCE_FAILED", "errors")).isEqualTo(1);
        assertThat(counter(listener, append(model, "error", "INFERENCE_FAILED", "errors"))).isEqualTo(1);

        Histogram batchSize = listener.getHistogram(append(model, "batchSize")).orElseThrow();
        assertThat(batchSize.getStatistics().getMax()).isEqualTo(2);
        assertThat(listener.getHistogram(append(model, "inferenceLatencyUs")).orElseThrow().getStatistics().getMax())
                .isEqualTo(1500);
        assertThat(listener.getHistogram(append(model, "serviceLatencyUs")).orElseThrow().getStatistics().getMax())
                .isEqualTo(500);
        assertThat(listener.getHistogram(append(model, "queueLatencyUs")).orElseThrow().getStatistics().getMax())
                .isEqualTo(250);

        assertThat(gauge(listener, "gpu_inference", "queuedRequests")).isEqualTo(7L);
        assertThat(gauge(listener, "gpu_inference", "inFlightBatches")).isEqualTo(2L);
        assertThat(gauge(listener, "gpu_inference", "loadedModels")).isEqualTo(1L);
        metrics.executionThreads(2);
        assertThat(gauge(listener, "gpu_inference", "executionThreads")).isEqualTo(2);
        assertThat(counter(listener, "gpu_inference", "reservedCoreBatches")).isZero();
        metrics.reservedCoreBatch();
        assertThat(counter(listener, "gpu_inference", "reservedCoreBatches")).isEqualTo(1);
        assertThat(gauge(listener, append(model, "queuedSamples"))).isEqualTo(5L);
        assertThat(gauge(listener, append(model, "batchCap"))).isEqualTo(12);
        assertThat((Double) gauge(listener, append(model, "latencyModelAlphaUs"))).isCloseTo(2000.0,
                org.assertj.core.data.Offset.offset(1.0));
        assertThat((Double) gauge(listener, append(model, "latencyModelBetaUs"))).isCloseTo(1000.0,
                org.assertj.core.data.Offset.offset(1.0));
        assertThat(listener.getHistogram(append(model, "latencyPredictionErrorUs")).orElseThrow().getStatistics()
                .getMax()).isEqualTo(400);
        assertThat(gauge(listener, append(model, "loaded"))).isEqualTo(1);

        // a version loaded ahead of its traffic: track registers its metrics, loaded gauge included
        String[] other = {"gpu_inference", "model", "bert", "version", "1"};
        assertThat(listener.getGauge(append(other, "loaded"))).isEmpty();
        metrics.track(new ModelId("bert", "1"));
        assertThat(gauge(listener, append(other, "loaded"))).isEqualTo(0);
        assertThat(counter(listener, append(other, "requestsIn"))).isZero();
    }

    @Test
    void countsRequestsPerTenantAndModelWithABoundOnDistinctTenants() {
        MetricListener listener = new MetricListener();
        InferenceMetrics metrics = new InferenceMetrics(listener.getMetricGroup(), () -> 0, () -> 0, () -> 0,
                model -> 0);
        metrics.tenantRequestIn(MODEL, "shop");
        metrics.tenantRequestIn(MODEL, "shop");
        metrics.tenantRequestIn(MODEL, "search");
        for (int i = 0; i < InferenceMetrics.MAX_TENANTS_PER_MODEL + 5; i++) {
            metrics.tenantRequestIn(MODEL, "t" + i);
        }
        String[] model = {"gpu_inference", "model", "cnn", "version", "2"};
        assertThat(counter(listener, append(model, "tenant", "shop", "requestsIn"))).isEqualTo(2);
        assertThat(counter(listener, append(model, "tenant", "search", "requestsIn"))).isEqualTo(1);
        // 32 names at most: 2 + 30 of the t's, the other 7 under _other
        assertThat(counter(listener, append(model, "tenant", "t29", "requestsIn"))).isEqualTo(1);
        assertThat(listener.getCounter(append(model, "tenant", "t30", "requestsIn"))).isEmpty();
        assertThat(counter(listener, append(model, "tenant", InferenceMetrics.OTHER_TENANTS, "requestsIn")))
                .isEqualTo(7);
    }

    private static long counter(MetricListener l, String... path) {
        return l.getCounter(path).map(Counter::getCount).orElseThrow(() -> new AssertionError(String.join(".", path)));
    }

    private static Object gauge(MetricListener l, String... path) {
        return l.<Object>getGauge(path).map(Gauge::getValue).orElseThrow(() -> new AssertionError(String.join(".", path)));
    }

    private static String[] append(String[] base, String... more) {
        String[] out = java.util.Arrays.copyOf(base, base.length + more.length);
        System.arraycopy(more, 0, out, base.length, more.length);
        return out;
    }
}
