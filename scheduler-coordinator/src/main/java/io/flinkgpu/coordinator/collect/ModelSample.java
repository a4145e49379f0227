package io.flinkgpu.coordinator.collect;

/**
 * One model version's metrics on one inference subtask (names as in docs/METRICS.md). Counters
 * are cumulative; histogram values are means over the operator's sliding window; NaN where the
 * metric was not reported. {@code tenantRequestsIn}: the cumulative valid requests per tenant.
 * {@code loaded}: the version's {@code loaded} gauge (1 while it is loaded and ready on the
 * subtask's device, 0 otherwise, NaN where not reported).
 * {@code errors}: the cumulative answers with an error code (every {@code error.<code>.errors} of
 * the version summed; 0 where none was counted, NaN where not collected);
 * {@code inferenceLatencyUsP99}: the 99th percentile of the batch execution time over the
 * operator's window;
 * {@code serviceLatencyUsP99}: the same of the batch's own service time, less the time it waited for
 * a device busy with other batches (the rollout engine compares versions by it where both report it,
 * by {@code inferenceLatencyUsP99} otherwise);
 * {@code batchCap}: the version's {@code batchCap} gauge (the most samples the batcher cuts into one
 * batch now: the max batch size, or the AIMD cap; NaN where not reported).
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
        java.util.Map<String, Double> tenantRequestsIn,
        double loaded,
        double errors,
        double inferenceLatencyUsP99,
        double batchCap,
        double serviceLatencyUsP99) {
    public ModelSample {
        tenantRequestsIn = tenantRequestsIn == null ? java.util.Map.of() : java.util.Map.copyOf(tenantRequestsIn);
    }

    /** Without the service latency. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs, java.util.Map<String, Double> tenantRequestsIn,
            double loaded, double errors, double inferenceLatencyUsP99, double batchCap) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, tenantRequestsIn, loaded, errors,
                inferenceLatencyUsP99, batchCap, Double.NaN);
    }

    /** Without the batch cap and the service latency. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs, java.util.Map<String, Double> tenantRequestsIn,
            double loaded, double errors, double inferenceLatencyUsP99) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, tenantRequestsIn, loaded, errors,
                inferenceLatencyUsP99, Double.NaN);
    }

    /** Without error counts, latency percentile and batch cap. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs, java.util.Map<String, Double> tenantRequestsIn,
            double loaded) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, tenantRequestsIn, loaded, Double.NaN,
                Double.NaN);
    }

    /** Without the loaded gauge. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs, java.util.Map<String, Double> tenantRequestsIn,
            double errors, double inferenceLatencyUsP99) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, tenantRequestsIn, Double.NaN, errors,
                inferenceLatencyUsP99);
    }

    /** Without the loaded gauge, error counts and latency percentile. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs, java.util.Map<String, Double> tenantRequestsIn) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, tenantRequestsIn, Double.NaN);
    }

    /** Without per-tenant counts, the loaded gauge, error counts and latency percentile. */
    public ModelSample(String model, String version, double requestsIn, double responsesOut, double batches,
            double queuedSamples, double batchSizeMean, double inferenceLatencyUsMean, double queueLatencyUsP99,
            double latencyModelAlphaUs, double latencyModelBetaUs) {
        this(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean, inferenceLatencyUsMean,
                queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs, java.util.Map.of());
    }

    /** Whether the subtask reports the version loaded and ready. */
    public boolean reportsLoaded() {
        return Double.isFinite(loaded) && loaded >= 0.5;
    }
}
