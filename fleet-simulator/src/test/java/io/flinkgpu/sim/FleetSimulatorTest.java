package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.util.Map;
import org.junit.jupiter.api.Test;

class FleetSimulatorTest {
    @Test
    void aRunIsDeterministicForItsSeed() {
        SimResult a = Scenarios.run(Policy.PLANNER, 4, 12, 0.4, 7, 30);
        SimResult b = Scenarios.run(Policy.PLANNER, 4, 12, 0.4, 7, 30);
        SimResult c = Scenarios.run(Policy.PLANNER, 4, 12, 0.4, 8, 30);
        assertThat(a.cycleWallMs()).isNotEmpty();
        // everything but the real wall time of the coordinator's cycles
        assertThat(a).usingRecursiveComparison().ignoringFields("cycleWallMs").isEqualTo(b);
        assertThat(a.plansPublished()).isPositive();
        assertThat(c.arrivalsHash()).isNotEqualTo(a.arrivalsHash());
        assertThat(c.arrivals()).isNotEqualTo(a.arrivals());
    }

    @Test
    void everyRequestIsAnsweredOrCountedAsDroppedUnderEveryPolicy() {
        for (Policy p : Policy.values()) {
            // overloaded and with more models than fit, so that every way of losing a request occurs somewhere
            SimResult r = Scenarios.run(p, 4, 30, 1.1, 3, 30);
            assertThat(r.arrivals()).as(p.label()).isPositive();
            assertThat(r.inFlightAtEnd()).as(p.label()).isZero();
            assertThat(r.conserved()).as("%s: %s", p.label(), r).isTrue();
            assertThat(r.answered()).as(p.label()).isLessThanOrEqualTo(r.arrivals());
            assertThat(r.withinSlo()).as(p.label()).isLessThanOrEqualTo(r.answered());
        }
    }

    @Test
    void staticNeverSwapsAndHoldsOneModelPerDevice() {
        SimResult r = Scenarios.run(Policy.STATIC, 6, 4, 0.5, 1, 30);
        assertThat(r.loads()).isZero();
        assertThat(r.swapsPerMinute()).isZero();
        assertThat(r.evictions()).isZero();
        assertThat(r.maxModelsOnADevice()).isEqualTo(1);
        assertThat(r.answered()).isPositive();
    }

    @Test
    void staticWithMoreModelsThanDevicesLeavesTheTailUnrouted() {
        SimResult r = Scenarios.run(Policy.STATIC, 3, 8, 0.3, 1, 30);
        assertThat(r.unrouted()).isPositive();
        assertThat(r.maxModelsOnADevice()).isEqualTo(1);
    }

    @Test
    void noEvictionNeverEvictsNorLoadsAfterTheStart() {
        Workload.Spec spec = new Workload.Spec(40, 1.0, "gamma", 2.0, 0.5, 40, 0.15, 0.5,
                new double[] {0, 1, 0, 0, 0}, 1.0, 12L << 30, 2);
        SimResult r = Scenarios.run(Policy.NO_EVICTION, 3, spec, 30);
        assertThat(r.evictions()).isZero();
        assertThat(r.loads()).isZero();
        // 40 recommendation models of 12 GiB do not all fit on 3 x 38 GiB
        assertThat(r.unrouted()).isPositive();
    }

    @Test
    void lruCountNeverHoldsMoreThanThreeModelsPerReplicaAndEvictsToServeMore() {
        SimResult r = Scenarios.run(Policy.LRU_COUNT, 3, 20, 0.4, 4, 30);
        assertThat(r.maxModelsOnADevice()).isLessThanOrEqualTo(3);
        assertThat(r.evictions()).isPositive();
        assertThat(r.loads()).isPositive();
    }

    @Test
    void lruMemoryHoldsMoreThanThreeWhenMemoryAllows() {
        SimResult r = Scenarios.run(Policy.LRU_MEMORY, 3, 20, 0.4, 4, 30);
        assertThat(r.maxModelsOnADevice()).isGreaterThan(3);
    }

