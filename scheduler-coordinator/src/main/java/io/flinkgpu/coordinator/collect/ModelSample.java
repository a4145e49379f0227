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

    /**
     * A sample of {@code model} version {@code version} with every reading unreported (NaN) and no
     * per-tenant counts, to be set by name: for sources that report a subset of the metrics (the
     * fleet simulator, tests).
     */
    public static Builder builder(String model, String version) {
        return new Builder(model, version);
    }

    /** Sets a {@link ModelSample}'s readings by name; what is not set stays NaN (not reported). */
    public static final class Builder {
        private final String model;
        private final String version;
        private double requestsIn = Double.NaN;
        private double responsesOut = Double.NaN;
        private double batches = Double.NaN;
        private double queuedSamples = Double.NaN;
        private double batchSizeMean = Double.NaN;
        private double inferenceLatencyUsMean = Double.NaN;
        private double queueLatencyUsP99 = Double.NaN;
        private double latencyModelAlphaUs = Double.NaN;
        private double latencyModelBetaUs = Double.NaN;
        private java.util.Map<String, Double> tenantRequestsIn = java.util.Map.of();
        private double loaded = Double.NaN;
        private double errors = Double.NaN;
        private double inferenceLatencyUsP99 = Double.NaN;
        private double batchCap = Double.NaN;
        private double serviceLatencyUsP99 = Double.NaN;

        private Builder(String model, String version) {
            this.model = model;
            this.version = version;
        }

        /** The cumulative counters: valid requests in, answers out, batches run. */
        public Builder counts(double requestsIn, double responsesOut, double batches) {
            this.requestsIn = requestsIn;
            this.responsesOut = responsesOut;
            this.batches = batches;
            return this;
        }

        public Builder queuedSamples(double v) {
            queuedSamples = v;
            return this;
        }

        public Builder batchSizeMean(double v) {
            batchSizeMean = v;
            return this;
        }

        public Builder inferenceLatencyUsMean(double v) {
            inferenceLatencyUsMean = v;
            return this;
        }

        public Builder queueLatencyUsP99(double v) {
            queueLatencyUsP99 = v;
            return this;
        }

        /** The batcher's latency model {@code t(b) = alpha + beta * b}, in microseconds. */
        public Builder latencyModel(double alphaUs, double betaUs) {
            latencyModelAlphaUs = alphaUs;
            latencyModelBetaUs = betaUs;
            return this;
        }

        public Builder tenantRequestsIn(java.util.Map<String, Double> v) {
            tenantRequestsIn = v;
            return this;
        }

        public Builder loaded(double v) {
            loaded = v;
            return this;
        }

        public Builder errors(double v) {
            errors = v;
            return this;
        }

        public Builder inferenceLatencyUsP99(double v) {
            inferenceLatencyUsP99 = v;
            return this;
        }

        public Builder batchCap(double v) {
            batchCap = v;
            return this;
        }

        public Builder serviceLatencyUsP99(double v) {
            serviceLatencyUsP99 = v;
            return this;
        }

        public ModelSample build() {
            return new ModelSample(model, version, requestsIn, responsesOut, batches, queuedSamples, batchSizeMean,
                    inferenceLatencyUsMean, queueLatencyUsP99, latencyModelAlphaUs, latencyModelBetaUs,
                    tenantRequestsIn, loaded, errors, inferenceLatencyUsP99, batchCap, serviceLatencyUsP99);
        }
    }

    /** Whether the subtask reports the version loaded and ready. */
    public boolean reportsLoaded() {
        return Double.isFinite(loaded) && loaded >= 0.5;
    }
}
