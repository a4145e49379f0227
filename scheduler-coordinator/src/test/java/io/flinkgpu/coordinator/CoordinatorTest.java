package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.realize.PlanRealizer;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CoordinatorTest {
    /** Keeps what was published; fails on demand. */
    static final class RecordingRealizer implements PlanRealizer {
        final List<ControlMessage> published = new ArrayList<>();
        boolean failing;

        @Override
        public void publish(ControlMessage plan) {
            if (failing) {
                throw new IllegalStateException("broker down (test)");
            }
            published.add(plan);
        }
    }

    static Configuration config() {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.MIN_MOVE_INTERVAL, java.time.Duration.ofSeconds(30));
        return c;
    }

    /** Two subtasks on two devices; both models hash onto subtask 0 (sim:0), which is overloaded. */
    static FakeCluster skewed() {
        // hot: 1500 req/s x (2000/4 + 250) us = 1.125 device-s/s; warm: 800 x 375 us = 0.3
        return new FakeCluster(2, 2).serve("hot", 2000, 250, 1500, 0).serve("warm", 1000, 125, 800, 0);
    }

    @Test
    void firstCycleMeasuresAndSecondPublishesAPlanThatSpreadsTheOverloadedDevice() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Configuration config = config();
        config.set(CoordinatorOptions.WARM_BEFORE_ROUTE, false); // routes change with the plan
        Coordinator c = new Coordinator(config, cluster, realizer, new InMemoryStateStore(), metrics, cluster.clock());
        c.runOnce(false);
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);
        assertThat(r.published()).isTrue();
        ControlMessage plan = r.plan();
        assertThat(plan.epoch()).isEqualTo(realizer.published.get(realizer.published.size() - 1).epoch());
        assertThat(plan.parallelism()).isEqualTo(2);
        // the hot model needs 2 instances at target 0.7: both subtasks serve it
        assertThat(plan.route("hot").orElseThrow().targets()).extracting(RouteTarget::subtask)
                .containsExactlyInAnyOrder(0, 1);
        assertThat(plan.commands()).anySatisfy(cmd -> {
            assertThat(cmd.action()).isEqualTo(SubtaskCommand.Action.LOAD);
            assertThat(cmd.subtask()).isEqualTo(1);
        });
        assertThat(plan.reason()).isNotBlank();
        assertThat(c.store().recentDecisions(100)).extracting(Decision::action).contains("PUBLISH", "REPLICATE");
        assertThat(metrics.plansPublished()).isEqualTo(realizer.published.size());
        assertThat(metrics.prometheusText()).contains("coordinator_plans_published_total " + realizer.published.size())
                .contains("coordinator_decision_latency_seconds_count 2");
        // the job side accepts every plan in order
        ControlPlanState job = new ControlPlanState();
        realizer.published.forEach(p -> assertThat(job.offer(p)).isEqualTo(ControlPlanState.Outcome.APPLIED));
    }

    @Test
    void theReplicaPlanLoadsFirstAndRoutesTheNewSubtaskOnceItReportsTheModelLoaded() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Coordinator c = new Coordinator(config(), cluster, realizer, new InMemoryStateStore(), metrics, cluster.clock());
        c.runOnce(false);
        cluster.advance(10_000);
        ControlMessage load = c.runOnce(false).plan();
        // hot needs 2 instances: LOAD on subtask 1 now, the route stays where hot is loaded
        assertThat(load.route("hot").orElseThrow().targets()).extracting(RouteTarget::subtask).containsExactly(0);
        assertThat(load.commands()).anySatisfy(cmd -> {
            assertThat(cmd.action()).isEqualTo(SubtaskCommand.Action.LOAD);
            assertThat(cmd.subtask()).isEqualTo(1);
            assertThat(cmd.model()).isEqualTo("hot");
        });
        assertThat(metrics.routesWarming()).isEqualTo(1);
        assertThat(metrics.prometheusText()).contains("coordinator_routes_warming 1");
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("WARM");
            assertThat(d.model()).isEqualTo("hot");
            assertThat(d.device()).isEqualTo("sim:1");
            assertThat(d.reason()).contains("routed once subtask 1 reports it loaded")
                    .contains("coordinator.plan.warm-timeout");
        });

        // not loaded yet: nothing new to publish
        cluster.advance(5_000);
        assertThat(c.runOnce(false).published()).isFalse();

        // the job reports hot loaded on subtask 1: the next cycle routes it there
        cluster.loaded("hot", 1);
        cluster.advance(5_000);
        Coordinator.CycleResult routed = c.runOnce(false);
        assertThat(routed.published()).isTrue();
        assertThat(routed.plan().route("hot").orElseThrow().targets()).extracting(RouteTarget::subtask)
                .containsExactlyInAnyOrder(0, 1);
        assertThat(routed.plan().commands()).isEmpty();
        assertThat(routed.plan().reason()).startsWith("warmed-up instances routed").contains("ROUTE hot@sim:1");
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("ROUTE");
            assertThat(d.reason()).isEqualTo("hot@sim:1 routed: subtask 1 reports it loaded after 10.0 s of warm-up");
        });
        assertThat(metrics.routesWarming()).isZero();
        ControlPlanState job = new ControlPlanState();
        realizer.published.forEach(p -> assertThat(job.offer(p)).isEqualTo(ControlPlanState.Outcome.APPLIED));
    }

    @Test
    void aLoadThatIsNeverReportedIsRoutedAnywayAfterTheWarmTimeout() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        Configuration config = config();
        config.set(CoordinatorOptions.WARM_TIMEOUT, java.time.Duration.ofSeconds(25));
        Coordinator c = new Coordinator(config, cluster, realizer, new InMemoryStateStore(), new CoordinatorMetrics(),
                cluster.clock());
        c.runOnce(false);
        cluster.advance(10_000);
        assertThat(c.runOnce(false).plan().route("hot").orElseThrow().targets()).hasSize(1);
        // subtask 1 never reports hot loaded: held for 10 s, 20 s, then routed at 30 s >= 25 s
        for (int i = 0; i < 2; i++) {
            cluster.advance(10_000);
            assertThat(c.runOnce(false).published()).as("cycle %d", i).isFalse();
        }
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);
        assertThat(r.published()).isTrue();
        assertThat(r.plan().route("hot").orElseThrow().targets()).extracting(RouteTarget::subtask)
                .containsExactlyInAnyOrder(0, 1);
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("ROUTE");
            assertThat(d.reason()).isEqualTo("hot@sim:1 routed anyway: subtask 1 did not report it loaded within "
                    + "coordinator.plan.warm-timeout = 25.0 s (waited 30.0 s)");
        });
    }

    @Test
    void unchangedLoadPublishesNothingNew() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        Coordinator c = new Coordinator(config(), cluster, realizer, new InMemoryStateStore(), new CoordinatorMetrics(),
                cluster.clock());
        for (int i = 0; i < 3; i++) {
            c.runOnce(false);
            cluster.advance(10_000);
        }
        // hot's second instance is loaded on subtask 1 (its LOAD): the plan routes it there
        cluster.loaded("hot", 1);
        assertThat(c.runOnce(false).published()).isTrue();
        cluster.advance(10_000);
        int published = realizer.published.size();
        // the traffic now follows the plan: spread over both subtasks, same totals
        cluster.serve("hot", 2000, 250, 750, 750).serve("warm", 1000, 125, 800, 0);
        c.runOnce(false);
        for (int i = 0; i < 5; i++) {
            cluster.advance(10_000);
            assertThat(c.runOnce(false).published()).as("cycle %d", i).isFalse();
        }
        assertThat(realizer.published).hasSize(published);
    }

    @Test
    void noFirstPlanIsPublishedBeforeThereIsAModelToRoute() {
        FakeCluster idle = new FakeCluster(2, 2);
        RecordingRealizer realizer = new RecordingRealizer();
        Coordinator c = new Coordinator(config(), idle, realizer, new InMemoryStateStore(), new CoordinatorMetrics(),
                idle.clock());
        c.runOnce(false);
        idle.advance(10_000);
        assertThat(c.runOnce(false).published()).isFalse();
        assertThat(realizer.published).isEmpty();
        assertThat(c.store().lastEpoch()).isZero();
    }

    @Test
    void pausedCoordinatorCollectsButDoesNotPlan() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        StateStore store = new InMemoryStateStore();
        store.setPaused(true);
        Coordinator c = new Coordinator(config(), cluster, realizer, store, new CoordinatorMetrics(), cluster.clock());
        c.runOnce(false);
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);
        assertThat(r.skipped()).isEqualTo("paused");
        assertThat(r.demand().models()).containsKey("hot");
        assertThat(realizer.published).isEmpty();
    }

    @Test
    void unreadableMetricsSkipTheCycleWithTheReason() {
        FakeCluster cluster = skewed();
        cluster.down(true);
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Coordinator c = new Coordinator(config(), cluster, new RecordingRealizer(), new InMemoryStateStore(), metrics,
                cluster.clock());
        assertThat(c.runOnce(false).skipped()).contains("REST unreachable");
        assertThat(metrics.prometheusText()).contains("coordinator_cycle_failures_total 1");
    }

    @Test
    void aPlanThatCouldNotBePublishedIsRepublishedUnderItsOwnEpoch() {
        FakeCluster cluster = skewed();
        RecordingRealizer realizer = new RecordingRealizer();
        Coordinator c = new Coordinator(config(), cluster, realizer, new InMemoryStateStore(), new CoordinatorMetrics(),
                cluster.clock());
        realizer.failing = true;
        c.runOnce(false);
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);
        assertThat(r.published()).isFalse();
        long recorded = c.store().lastEpoch();
        assertThat(recorded).isPositive();
        realizer.failing = false;
        cluster.advance(10_000);
        c.runOnce(false);
        assertThat(realizer.published).extracting(ControlMessage::epoch).contains(recorded);
    }

    @Test
    void restartedCoordinatorResumesFromRocksDbWithTheSameEpochAndNeverGoesBack(@TempDir Path dir) {
        FakeCluster cluster = skewed();
        RecordingRealizer first = new RecordingRealizer();
        long epoch;
        ControlMessage last;
        try (StateStore store = RocksDbStateStore.open(dir)) {
            Coordinator c = new Coordinator(config(), cluster, first, store, new CoordinatorMetrics(), cluster.clock());
            c.runOnce(false);
            cluster.advance(10_000);
            c.runOnce(false);
            epoch = store.lastEpoch();
            last = store.lastPlan().orElseThrow();
        }
        assertThat(epoch).isPositive();
        RecordingRealizer second = new RecordingRealizer();
        try (StateStore store = RocksDbStateStore.open(dir)) {
            Coordinator c = new Coordinator(config(), cluster, second, store, new CoordinatorMetrics(), cluster.clock());
            assertThat(c.resume()).contains(last);
            assertThat(second.published).containsExactly(last);
            // new load: the next plan's epoch continues from the stored one
            cluster.serve("hot", 2000, 250, 1500, 1500);
            for (int i = 0; i < 3; i++) {
                cluster.advance(60_000);
                c.runOnce(false);
            }
            assertThat(second.published).extracting(ControlMessage::epoch).allSatisfy(e -> assertThat(e)
                    .isGreaterThanOrEqualTo(epoch));
            assertThat(store.lastEpoch()).isGreaterThanOrEqualTo(epoch);
        }
        // whatever the job saw first, it never has to go back
        ControlPlanState job = new ControlPlanState();
        first.published.forEach(job::offer);
        second.published.forEach(p -> assertThat(job.offer(p)).isNotEqualTo(ControlPlanState.Outcome.INVALID));
        assertThat(job.currentEpoch()).isEqualTo(second.published.get(second.published.size() - 1).epoch());
    }

    @Test
    void saturatedSubtasksOnADeviceWithRoomGetAnotherSlotPerDeviceAtMostOncePerInterval() {
        FakeCluster cluster = skewed().load(950, 0.3);
        List<Integer> rescales = new ArrayList<>();
        Configuration config = config();
        config.set(CoordinatorOptions.MIN_RESCALE_INTERVAL, java.time.Duration.ofMinutes(5));
        Coordinator c = new Coordinator(config, cluster, new RecordingRealizer(), new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock(), (job, vertex, p) -> rescales.add(p));
        c.runOnce(false);
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);

        assertThat(rescales).containsExactly(4); // 2 devices x 2 slots
        assertThat(r.skipped()).isEqualTo("rescaling");
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("PARALLELISM");
            assertThat(d.reason()).contains("parallelism 2 -> 4").contains("subtasks busy 0.95 >= 0.80");
        });
        // the next cycle only measures (the restarted job's counters start again); the one after holds
        cluster.advance(10_000);
        assertThat(c.runOnce(false).skipped()).startsWith("measuring");
        cluster.advance(10_000);
        c.runOnce(false);
        assertThat(rescales).containsExactly(4);
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("HOLD");
            assertThat(d.reason()).contains("coordinator.parallelism.min-interval");
        });
    }

    @Test
    void withoutARescalerTheParallelismDecisionIsLoggedOnceAndNothingChanges() {
        FakeCluster cluster = skewed().load(950, 0.3);
        Coordinator c = new Coordinator(config(), cluster, new RecordingRealizer(), new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        for (int i = 0; i < 4; i++) {
            c.runOnce(false);
            cluster.advance(10_000);
        }
        assertThat(c.store().recentDecisions(1000)).filteredOn(d -> d.action().equals("PARALLELISM"))
                .singleElement()
                .satisfies(d -> assertThat(d.reason()).endsWith("(not applied: coordinator.parallelism.mode is off)"));
        assertThat(c.store().lastPlan().orElseThrow().parallelism()).isEqualTo(2);
    }

    @Test
    void aFailedRescaleIsAHoldWithItsReasonAndTheCycleGoesOn() {
        FakeCluster cluster = skewed().load(950, 0.3);
        Coordinator c = new Coordinator(config(), cluster, new RecordingRealizer(), new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock(), (job, vertex, p) -> {
                    throw new java.io.IOException("PUT resource-requirements answered 500: not the adaptive scheduler");
                });
        c.runOnce(false);
        cluster.advance(10_000);
        Coordinator.CycleResult r = c.runOnce(false);

        assertThat(r.published()).isTrue();
        assertThat(c.store().recentDecisions(100)).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("HOLD");
            assertThat(d.reason()).contains("the rescale failed: PUT resource-requirements answered 500");
        });
    }

    @Test
    void tenantsWeightTheirModelsAndShareTheCostOfAModelTheyBothUse() {
        // hot is shared: shop sends 3/4 of it, search 1/4; warm is shop's alone
        FakeCluster cluster = skewed().tenants("hot", Map.of("shop", 0.75, "search", 0.25))
                .tenants("warm", Map.of("shop", 1.0));
        InMemoryStateStore store = new InMemoryStateStore();
        store.putTenantWeight("search", 3.0);
        CoordinatorMetrics metrics = new CoordinatorMetrics();
        Coordinator c = new Coordinator(config(), cluster, new RecordingRealizer(), store, metrics, cluster.clock());
        c.runOnce(false);
        cluster.advance(10_000);
        assertThat(c.runOnce(false).published()).isTrue();

        var usage = c.lastTenantUsage();
        assertThat(usage).containsOnlyKeys("shop", "search");
        // device time: hot 1.125, warm 0.3 device-s/s; shop pays 3/4 of hot and all of warm
        assertThat(usage.get("shop").usage().deviceTime()).isCloseTo(0.75 * 1.125 + 0.3, within(1e-3));
        assertThat(usage.get("search").usage().deviceTime()).isCloseTo(0.25 * 1.125, within(1e-3));
        assertThat(usage.get("search").weight()).isEqualTo(3.0);
        assertThat(store.recentDecisions(100)).filteredOn(d -> d.action().equals("TENANT")).hasSize(2)
                .anySatisfy(d -> assertThat(d.reason()).startsWith("shop (weight 1.00)").contains("0.75 of hot (shared)"));
        assertThat(metrics.prometheusText()).contains("coordinator_tenant_dominant_share{tenant=\"search\"}");
    }
    /**
     * Two models that hash onto one device and whose batches cannot wait for each other within
     * their declared SLOs (22 ms and 82 ms batches of 4; SLOs 50 ms and 200 ms): with
     * coordinator.plan.slo-colocation (the default) the first plan moves one of them to the idle
     * device, though neither load calls for a move; off, the plan keeps them together.
     */
    @Test
    void firstPlanSeparatesModelsWhoseBatchesWouldMakeEachOtherMissTheirSlos() {
        for (boolean colocation : new boolean[] {true, false}) {
            // lat: 10 req/s x (2000/4 + 5000) us = 0.055 device-s/s; thr: 10 x (2000/4 + 20000) us = 0.205
            FakeCluster cluster = new FakeCluster(2, 2).serve("lat", 2000, 5000, 10, 0).serve("thr", 2000, 20000, 10, 0);
            Configuration config = config();
            config.set(CoordinatorOptions.WARM_BEFORE_ROUTE, false);
            config.set(CoordinatorOptions.SLO_COLOCATION, colocation);
            InMemoryStateStore store = new InMemoryStateStore();
            store.putModel(new io.flinkgpu.coordinator.state.ModelInfo("lat", "1", 0, 50, true));
            store.putModel(new io.flinkgpu.coordinator.state.ModelInfo("thr", "1", 0, 200, true));
            Coordinator c = new Coordinator(config, cluster, new RecordingRealizer(), store, new CoordinatorMetrics(),
                    cluster.clock());
            c.runOnce(false);
            cluster.advance(10_000);
            Coordinator.CycleResult r = c.runOnce(false);
            List<Decision> decisions = c.store().recentDecisions(100);
            if (colocation) {
                assertThat(r.published()).isTrue();
                assertThat(r.plan().route("lat").orElseThrow().targets()).extracting(RouteTarget::subtask)
                        .containsExactly(1);
                assertThat(r.plan().route("thr").orElseThrow().targets()).extracting(RouteTarget::subtask)
                        .containsExactly(0);
                assertThat(decisions).anySatisfy(d -> {
                    assertThat(d.action()).isEqualTo("MOVE");
                    assertThat(d.model()).isEqualTo("lat");
                    assertThat(d.reason()).contains("cannot both meet their SLOs", "batch 22.0 ms", "SLO 50 ms");
                });
            } else {
                assertThat(decisions).noneSatisfy(d -> assertThat(d.action()).isEqualTo("MOVE"));
                assertThat(r.published()).isTrue();
                assertThat(r.plan().route("lat").orElseThrow().targets()).extracting(RouteTarget::subtask)
                        .containsExactly(0);
            }
        }
    }
}