    @Test
    void withWarmBeforeRouteThePlanRoutesAModelOnlyWhereItIsLoaded() {
        // shifting load makes the planner replicate and move; BERT-large and 12-GiB models take ~1-6 s to load
        Workload.Spec spec = new Workload.Spec(6, 1.0, "gamma", 2.0, 0.8, 40, 0.5, 0.55,
                new double[] {0, 1, 0, 1, 1}, 0.3, 12L << 30, 11);
        SimResult warm = Scenarios.run(Policy.PLANNER, 6, spec, 60);
        SimResult atOnce = Scenarios.run(Policy.PLANNER, 6, spec, 60, c -> c.withWarmRouting(false, 30));
        long warmCold = (long) warm.extra().get("plan_routed_to_unloaded");
        long atOnceCold = (long) atOnce.extra().get("plan_routed_to_unloaded");
        // routes that change with the plan send requests to devices still loading the model
        assertThat(atOnceCold).isPositive();
        // the coordinator's WarmRouting waits for the devices' loaded gauges: (almost) none do
        assertThat(warmCold).as("warm %d, at once %d", warmCold, atOnceCold).isLessThan(atOnceCold / 10);
        assertThat(warm.arrivals()).isEqualTo(atOnce.arrivals());
    }

    @Test
    void thePlannerBeatsStaticOnASmallFleetWithShiftingLoad() {
        // 6 devices, 6 models whose diurnal peaks are spread over the period: static's fixed split overloads
        // whichever model peaks, the planner follows the load
        Workload.Spec spec = new Workload.Spec(6, 1.0, "gamma", 2.0, 0.8, 40, 0.5, 0.55,
                new double[] {0, 0, 0, 1, 1}, 0, 12L << 30, 11);
        SimResult st = Scenarios.run(Policy.STATIC, 6, spec, 60);
        SimResult pl = Scenarios.run(Policy.PLANNER, 6, spec, 60);
        assertThat(pl.utilization()).isGreaterThan(st.utilization());
        assertThat(pl.goodputPerGpu()).isGreaterThan(st.goodputPerGpu());
    }

    @Test
    @SuppressWarnings("unchecked")
    void theOutcomesPerModelAddUpToTheRun() {
        SimResult r = Scenarios.run(Policy.LRU_COUNT, 4, 30, 1.1, 3, 30);
        Map<String, Map<String, Long>> perModel = (Map<String, Map<String, Long>>) r.extra().get("per_model");
        assertThat(perModel).hasSize(30);
        assertThat(perModel.values().stream().mapToLong(m -> m.get("arrivals")).sum()).isEqualTo(r.arrivals());
        assertThat(perModel.values().stream().mapToLong(m -> m.get("within_slo")).sum()).isEqualTo(r.withinSlo());
        assertThat(perModel.values().stream().mapToLong(m -> m.get("expired")).sum()).isEqualTo(r.expired());
        assertThat(perModel.values().stream().mapToLong(m -> m.get("no_room")).sum()).isEqualTo(r.noRoom());
        assertThat(perModel.values().stream().mapToLong(m -> m.get("refused")).sum()).isEqualTo(r.refused());
        assertThat(r.expired() + r.noRoom()).isPositive();
    }

    @Test
    void withoutSchedulingNothingExpiresAndLateAnswersCountAsMisses() {
        // overloaded: with deadlines requests expire; without a scheduling block they queue and are answered late
        Workload.Spec spec = Scenarios.spec(4, 1.3, 5);
        FleetConfig c = FleetConfig.of(2, "a100", 30, 5);
        Workload w = Workload.build(spec, 2, Scenarios.CALIBRATION, "a100");
        SimResult withDeadlines = new FleetSimulator(w, c, Policy.LRU_MEMORY, Scenarios.CALIBRATION).run();
        SimResult queued = new FleetSimulator(w, c, Policy.LRU_MEMORY, Scenarios.CALIBRATION).withoutScheduling()
                .run();
        assertThat(withDeadlines.expired()).isPositive();
        assertThat(queued.expired()).isZero();
        assertThat(queued.arrivals()).isEqualTo(withDeadlines.arrivals());
        assertThat(queued.answered()).isGreaterThan(withDeadlines.answered());
        assertThat(queued.withinSlo()).isLessThan(queued.answered());
        assertThat(queued.conserved()).isTrue();
    }

