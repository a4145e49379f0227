package io.flinkgpu.coordinator.evaluate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.ModelInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class DemandEvaluatorTest {
    private final DemandEvaluator evaluator = new DemandEvaluator(256L << 20, 100);

    @Test
    void derivesRateAndDeviceTimeFromCountersAndTheLatencyModel() throws Exception {
        // 300 + 100 requests/s; t(b) = 1000 + 200 b us at the measured batch size 4: 450 us per request
        FakeCluster cluster = new FakeCluster(2, 2).serve("m", 1000, 200, 300, 100);
        MetricSnapshot a = cluster.collect();
        cluster.advance(10_000);
        Demand d = evaluator.evaluate(a, cluster.collect(), Map.of("m", new ModelInfo("m", "1", 64L << 20, 100, true)),
                Map.of());
        ModelDemand m = d.models().get("m");
        assertThat(m.ratePerSecond()).isCloseTo(400, within(1e-6));
        assertThat(m.batchSize()).isEqualTo(4);
        assertThat(m.deviceSecondsPerSecond()).isCloseTo(400 * 450e-6, within(1e-9));
        assertThat(m.memoryBytes()).isEqualTo(64L << 20);
        assertThat(m.servedOn()).containsExactly("sim:0", "sim:1");
        assertThat(m.reason()).contains("rate 400.0/s measured over 10.0 s").contains("= 0.180 device-s/s");
        assertThat(d.devices()).containsOnlyKeys("sim:0", "sim:1");
        assertThat(d.devices().get("sim:0").subtasks()).containsExactly(0);
        assertThat(d.devices().get("sim:0").memoryTotalBytes()).isEqualTo(8 * FakeCluster.GIB);
        assertThat(d.devices().get("sim:0").busyFraction()).isEqualTo(0.5);
    }

    @Test
    void eachDeviceCarriesTheRequestRateOfItsSubtasksAndTheirMeanBusyTime() throws Exception {
        // 4 subtasks on 2 devices (i mod 2): sim:0 runs 0 and 2 (300 + 50 requests/s), sim:1 runs 1 and 3
        FakeCluster cluster = new FakeCluster(4, 2).serve("m", 1000, 200, 300, 100, 50, 25).serve("n", 1000, 200,
                10, 0, 0, 0);
        MetricSnapshot a = cluster.collect();
        Demand first = evaluator.evaluate(null, a, Map.of(), Map.of());
        assertThat(first.devices().get("sim:0").inputRatePerSecond()).as("no earlier collection: not measured")
                .isNaN();
        cluster.advance(10_000);
        Demand d = evaluator.evaluate(a, cluster.collect(), Map.of(), Map.of());
        DeviceLoad sim0 = d.devices().get("sim:0");
        assertThat(sim0.inputRatePerSecond()).isCloseTo(360, within(1e-6));
        assertThat(sim0.modelRates()).containsOnlyKeys("m", "n");
        assertThat(sim0.modelRates().get("m")).isCloseTo(350, within(1e-6));
        assertThat(d.devices().get("sim:1").inputRatePerSecond()).isCloseTo(125, within(1e-6));
        assertThat(sim0.meanBusyFraction()).isEqualTo(0.5);
        assertThat(sim0.forecastRatePerSecond()).as("the evaluator measures; the forecast step forecasts").isNaN();
    }

    @Test
    void tenantRatesComeFromThePerTenantCountersOverAllSubtasks() throws Exception {
        FakeCluster cluster = new FakeCluster(2, 2).serve("m", 1000, 200, 300, 100)
                .tenants("m", Map.of("shop", 0.75, "search", 0.25));
        MetricSnapshot a = cluster.collect();
        cluster.advance(10_000);
        ModelDemand m = evaluator.evaluate(a, cluster.collect(), Map.of(), Map.of()).models().get("m");
        assertThat(m.tenantRates().get("shop")).isCloseTo(300, within(1e-6));
        assertThat(m.tenantRates().get("search")).isCloseTo(100, within(1e-6));
    }

    @Test
    void capsTheBatchAtWhatHalfTheSloAllows() throws Exception {
        // SLO 10 ms: 5 ms for a batch; t(b) = 4000 + 500 b fits b = 2 only, not the measured 4
        FakeCluster cluster = new FakeCluster(1, 1).serve("m", 4000, 500, 100);
        MetricSnapshot a = cluster.collect();
        cluster.advance(1_000);
        Demand d = evaluator.evaluate(a, cluster.collect(), Map.of("m", new ModelInfo("m", "1", 0, 10, true)), Map.of());
        assertThat(d.models().get("m").batchSize()).isEqualTo(2);
        assertThat(d.models().get("m").deviceSecondsPerSecond()).isCloseTo(100 * (4000 / 2.0 + 500) / 1e6, within(1e-9));
        assertThat(d.models().get("m").memoryBytes()).isEqualTo(256L << 20);
    }

    @Test
    void withoutAPreviousSnapshotUsesTheHistoryAndIgnoresCounterResets() throws Exception {
        FakeCluster cluster = new FakeCluster(1, 1).serve("m", 1000, 100, 50);
        cluster.advance(60_000);
        MetricSnapshot first = cluster.collect();
        Demand d = evaluator.evaluate(null, first, Map.of(), Map.of("m", List.of(new LatencySample(1, 1000, 100, 77, 4))));
        assertThat(d.models().get("m").ratePerSecond()).isEqualTo(77);
        assertThat(d.models().get("m").reason()).contains("from history");
        // a restarted job: counters start again from zero
        FakeCluster restarted = new FakeCluster(1, 1).serve("m", 1000, 100, 50);
        restarted.advance(1_000);
        Demand after = evaluator.evaluate(first, restarted.collect(), Map.of(), Map.of());
        assertThat(after.models().get("m").ratePerSecond()).isZero();
    }

    @Test
    void aModelASubtaskReportsForTheFirstTimeHasNoRateYetButIsServedThere() throws Exception {
        // the job ran a minute before its model's metrics showed in the collection: the first snapshot
        // has the subtask but not the model, the next its whole counter (3000 requests), 1 s later
        FakeCluster cluster = new FakeCluster(1, 1);
        MetricSnapshot empty = cluster.collect();
        cluster.serve("m", 1000, 100, 50);
        cluster.advance(60_000);
        MetricSnapshot first = cluster.collect();
        MetricSnapshot shifted = new MetricSnapshot(empty.atMillis() + 59_000, empty.jobId(), empty.vertexId(),
                empty.parallelism(),
                empty.subtasks());
        Demand d = evaluator.evaluate(shifted, first, Map.of(), Map.of());
        assertThat(d.models().get("m").ratePerSecond()).as("not 3000 requests over 1 s").isZero();
        assertThat(d.models().get("m").servedOn()).containsExactly("sim:0");
        cluster.advance(10_000);
        Demand next = evaluator.evaluate(first, cluster.collect(), Map.of(), Map.of());
        assertThat(next.models().get("m").ratePerSecond()).isCloseTo(50, within(1e-6));
    }

    @Test
    void undeployedModelsHaveNoDemandAndDeployedOnesWithoutTrafficDo() throws Exception {
        FakeCluster cluster = new FakeCluster(1, 1).serve("old", 1000, 100, 10);
        Demand d = evaluator.evaluate(null, cluster.collect(), Map.of(
                "old", new ModelInfo("old", "1", 0, 0, false),
                "new", new ModelInfo("new", "2", 1 << 20, 0, true)), Map.of());
        assertThat(d.models()).containsOnlyKeys("new");
        assertThat(d.models().get("new").deviceSecondsPerSecond()).isZero();
        assertThat(d.models().get("new").version()).isEqualTo("2");
    }

    // A BERT-large-like model: t(b) = 1600 + 1270 b us, SLO 50 ms (25 ms for a batch: b <= 18), batch cap 16.
    private static final double ALPHA = 1600;
    private static final double BETA = 1270;
    private static final Map<String, ModelInfo> LATENCY_BOUND = Map.of("m", new ModelInfo("m", "1", 0, 50, true));

    /**
     * Two collections 10 s apart of {@code model} at {@code totalRate} requests/s spread evenly over
     * {@code replicas} subtasks, each cutting batches of {@code meanBatch} on average and reporting the
     * fit {@code alpha + beta b} (the first {@code unfitted} of them: no intercept, their whole time per
     * request as the slope, as a subtask that cut one batch size only reports) and the batch cap.
     */
    private static MetricSnapshot[] spread(double totalRate, int replicas, double meanBatch, int unfitted, double cap) {
        MetricSnapshot[] out = new MetricSnapshot[2];
        for (int k = 0; k < 2; k++) {
            List<SubtaskSample> subtasks = new ArrayList<>();
            for (int i = 0; i < replicas; i++) {
                double requests = k * 10 * totalRate / replicas;
                boolean fit = i >= unfitted;
                subtasks.add(new SubtaskSample(i, "sim:" + i, 0, 8.0 * FakeCluster.GIB, 0.8, 800, 0, 0,
                        List.of(ModelSample.builder("m", "1")
                                .counts(requests, requests, requests / meanBatch).queuedSamples(0)
                                .batchSizeMean(meanBatch).inferenceLatencyUsMean(ALPHA + BETA * meanBatch)
                                .latencyModel(fit ? ALPHA : 0, fit ? BETA : ALPHA + BETA).loaded(1).errors(0)
                                .batchCap(cap).build())));
            }
            out[k] = new MetricSnapshot(1_000_000 + k * 10_000L, "job", "vertex", replicas, subtasks);
        }
        return out;
    }

    private ModelDemand price(MetricSnapshot[] s, Map<String, List<LatencySample>> history) {
        return evaluator.evaluate(s[0], s[1], LATENCY_BOUND, history).models().get("m");
    }

    @Test
    void thePriceOfADemandDoesNotRiseWhenItIsSpreadOverMoreReplicas() {
        // 400 requests/s: one instance fills and runs a batch of 6 in half the SLO (6 / 400 s + t(6) <= 25 ms), so
        // the price is at b = 6 whether 2 replicas cut batches of 4 or 8 replicas cut batches of 1.5
        ModelDemand two = price(spread(400, 2, 4, 0, 16), Map.of());
        ModelDemand eight = price(spread(400, 8, 1.5, 0, 16), Map.of());
        double atSix = 400 * (ALPHA / 6 + BETA) / 1e6;
        assertThat(two.batchSize()).isEqualTo(6);
        assertThat(eight.batchSize()).isEqualTo(6);
        assertThat(two.deviceSecondsPerSecond()).isCloseTo(atSix, within(1e-9));
        assertThat(eight.deviceSecondsPerSecond()).isCloseTo(atSix, within(1e-9));
        assertThat(eight.reason()).contains("filled at the total rate, measured 1.5, cap 16");
        // the replicas that cut one batch size only (no intercept in their fit) do not set the price either
        ModelDemand halfUnfitted = price(spread(400, 8, 1.5, 4, 16), Map.of());
        assertThat(halfUnfitted.alphaMicros()).isCloseTo(ALPHA, within(1e-9));
        assertThat(halfUnfitted.betaMicros()).isCloseTo(BETA, within(1e-9));
        assertThat(halfUnfitted.deviceSecondsPerSecond()).isCloseTo(atSix, within(1e-9));
        // where none has an intercept, the model's last fit with one in the history stands in
        ModelDemand noneFitted = price(spread(400, 8, 1.5, 8, 16),
                Map.of("m", List.of(new LatencySample(1, ALPHA, BETA, 400, 6), new LatencySample(2, 0, 2870, 400, 1))));
        assertThat(noneFitted.alphaMicros()).isCloseTo(ALPHA, within(1e-9));
        assertThat(noneFitted.deviceSecondsPerSecond()).isCloseTo(atSix, within(1e-9));
        assertThat(noneFitted.reason()).contains("fit from history");
        // without a reported cap the measured mean is the price's batch: the smaller replicas' batches cost more
        ModelDemand twoNoCap = price(spread(400, 2, 4, 0, Double.NaN), Map.of());
        ModelDemand eightNoCap = price(spread(400, 8, 1.5, 0, Double.NaN), Map.of());
        assertThat(twoNoCap.batchSize()).isEqualTo(4);
        assertThat(eightNoCap.deviceSecondsPerSecond()).isGreaterThan(twoNoCap.deviceSecondsPerSecond());
    }

    @Test
    void aBusyModelIsPricedAtMostAtItsCapAndWhatTheSloAllows() {
        // 100,000 requests/s would fill 18 (the most that runs in 25 ms): the cap of 16 bounds it, a cap of 64 does not
        assertThat(price(spread(100_000, 8, 3, 0, 16), Map.of()).batchSize()).isEqualTo(16);
        assertThat(price(spread(100_000, 8, 3, 0, 64), Map.of()).batchSize()).isEqualTo(18);
        // a measured mean above the fill (a backlog drained in large batches) is kept
        assertThat(price(spread(200, 1, 12, 0, 16), Map.of()).batchSize()).isEqualTo(12);
        assertThat(DemandEvaluator.fillBatch(0, ALPHA, BETA, 25_000)).isZero();
    }

    @Test
    void aModelWithLittleTrafficIsStillPricedAtItsSmallBatches() {
        // 20 requests/s: not even two requests arrive in half the SLO, so a batch of one, on one replica or on four
        for (int replicas : new int[] {1, 4}) {
            ModelDemand m = price(spread(20, replicas, 1, 0, 16), Map.of());
            assertThat(m.batchSize()).isEqualTo(1);
            assertThat(m.deviceSecondsPerSecond()).isCloseTo(20 * (ALPHA + BETA) / 1e6, within(1e-9));
        }
        // 120 requests/s fill 2
        assertThat(price(spread(120, 4, 1, 0, 16), Map.of()).batchSize()).isEqualTo(2);
    }
}
