package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.evaluate.DeviceLoad;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.ParallelismPlanner;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ParallelismStepTest {
    static final long NOW = 10_000_000;
    static final MetricSnapshot SNAPSHOT = new MetricSnapshot(NOW, "job", "vertex", 2, List.of());

    /** Two devices, one subtask each, whose subtasks are saturated while the devices have room. */
    static Demand operatorBound() {
        return new Demand(NOW, 2, Map.of(), Map.of(
                "sim:0", new DeviceLoad("sim:0", List.of(0), 8L << 30, 0, 0.3, 0.95, 0),
                "sim:1", new DeviceLoad("sim:1", List.of(1), 8L << 30, 0, 0.3, 0.9, 0)));
    }

    static ParallelismPlanner planner() {
        return new ParallelismPlanner(4, 0, 0.8, 0.7, 0.15, Duration.ofMinutes(5));
    }

    @Test
    void aDryRunNeverRescalesAndLogsItsChoiceOnce() {
        List<Integer> rescales = new ArrayList<>();
        ParallelismStep step = new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p));
        List<Decision> decisions = new ArrayList<>();
        assertThat(step.rescale(SNAPSHOT, operatorBound(), NOW, true, decisions)).isFalse();
        assertThat(step.rescale(SNAPSHOT, operatorBound(), NOW + 10_000, true, decisions)).isFalse();
        assertThat(rescales).isEmpty();
        assertThat(decisions).singleElement().satisfies(d -> {
            assertThat(d.action()).isEqualTo("PARALLELISM");
            assertThat(d.reason()).contains("parallelism 2 -> 4").doesNotContain("not applied");
        });
    }

    @Test
    void aRescaleIsAppliedToTheCollectedJobAndTheNextWaitsForTheInterval() {
        List<String> rescales = new ArrayList<>();
        ParallelismStep step = new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(job + "/" + vertex
                + "=" + p));
        List<Decision> decisions = new ArrayList<>();
        assertThat(step.rescale(SNAPSHOT, operatorBound(), NOW, false, decisions)).isTrue();
        assertThat(rescales).containsExactly("job/vertex=4");
        assertThat(step.rescale(SNAPSHOT, operatorBound(), NOW + 60_000, false, decisions)).isFalse();
        assertThat(rescales).hasSize(1);
        assertThat(decisions).extracting(Decision::action).containsExactly("PARALLELISM", "HOLD");
        assertThat(decisions.get(1).reason()).contains("coordinator.parallelism.min-interval");
    }

    @Test
    void aRestartedCoordinatorWaitsOutTheIntervalFromItsStoredRescale(@org.junit.jupiter.api.io.TempDir
            java.nio.file.Path dir) {
        List<Integer> rescales = new ArrayList<>();
        List<Decision> decisions = new ArrayList<>();
        try (io.flinkgpu.coordinator.state.StateStore store =
                io.flinkgpu.coordinator.state.RocksDbStateStore.open(dir)) {
            ParallelismStep step = new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p), store);
            assertThat(step.rescale(SNAPSHOT, operatorBound(), NOW, false, decisions)).isTrue();
            assertThat(store.rescales()).singleElement().satisfies(r -> {
                assertThat(r.atMillis()).isEqualTo(NOW);
                assertThat(r.from()).isEqualTo(2);
                assertThat(r.to()).isEqualTo(4);
            });
        }
        try (io.flinkgpu.coordinator.state.StateStore store =
                io.flinkgpu.coordinator.state.RocksDbStateStore.open(dir)) {
            // a new step on the reopened state: one minute later is within the 5-minute interval
            ParallelismStep restarted = new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p), store);
            assertThat(restarted.rescale(SNAPSHOT, operatorBound(), NOW + 60_000, false, decisions)).isFalse();
            assertThat(rescales).containsExactly(4);
            // and after the interval it may rescale again
            assertThat(restarted.rescale(SNAPSHOT, operatorBound(), NOW + 6 * 60_000, false, decisions)).isTrue();
            assertThat(store.rescales()).hasSize(2);
        }
    }

    @Test
    void withoutAStoreARestartForgetsTheLastRescale() {
        List<Integer> rescales = new ArrayList<>();
        List<Decision> decisions = new ArrayList<>();
        new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p)).rescale(SNAPSHOT, operatorBound(), NOW,
                false, decisions);
        assertThat(new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p)).rescale(SNAPSHOT,
                operatorBound(), NOW + 60_000, false, decisions)).isTrue();
        assertThat(rescales).containsExactly(4, 4);
    }

    @Test
    void theMeasuredAndForecastRatesOfTheDevicesSizeTheStep() {
        // sim:0 busy 0.90 at 100/s on its one slot (111.1/s per slot), 200/s forecast: ceil(200 / 82.2) = 3 slots
        Demand demand = new Demand(NOW, 2, Map.of(), Map.of(
                "sim:0", new DeviceLoad("sim:0", List.of(0), 8L << 30, 0, 0.3, 0.9, 0, 0.9, 100, Map.of("m", 100.0),
                        200),
                "sim:1", new DeviceLoad("sim:1", List.of(1), 8L << 30, 0, 0.3, 0.2, 0, 0.2, 20, Map.of("m", 20.0),
                        Double.NaN)));
        List<Integer> rescales = new ArrayList<>();
        List<Decision> decisions = new ArrayList<>();
        assertThat(new ParallelismStep(planner(), (job, vertex, p) -> rescales.add(p)).rescale(SNAPSHOT, demand, NOW,
                false, decisions)).isTrue();
        assertThat(rescales).as("3 slots on each of 2 devices, not one more").containsExactly(6);
        assertThat(decisions).singleElement().satisfies(d -> assertThat(d.reason()).contains("parallelism 2 -> 6",
                "demand 200.0/s (forecast)", "= 3 slot(s)"));
    }
}
