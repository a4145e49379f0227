package io.flinkgpu.coordinator.evaluate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.ModelInfo;
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
    void undeployedModelsHaveNoDemandAndDeployedOnesWithoutTrafficDo() throws Exception {
        FakeCluster cluster = new FakeCluster(1, 1).serve("old", 1000, 100, 10);
        Demand d = evaluator.evaluate(null, cluster.collect(), Map.of(
                "old", new ModelInfo("old", "1", 0, 0, false),
                "new", new ModelInfo("new", "2", 1 << 20, 0, true)), Map.of());
        assertThat(d.models()).containsOnlyKeys("new");
        assertThat(d.models().get("new").deviceSecondsPerSecond()).isZero();
        assertThat(d.models().get("new").version()).isEqualTo("2");
    }
}
