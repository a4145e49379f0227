package io.flinkgpu.coordinator.collect;

/**
 * One model version's metrics on one inference subtask (names as in docs/METRICS.md). Counters
 * are cumulative; histogram values are means over the operator's sliding window; NaN where the
 * metric was not reported. {@code tenantRequestsIn}: the cumulative valid requests per tenant.
 */
public record ModelSample(
        String model,
        String version,
        double requestsIn,
        double responsesOut,
        double batches,
        double queuedSamples,
        double batchSizeMean,
        double inferenceLatencyUsMean,
        double queueLatencyUsP99,
        double latencyModelAlphaUs,
        double latencyModelBetaUs,
        java.util.Map<String, Double> tenantRequestsIn) {
    public ModelSample {
        tenantRequestsIn = tenantRequestsIn == null ? java.util.Map.of() : java.util.Map.copyOf(tenantRequestsIn);
    }

    /** Without per-tenant counts. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, java.util.Map.of());
    }
}
