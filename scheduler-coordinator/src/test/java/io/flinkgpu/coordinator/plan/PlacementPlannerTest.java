package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PlacementPlannerTest {
    static final long GIB = 1L << 30;
    static final long MIB = 1L << 20;

    private final PlacementPlanner planner = new PlacementPlanner(PlannerSettings.defaults());
    private final PlacementPlanner colocating = new PlacementPlanner(PlannerSettings.defaults().withSloColocation(true));

    static List<DeviceSpec> devices(int n) {
        List<DeviceSpec> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new DeviceSpec("sim:" + i, 8 * GIB, 4, 1, List.of(i)));
        }
        return out;
    }

    static ModelSpec model(String name, double load) {
        return new ModelSpec(name, 512 * MIB, load, 0.1, 1);
    }

    @Test
    void replicatesAHotModelAndCoLocatesColdOnes() {
        PlacementPlan plan = planner.plan(devices(3),
                List.of(model("hot", 1.0), model("cold-a", 0.05), model("cold-b", 0.05)), Placement.EMPTY, List.of(),
                0);
        assertThat(plan.placement().devices("hot")).hasSize(2);
        assertThat(plan.placement().devices("cold-a")).hasSize(1).isEqualTo(plan.placement().devices("cold-b"));
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("REPLICATE");
            assertThat(d.model()).isEqualTo("hot");
            assertThat(d.reason()).contains("load 1.000 device-s/s needs 2 instance(s) at target 0.70");
        });
        assertThat(plan.decisions()).allSatisfy(d -> assertThat(d.reason()).isNotBlank());
    }

    @Test
    void routesEachModelToTheSubtasksOfItsDevicesWeightedByHeadroom() {
        List<DeviceSpec> devices = List.of(new DeviceSpec("sim:0", 8 * GIB, 4, 1, List.of(0, 2)),
                new DeviceSpec("sim:1", 8 * GIB, 4, 1, List.of(1, 3)));
        Placement current = Placement.of(Map.of("a", Set.of("sim:0"), "b", Set.of("sim:0", "sim:1")));
        PlacementPlan plan = planner.plan(devices, List.of(model("a", 0.3), model("b", 0.8)), current, List.of(), 0);
        assertThat(plan.placement()).isEqualTo(current);
        ModelRoute b = plan.routes(devices).stream().filter(r -> r.model().equals("b")).findFirst().orElseThrow();
        assertThat(b.targets()).extracting(RouteTarget::subtask).containsExactlyInAnyOrder(0, 1, 2, 3);
        // sim:0 carries 0.3 + 0.4, sim:1 0.4: headroom 0.3 and 0.6, so sim:1's subtasks get twice the weight
        double w0 = b.targets().stream().filter(t -> t.subtask() == 0).findFirst().orElseThrow().weight();
        double w1 = b.targets().stream().filter(t -> t.subtask() == 1).findFirst().orElseThrow().weight();
        assertThat(w1 / w0).isCloseTo(2.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(b.reason()).contains("headroom");
    }

    @Test
    void isStableUnderUnchangedLoad() {
        List<DeviceSpec> devices = devices(3);
        List<ModelSpec> models = List.of(model("hot", 1.2), model("warm", 0.5), model("cold", 0.02));
        PlacementPlan first = planner.plan(devices, models, Placement.EMPTY, List.of(), 0);
        PlacementPlan second = planner.plan(devices, models, first.placement(), first.moves(), 3_600_000);
        assertThat(second.placement()).isEqualTo(first.placement());
        assertThat(second.moves()).isEmpty();
        assertThat(second.changesPlacement()).isFalse();
        assertThat(second.commands(devices)).isEmpty();
    }

    @Test
    void movesAnInstanceOffAnOverloadedDeviceWhenTheGainBeatsTheMovePenalty() {
        List<DeviceSpec> devices = devices(2);
        Placement crowded = Placement.of(Map.of("a", Set.of("sim:0"), "b", Set.of("sim:0")));
        PlacementPlan plan = planner.plan(devices, List.of(model("a", 0.5), model("b", 0.45)), crowded, List.of(), 0);
        assertThat(plan.moves()).hasSize(1);
        MoveRecord move = plan.moves().get(0);
        assertThat(move.from()).isEqualTo("sim:0");
        assertThat(move.to()).isEqualTo("sim:1");
        assertThat(plan.deviceLoad().values()).allSatisfy(l -> assertThat(l).isLessThanOrEqualTo(0.5));
        assertThat(plan.decisions()).anySatisfy(d -> assertThat(d.reason())
                .contains("sim:0 at 0.950 device-s/s > 0.805").contains("> move penalty 0.100"));
        List<SubtaskCommand> commands = plan.commands(devices);
        assertThat(commands).extracting(SubtaskCommand::action)
                .containsExactlyInAnyOrder(SubtaskCommand.Action.LOAD, SubtaskCommand.Action.UNLOAD);
    }

    @Test
    void doesNotMoveWhenTheGainIsBelowThePenalty() {
        // sim:0 at 0.85 (over 0.805), sim:1 at 0.7: moving 0.1 would lower the peak by 0.1, not more
        List<DeviceSpec> devices = devices(2);
        Placement p = Placement.of(Map.of("a", Set.of("sim:0"), "b", Set.of("sim:0"), "c", Set.of("sim:1")));
        PlacementPlan plan = planner.plan(devices, List.of(model("a", 0.65), model("b", 0.2), model("c", 0.7)), p,
                List.of(), 0);
        assertThat(plan.moves()).isEmpty();
        assertThat(plan.placement()).isEqualTo(p);
    }

    @Test
    void holdsAModelThatMovedWithinTheMinimumInterval() {
        List<DeviceSpec> devices = devices(2);
        Placement crowded = Placement.of(Map.of("a", Set.of("sim:0"), "b", Set.of("sim:0")));
        List<MoveRecord> history = List.of(new MoveRecord("a", "sim:1", "sim:0", 0, false),
                new MoveRecord("b", "sim:1", "sim:0", 0, false));
        PlacementPlan plan = planner.plan(devices, List.of(model("a", 0.5), model("b", 0.45)), crowded, history,
                60_000);
        assertThat(plan.moves()).isEmpty();
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("HOLD");
            assertThat(d.reason()).contains("moved 60 s ago (minimum interval 120 s)");
        });
    }

    @Test
    void keepsReplicasWithinTheHysteresisBandAndScalesInBelowIt() {
        List<DeviceSpec> devices = devices(2);
        Placement two = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
        // 0.65 needs 1 instance at 0.7, but it is above 0.7 x 0.85 = 0.595: keep 2
        assertThat(planner.plan(devices, List.of(model("m", 0.65)), two, List.of(), 0).placement()).isEqualTo(two);
        PlacementPlan in = planner.plan(devices, List.of(model("m", 0.5)), two, List.of(), 0);
        assertThat(in.placement().devices("m")).hasSize(1);
        assertThat(in.decisions()).anySatisfy(d -> assertThat(d.action()).isEqualTo("SCALE_IN"));
    }

    @Test
    void evictsFromADeviceOverItsBudgetAndSaysWhy() {
        List<DeviceSpec> small = List.of(new DeviceSpec("sim:0", GIB, 4, 1, List.of(0)),
                new DeviceSpec("sim:1", GIB, 4, 1, List.of(1)));
        Placement over = Placement.of(Map.of("a", Set.of("sim:0"), "b", Set.of("sim:0"), "c", Set.of("sim:0")));
        PlacementPlan plan = planner.plan(small, List.of(model("a", 0.3), model("b", 0.01), model("c", 0.2)), over,
                List.of(), 0);
        assertThat(plan.placement().models("sim:0")).hasSize(2);
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("EVICT");
            assertThat(d.model()).isEqualTo("b");
            assertThat(d.reason()).contains("lowest load");
        });
        assertThat(plan.placement().devices("b")).containsExactly("sim:1");
    }

    @Test
    void modelsThatDoNotFitAreLeftUnplacedWithAReason() {
        List<DeviceSpec> one = List.of(new DeviceSpec("sim:0", GIB, 4, 1, List.of(0)));
        PlacementPlan plan = planner.plan(one,
                List.of(new ModelSpec("big", 2 * GIB, 0.1, 0.1, 1), model("small", 0.1)), Placement.EMPTY, List.of(),
                0);
        assertThat(plan.placement().devices("small")).containsExactly("sim:0");
        assertThat(plan.placement().devices("big")).isEmpty();
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.model()).isEqualTo("big");
            assertThat(d.reason()).contains("device memory");
        });
    }

    @Test
    void anOverloadedModelKeepsItsReplicasBecauseDeviceTimeIsSoft() {
        // hot wants 2 instances of a whole device each (load 2.5); with warm's 0.3 the fleet of 2
        // devices is overloaded. Device-time claims are scaled down, so hot keeps both instances
        // instead of DRF granting one (and the planner scaling in exactly when it is overloaded).
        Placement current = Placement.of(Map.of("hot", Set.of("sim:0", "sim:1"), "warm", Set.of("sim:1")));
        PlacementPlan plan = planner.plan(devices(2), List.of(model("hot", 2.5), model("warm", 0.3)), current,
                List.of(), 0);
        assertThat(plan.placement().devices("hot")).containsExactlyInAnyOrder("sim:0", "sim:1");
        assertThat(plan.placement().devices("warm")).hasSize(1);
        assertThat(plan.decisions()).noneSatisfy(d -> assertThat(d.action()).isEqualTo("SCALE_IN"));
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("ALLOCATE");
            assertThat(d.reason()).contains("models want 2.300 device-s/s of 2 devices", "device time is soft");
        });
    }

    @Test
    void aReplicaIsGivenBackOnlyWhenTheWindowsPeakLoadIsLowToo() {
        Placement two = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
        // one low sample (0.2) after a busy window (peak 0.9): both instances stay
        PlacementPlan held = planner.plan(devices(2), List.of(model("m", 0.2)), two, List.of(), 0, Map.of("m", 0.9));
        assertThat(held.placement().devices("m")).hasSize(2);
        assertThat(held.decisions()).noneSatisfy(d -> assertThat(d.action()).isEqualTo("SCALE_IN"));
        // low throughout the window: one instance is given back
        PlacementPlan scaled = planner.plan(devices(2), List.of(model("m", 0.2)), two, List.of(), 0, Map.of("m", 0.3));
        assertThat(scaled.placement().devices("m")).hasSize(1);
        assertThat(scaled.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("SCALE_IN");
            assertThat(d.reason()).contains("peak of the stabilisation window 0.300");
        });
    }

    @Test
    void aModelAtZeroLeavesEveryDeviceClaimsNothingAndLosesItsRoute() {
        List<DeviceSpec> devices = devices(2);
        Placement current = Placement.of(Map.of("idle", Set.of("sim:0", "sim:1"), "busy", Set.of("sim:0")));
        ScaleToZero zero = new ScaleToZero(Map.of("idle", "no request for 1800.0 s"), Map.of());
        PlacementPlan plan = planner.plan(devices, List.of(model("idle", 0), model("busy", 0.3)), current, List.of(), 0,
                Map.of(), zero);
        assertThat(plan.placement().devices("idle")).isEmpty();
        assertThat(plan.placement().devices("busy")).containsExactly("sim:0");
        assertThat(plan.allocation().tasks("idle")).isZero();
        assertThat(plan.decisions()).filteredOn(d -> d.action().equals("SCALE_TO_ZERO"))
                .extracting(Decision::device).containsExactlyInAnyOrder("sim:0", "sim:1");
        assertThat(plan.decisions()).filteredOn(d -> d.action().equals("SCALE_TO_ZERO")).allSatisfy(d ->
                assertThat(d.reason()).startsWith("no request for 1800.0 s; UNLOAD from sim:")
                        .contains("keeps the job's hash routing"));
        assertThat(plan.routes(devices)).extracting(ModelRoute::model).containsExactly("busy");
        assertThat(plan.commands(devices)).extracting(SubtaskCommand::action, SubtaskCommand::model,
                SubtaskCommand::subtask).containsExactlyInAnyOrder(
                        org.assertj.core.groups.Tuple.tuple(SubtaskCommand.Action.UNLOAD, "idle", 0),
                        org.assertj.core.groups.Tuple.tuple(SubtaskCommand.Action.UNLOAD, "idle", 1));
        // already at zero: nothing more to decide
        PlacementPlan again = planner.plan(devices, List.of(model("idle", 0), model("busy", 0.3)), plan.placement(),
                List.of(), 5_000, Map.of(), zero);
        assertThat(again.changesPlacement()).isFalse();
        assertThat(again.decisions()).noneMatch(d -> d.action().equals("SCALE_TO_ZERO"));
        // without the scale-to-zero input, every model keeps at least one instance
        assertThat(planner.plan(devices, List.of(model("idle", 0), model("busy", 0.3)), current, List.of(), 0)
                .placement().devices("idle")).isNotEmpty();
    }

    @Test
    void aModelBackFromZeroStartsOnTheDeviceThatServedItMeanwhile() {
        List<DeviceSpec> devices = devices(3);
        // a cold model would be packed onto the busiest device within target (sim:0); it was served on sim:2
        Placement current = Placement.of(Map.of("busy", Set.of("sim:0")));
        ScaleToZero back = new ScaleToZero(Map.of(),
                Map.of("m", new ScaleToZero.Back(Set.of("sim:2"), "back from zero: 3 request(s)")));
        PlacementPlan plan = planner.plan(devices, List.of(model("busy", 0.3), model("m", 0.01)), current, List.of(), 0,
                Map.of(), back);
        assertThat(plan.placement().devices("m")).containsExactly("sim:2");
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("LOAD");
            assertThat(d.model()).isEqualTo("m");
            assertThat(d.reason()).startsWith("back from zero: 3 request(s)")
                    .contains("-> sim:2, where it was served while at zero");
        });
        assertThat(plan.commands(devices)).extracting(SubtaskCommand::action, SubtaskCommand::subtask)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(SubtaskCommand.Action.LOAD, 2));
        // the same model without that input is packed with the busy one
        assertThat(planner.plan(devices, List.of(model("busy", 0.3), model("m", 0.01)), current, List.of(), 0)
                .placement().devices("m")).containsExactly("sim:0");
        // a device that served it but has no room: placed as usual
        List<DeviceSpec> full = List.of(devices.get(0), devices.get(1), new DeviceSpec("sim:2", 256 * MIB, 4, 1,
                List.of(2)));
        PlacementPlan elsewhere = planner.plan(full, List.of(model("busy", 0.3), model("m", 0.01)), current, List.of(),
                0, Map.of(), back);
        assertThat(elsewhere.placement().devices("m")).containsExactly("sim:0");
    }
    /** A throughput-bound model whose batches take 80 ms and a latency-bound one (20 ms batches, 50 ms SLO). */
    static ModelSpec thr(String name, double load) {
        return new ModelSpec(name, 512 * MIB, load, 0.1, 1, 80, 200);
    }

    static ModelSpec lat(String name, double load) {
        return new ModelSpec(name, 512 * MIB, load, 0.1, 1, 20, 50);
    }

    @Test
    void conflictIsOneBatchOfEachBeyondTheTighterSlo() {
        assertThat(lat("a", 0.1).compatibleWith(thr("b", 0.1))).isFalse(); // 20 + 80 > 50
        assertThat(thr("b", 0.1).compatibleWith(lat("a", 0.1))).isFalse();
        assertThat(lat("a", 0.1).compatibleWith(lat("c", 0.1))).isTrue(); // 20 + 20 <= 50
        assertThat(thr("b", 0.1).compatibleWith(thr("d", 0.1))).isTrue(); // 80 + 80 <= 200
        assertThat(lat("a", 0.1).compatibleWith(model("unknown", 0.1))).isTrue();
        assertThat(new ModelSpec("no-slo", MIB, 0.1, 0.1, 1, 80, 0).compatibleWith(
                new ModelSpec("no-slo-2", MIB, 0.1, 0.1, 1, 80, 0))).isTrue();
    }

    @Test
    void aColdLatencyBoundModelIsNotPackedBehindLongBatches() {
        Placement current = Placement.of(Map.of("thr", Set.of("sim:0")));
        List<ModelSpec> models = List.of(thr("thr", 0.3), lat("lat", 0.1));
        PlacementPlan blind = planner.plan(devices(3), models, current, List.of(), 0);
        assertThat(blind.placement().devices("lat")).containsExactly("sim:0"); // packed onto the busiest within target
        PlacementPlan plan = colocating.plan(devices(3), models, current, List.of(), 0);
        assertThat(plan.placement().devices("lat")).hasSize(1).doesNotContain("sim:0");
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("LOAD");
            assertThat(d.model()).isEqualTo("lat");
            assertThat(d.reason()).contains("not sim:0", "would not fit the SLO");
        });
    }

    @Test
    void aConflictingPairIsSeparatedByAMoveAndNotMovedBack() {
        List<DeviceSpec> devices = devices(2);
        Placement crowded = Placement.of(Map.of("thr", Set.of("sim:0"), "lat", Set.of("sim:0")));
        List<ModelSpec> models = List.of(thr("thr", 0.2), lat("lat", 0.1));
        PlacementPlan plan = colocating.plan(devices, models, crowded, List.of(), 0);
        assertThat(plan.moves()).hasSize(1);
        assertThat(plan.placement().devices("thr")).doesNotContainAnyElementsOf(plan.placement().devices("lat"));
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("MOVE");
            assertThat(d.reason()).contains("cannot both meet their SLOs", "on sim:0");
        });
        PlacementPlan again = colocating.plan(devices, models, plan.placement(), plan.moves(), 3_600_000);
        assertThat(again.changesPlacement()).isFalse();
        // off, the same pair stays together: its load is far from any rebalancing
        PlacementPlan off = planner.plan(devices, models, crowded, List.of(), 0);
        assertThat(off.moves()).isEmpty();
    }

    @Test
    void separatingWaitsForTheMinimumMoveInterval() {
        Placement crowded = Placement.of(Map.of("thr", Set.of("sim:0"), "lat", Set.of("sim:0")));
        List<MoveRecord> recent = List.of(new MoveRecord("thr", "sim:1", "sim:0", 0, false),
                new MoveRecord("lat", "sim:1", "sim:0", 0, false));
        PlacementPlan plan = colocating.plan(devices(2), List.of(thr("thr", 0.2), lat("lat", 0.1)), crowded, recent,
                60_000);
        assertThat(plan.moves()).isEmpty();
    }

    @Test
    void withNoDeviceApartTheInstanceIsPlacedAndTheConflictSaid() {
        PlacementPlan plan = colocating.plan(devices(1), List.of(thr("thr", 0.3), lat("lat", 0.1)), Placement.EMPTY,
                List.of(), 0);
        assertThat(plan.placement().devices("lat")).containsExactly("sim:0");
        assertThat(plan.placement().devices("thr")).containsExactly("sim:0");
        assertThat(plan.decisions()).filteredOn(d -> d.action().equals("LOAD"))
                .anySatisfy(d -> assertThat(d.reason()).contains("no device without an SLO conflict"));
    }

    @Test
    void aSurplusInstanceLeavesTheConflictingDeviceFirst() {
        // lat has two instances and wants one: the one next to thr goes, though sim:1 is busier
        Placement current = Placement.of(Map.of("thr", Set.of("sim:0"), "lat", Set.of("sim:0", "sim:1"),
                "busy", Set.of("sim:1")));
        PlacementPlan plan = colocating.plan(devices(2), List.of(thr("thr", 0.1), lat("lat", 0.05), model("busy", 0.5)),
                current, List.of(), 0);
        assertThat(plan.placement().devices("lat")).containsExactly("sim:1");
        assertThat(plan.decisions()).anySatisfy(d -> {
            assertThat(d.action()).isEqualTo("SCALE_IN");
            assertThat(d.device()).isEqualTo("sim:0");
            assertThat(d.reason()).contains("conflict with an SLO");
        });
    }
}