    @Test
    void theFleetRunsTheCoordinatorsForecastByDefault() {
        FleetConfig c = FleetConfig.of(2, "a100", 30, 5);
        assertThat(c.forecastHorizonSeconds())
                .isEqualTo(CoordinatorOptions.FORECAST_HORIZON.defaultValue().toMillis() / 1000.0).isPositive();
        assertThat(c.withForecast(0).forecastHorizonSeconds()).isZero();
        assertThat(c.withForecast(0).withWarmRouting(false, 30).forecastHorizonSeconds()).isZero();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> c.withForecast(-1))
                .isInstanceOf(IllegalArgumentException.class);
        // the forecast only raises planned demand: a run with it is a valid run of the same arrivals
        Workload.Spec spec = new Workload.Spec(6, 1.0, "gamma", 2.0, 0.8, 40, 0.5, 0.55,
                new double[] {0, 1, 0, 1, 1}, 0.3, 12L << 30, 11);
        SimResult with = Scenarios.run(Policy.PLANNER, 4, spec, 40);
        SimResult without = Scenarios.run(Policy.PLANNER, 4, spec, 40, f -> f.withForecast(0));
        assertThat(with.arrivals()).isEqualTo(without.arrivals());
        assertThat(with.conserved()).isTrue();
        assertThat(with.plansPublished()).isPositive();
    }

    @Test
    @SuppressWarnings("unchecked")
    void aCycleTraceRecordsEveryCoordinatorCycleWithItsDemandAndPlacement() {
        Workload.Spec spec = Scenarios.spec(6, 0.5, 2);
        FleetConfig c = FleetConfig.of(3, "a100", 30, 5);
        Workload w = Workload.build(spec, 3, Scenarios.CALIBRATION, "a100");
        SimResult r = new FleetSimulator(w, c, Policy.PLANNER, Scenarios.CALIBRATION).withCycleTrace().run();
        java.util.List<Map<String, Object>> trace = (java.util.List<Map<String, Object>>) r.extra().get("cycle_trace");
        assertThat(trace).hasSize(r.cycleWallMs().size());
        Map<String, Object> last = trace.get(trace.size() - 1);
        assertThat(last).containsKeys("t_s", "demand", "placed", "util");
        assertThat((java.util.List<Double>) last.get("util")).hasSize(3);
        assertThat(Scenarios.run(Policy.PLANNER, 3, spec, 30).extra()).doesNotContainKey("cycle_trace");
    }
    @Test
    void queueAwareRoutingAmongThePlansReplicasAnswersBurstsTheRoundRobinMisses() {
        // the job's default (queue-aware on the outstanding requests) against its round robin alone, same trace
        Workload.Spec spec = new Workload.Spec(6, 1.0, "gamma", 4.0, 0.6, 40, 0.5, 0.7,
                new double[] {0, 1, 0, 1, 1}, 0, 12L << 30, 11);
        Workload w = Workload.build(spec, 6, Scenarios.CALIBRATION, "a100");
        FleetConfig c = FleetConfig.of(6, "a100", 60, 10);
        SimResult plain = new FleetSimulator(w, c, Policy.PLANNER, Scenarios.CALIBRATION).withRoundRobinRouting().run();
        SimResult jsq = new FleetSimulator(w, c, Policy.PLANNER, Scenarios.CALIBRATION).run();
        assertThat(jsq.arrivals()).isEqualTo(plain.arrivals());
        assertThat(jsq.conserved()).isTrue();
        assertThat(plain.expired()).isPositive();
        assertThat(jsq.expired()).as("expired: queue-aware %d, round robin %d", jsq.expired(), plain.expired())
                .isLessThan(plain.expired());
        assertThat(jsq.unrouted()).isZero();
    }
}
