package io.flinkgpu.coordinator.rollout;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Deterministic metrics of one model served in several versions on one subtask (sim:0): each
 * version's cumulative answers, error answers and p99 batch latency are set by the test, the clock
 * moves when the test says.
 */
public final class TwoVersions implements MetricSource {
    private final String model;
    private long nowMillis = 1_000_000;
    /** version -> {responses, errors, p99 us, batches} */
    private final Map<String, double[]> versions = new TreeMap<>();
    /** version -> its p99 service time (us); a version not in it reports none (NaN). */
    private final Map<String, Double> serviceP99 = new TreeMap<>();
    /** version -> {latency fit alpha us, beta us, mean batch size}; a version not in it reports {500, 100, 4}. */
    private final Map<String, double[]> fits = new TreeMap<>();
    /** version -> its loaded gauge; a version not in it reports none (NaN). */
    private final Map<String, Double> loaded = new TreeMap<>();

    public TwoVersions(String model) {
        this.model = model;
    }

    /** Adds {@code answers} answers of {@code version}, {@code errors} of them errors, at this p99. */
    public TwoVersions answer(String version, double answers, double errors, double p99Us) {
        double[] v = versions.computeIfAbsent(version, k -> new double[4]);
        v[0] += answers;
        v[1] += errors;
        v[2] = p99Us;
        v[3] += answers / fit(version)[2];
        return this;
    }

    /** The p99 service time {@code version} reports from now on (its batches' run less their wait for the device). */
    public TwoVersions serviceP99(String version, double p99Us) {
        serviceP99.put(version, p99Us);
        return this;
    }

    /**
     * The latency fit ({@code alpha + beta * b}, us) and mean batch size {@code version} reports from
     * now on; NaN for a version that reports no fit.
     */
    public TwoVersions batches(String version, double alphaUs, double betaUs, double meanBatchSize) {
        fits.put(version, new double[] {alphaUs, betaUs, meanBatchSize});
        return this;
    }

    private double[] fit(String version) {
        return fits.getOrDefault(version, new double[] {500, 100, 4});
    }

    /** The subtask's {@code loaded} gauge of {@code version} from now on: 1 or 0. */
    public TwoVersions loaded(String version, boolean isLoaded) {
        loaded.put(version, isLoaded ? 1.0 : 0.0);
        return this;
    }

    /** The job restarted: every counter begins again at 0. */
    public void restartJob() {
        versions.values().forEach(v -> {
            v[0] = 0;
            v[1] = 0;
            v[3] = 0;
        });
    }

    public void advance(long millis) {
        nowMillis += millis;
    }

    public long now() {
        return nowMillis;
    }

    public Clock clock() {
        return new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return Instant.ofEpochMilli(nowMillis);
            }
        };
    }

    @Override
    public MetricSnapshot collect() {
        List<ModelSample> models = new ArrayList<>();
        versions.forEach((version, v) -> {
            double[] fit = fit(version);
            models.add(ModelSample.builder(model, version)
                .counts(v[0], v[0], v[3]).queuedSamples(0).batchSizeMean(fit[2]).inferenceLatencyUsMean(v[2] / 2)
                .queueLatencyUsP99(1000).latencyModel(fit[0], fit[1]).loaded(loaded.getOrDefault(version, Double.NaN))
                .errors(v[1]).inferenceLatencyUsP99(v[2]).serviceLatencyUsP99(serviceP99.getOrDefault(version, Double.NaN))
                .build());
        });
        return new MetricSnapshot(nowMillis, "job", "vertex", 1,
                List.of(new SubtaskSample(0, "sim:0", 0, 8.0 * (1L << 30), 0.3, 300, 0, 0, models)));
    }
}
