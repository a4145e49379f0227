package io.flinkgpu.coordinator.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.MoveRecord;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Both stores behave the same; the RocksDB one also survives being closed and reopened. */
class StateStoreTest {
    @TempDir
    static Path tmp;

    static int dbs;

    static Stream<Arguments> stores() {
        return Stream.of(
                Arguments.of("in-memory", (Supplier<StateStore>) InMemoryStateStore::new),
                Arguments.of("rocksdb", (Supplier<StateStore>) () -> RocksDbStateStore.open(tmp.resolve("db" + dbs++))));
    }

    static ControlMessage plan(long epoch) {
        return ControlMessage.of(epoch, 1000 * epoch, 2,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 1), new RouteTarget(1, 0.5)), "why")), List.of(),
                "plan " + epoch);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void keepsEveryKindOfState(String name, Supplier<StateStore> factory) {
        try (StateStore s = factory.get()) {
            assertThat(s.lastEpoch()).isZero();
            assertThat(s.lastPlan()).isEmpty();
            assertThat(s.placement()).isEqualTo(Placement.EMPTY);
            assertThat(s.paused()).isFalse();

            s.putModel(new ModelInfo("m", "1", 1 << 20, 100, true));
            s.putModel(new ModelInfo("n", null, 2 << 20, 0, true));
            s.removeModel("n");
            assertThat(s.models()).containsOnlyKeys("m");
            assertThat(s.models().get("m").memoryBytes()).isEqualTo(1 << 20);

            s.appendLatency("m", new LatencySample(1, 500, 20, 100, 4));
            s.appendLatency("m", new LatencySample(2, 510, 21, 120, 5, 180));
            assertThat(s.latencyHistory("m")).extracting(LatencySample::atMillis).containsExactly(1L, 2L);
            assertThat(s.latencyHistory("m")).extracting(LatencySample::peakRatePerSecond)
                    .as("the planned (forecast) rate survives, the measured one stands in where none was planned")
                    .containsExactly(100.0, 180.0);
            assertThat(s.latencyHistory("other")).isEmpty();

            Placement p = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
            s.putPlacement(p);
            assertThat(s.placement()).isEqualTo(p);

            s.appendMoves(List.of(new MoveRecord("m", "sim:0", "sim:1", 5, false)));
            assertThat(s.moves()).containsExactly(new MoveRecord("m", "sim:0", "sim:1", 5, false));

            s.recordPlan(plan(1));
            s.recordPlan(plan(2));
            assertThat(s.lastEpoch()).isEqualTo(2);
            assertThat(s.lastPlan()).contains(plan(2));

            s.appendDecisions(List.of(new Decision(1, "LOAD", "m", "sim:0", "first"),
                    new Decision(2, "MOVE", "m", "sim:1", "second")));
            assertThat(s.recentDecisions(1)).extracting(Decision::reason).containsExactly("second");
            assertThat(s.recentDecisions(10)).hasSize(2);

            s.putTenantWeight("shop", 3);
            s.putTenantWeight("batch", 0.5);
            assertThat(s.tenantWeights()).containsEntry("shop", 3.0).containsEntry("batch", 0.5);

            s.setPaused(true);
            assertThat(s.paused()).isTrue();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void refusesAPlanThatIsNotNewerThanTheLastOne(String name, Supplier<StateStore> factory) {
        try (StateStore s = factory.get()) {
            s.recordPlan(plan(5));
            assertThatThrownBy(() -> s.recordPlan(plan(5))).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not newer");
            assertThatThrownBy(() -> s.recordPlan(plan(3))).isInstanceOf(IllegalStateException.class);
            assertThat(s.lastEpoch()).isEqualTo(5);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void logsAreBoundedAndKeepTheNewest(String name, Supplier<StateStore> factory) {
        try (StateStore s = factory.get()) {
            for (int i = 0; i < KeyValueStateStore.MAX_LATENCY_SAMPLES + 10; i++) {
                s.appendLatency("m", new LatencySample(i, 1, 1, 1, 1));
            }
            List<LatencySample> h = s.latencyHistory("m");
            assertThat(h).hasSize(KeyValueStateStore.MAX_LATENCY_SAMPLES);
            assertThat(h.get(h.size() - 1).atMillis()).isEqualTo(KeyValueStateStore.MAX_LATENCY_SAMPLES + 9);
            assertThat(h.get(0).atMillis()).isEqualTo(10);
        }
    }

    @Test
    void rocksDbStoreResumesAfterCloseAndReopenAndNeverGoesBackAnEpoch(@TempDir Path dir) {
        Placement p = Placement.of(Map.of("m", Set.of("sim:1")));
        try (StateStore s = RocksDbStateStore.open(dir)) {
            s.recordPlan(plan(41));
            s.recordPlan(plan(42));
            s.putPlacement(p);
            s.putTenantWeight("shop", 2);
            s.setPaused(true);
            List<Decision> ds = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                ds.add(new Decision(i, "LOAD", "m", "sim:1", "reason " + i));
            }
            s.appendDecisions(ds);
        }
        try (StateStore s = RocksDbStateStore.open(dir)) {
            assertThat(s.lastEpoch()).isEqualTo(42);
            assertThat(s.lastPlan()).contains(plan(42));
            assertThat(s.placement()).isEqualTo(p);
            assertThat(s.tenantWeights()).containsEntry("shop", 2.0);
            assertThat(s.paused()).isTrue();
            assertThat(s.recentDecisions(10)).extracting(Decision::reason)
                    .containsExactly("reason 0", "reason 1", "reason 2");
            assertThatThrownBy(() -> s.recordPlan(plan(42))).isInstanceOf(IllegalStateException.class);
            s.appendDecisions(List.of(new Decision(9, "MOVE", "m", "sim:0", "after restart")));
            assertThat(s.recentDecisions(1)).extracting(Decision::reason).containsExactly("after restart");
            s.recordPlan(plan(43));
        }
        try (StateStore s = RocksDbStateStore.open(dir)) {
            assertThat(s.lastEpoch()).isEqualTo(43);
        }
    }

    static io.flinkgpu.coordinator.rollout.Rollout rollout(String model, int step) {
        return new io.flinkgpu.coordinator.rollout.Rollout(model, "1", "2",
                io.flinkgpu.coordinator.rollout.Rollout.Mode.CANARY, List.of(0.05, 0.25, 0.5, 1.0), 0, null,
                io.flinkgpu.coordinator.rollout.Rollout.State.RUNNING,
                io.flinkgpu.coordinator.rollout.Rollout.Phase.CANARY, step, 100, 200,
                new io.flinkgpu.coordinator.rollout.Rollout.Counts(950, 3, 50, 1, 240, 13), 300, "promoted", List.of(0, 2));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void keepsEachModelsLatestRollout(String name, Supplier<StateStore> factory) {
        try (StateStore s = factory.get()) {
            assertThat(s.rollouts()).isEmpty();
            s.putRollout(rollout("b", 0));
            s.putRollout(rollout("a", 1));
            s.putRollout(rollout("a", 2));
            assertThat(s.rollouts()).containsOnlyKeys("a", "b");
            assertThat(s.rollouts().keySet()).containsExactly("a", "b");
            assertThat(s.rollouts().get("a")).isEqualTo(rollout("a", 2));
            s.removeRollout("b");
            assertThat(s.rollouts()).containsOnlyKeys("a");
        }
    }

    @Test
    void rocksDbStoreKeepsARolloutAtItsStepAcrossARestart(@TempDir Path dir) {
        io.flinkgpu.coordinator.rollout.Rollout shadow = new io.flinkgpu.coordinator.rollout.Rollout("s", "3", "4",
                io.flinkgpu.coordinator.rollout.Rollout.Mode.SHADOW, List.of(0.1, 1.0), 0.25,
                io.flinkgpu.coordinator.rollout.Rollout.AfterShadow.FINISH,
                io.flinkgpu.coordinator.rollout.Rollout.State.PAUSED,
                io.flinkgpu.coordinator.rollout.Rollout.Phase.SHADOW, 0, 1, 2, null, 3, null, null);
        try (StateStore s = RocksDbStateStore.open(dir)) {
            s.putRollout(rollout("m", 2));
            s.putRollout(shadow);
        }
        try (StateStore s = RocksDbStateStore.open(dir)) {
            assertThat(s.rollouts().get("m")).isEqualTo(rollout("m", 2));
            assertThat(s.rollouts().get("m").split().versions()).extracting(v -> v.weight()).containsExactly(0.5, 0.5);
            assertThat(s.rollouts().get("s")).isEqualTo(shadow);
            assertThat(s.rollouts().get("s").split().shadow()).isEqualTo("4");
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("stores")
    void replacesTheIdleClocksAsAWhole(String name, Supplier<StateStore> factory) {
        try (StateStore s = factory.get()) {
            assertThat(s.idleClocks()).isEmpty();
            IdleClock a = new IdleClock("job", Map.of(0, 12.0, 1, 0.0), 5_000, 1_000, -1);
            IdleClock b = new IdleClock("job", Map.of(0, 3.0), 5_000, 2_000, 4_000);
            s.putIdleClocks(Map.of("a", a, "b", b));
            assertThat(s.idleClocks()).containsOnlyKeys("a", "b");
            assertThat(s.idleClocks().get("a")).isEqualTo(a);
            assertThat(s.idleClocks().get("b").atZero()).isTrue();
            s.putIdleClocks(Map.of("b", b));
            assertThat(s.idleClocks()).containsOnlyKeys("b");
            s.putIdleClocks(Map.of());
            assertThat(s.idleClocks()).isEmpty();
        }
    }

    @Test
    void rocksDbStoreKeepsTheIdleClocksAcrossARestart(@TempDir Path dir) {
        IdleClock clock = new IdleClock("job-7", Map.of(0, 40.0, 1, 2.0), 90_000, 30_000, -1);
        try (StateStore s = RocksDbStateStore.open(dir)) {
            s.putIdleClocks(Map.of("m", clock));
        }
        try (StateStore s = RocksDbStateStore.open(dir)) {
            assertThat(s.idleClocks()).containsExactly(Map.entry("m", clock));
            assertThat(s.idleClocks().get("m").requestsBySubtask()).containsEntry(1, 2.0);
        }
    }
}
