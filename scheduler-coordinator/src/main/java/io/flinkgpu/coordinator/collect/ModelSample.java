package io.flinkgpu.coordinator.collect;

/**
 * One model version's metrics on one inference subtask (names as in docs/METRICS.md). Counters
 * are cumulative; histogram values are means over the operator's sliding window; NaN where the
 * metric was not reported.
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
        double latencyModelBetaUs) {}
