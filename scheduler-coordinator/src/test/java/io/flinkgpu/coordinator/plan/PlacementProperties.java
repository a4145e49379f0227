package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

class PlacementProperties {
    static final long MIB = 1L << 20;

    record Fleet(List<DeviceSpec> devices, List<ModelSpec> models, Placement current) {}

    private final PlannerSettings settings = PlannerSettings.defaults();
    private final PlacementPlanner planner = new PlacementPlanner(settings);
    private final PlacementPlanner colocating = new PlacementPlanner(settings.withSloColocation(true));

    @Provide
    Arbitrary<Fleet> fleets() {
        Arbitrary<List<DeviceSpec>> devices = Combinators.combine(
                        Arbitraries.integers().between(1, 4), // count
                        Arbitraries.integers().between(1, 16), // memory in 256 MiB units
                        Arbitraries.integers().between(1, 4)) // max models
                .as((n, mem, max) -> {
                    List<DeviceSpec> out = new ArrayList<>();
                    for (int i = 0; i < n; i++) {
                        out.add(new DeviceSpec("d" + i, mem * 256 * MIB, max, 2, List.of(i)));
                    }
                    return out;
                });
        // batch times and SLOs as the evaluator reports them: none known, or latency-bound and
        // throughput-bound models whose batches may or may not fit each other's SLOs
        Arbitrary<ModelSpec> model = Combinators.combine(Arbitraries.integers().between(1, 12),
                        Arbitraries.doubles().between(0, 2.5), Arbitraries.integers().between(1, 3),
                        Arbitraries.of(0.0, 2.0, 8.0, 22.0, 45.0, 83.0), Arbitraries.of(0.0, 50.0, 200.0))
                .as((mem, load, w, batchMs, sloMs) -> new ModelSpec("?", mem * 128 * MIB, load, 0.1, w, batchMs,
                        sloMs));
        Arbitrary<List<ModelSpec>> models = model.list().ofMinSize(1).ofMaxSize(7).map(list -> {
            List<ModelSpec> out = new ArrayList<>();
            for (int i = 0; i < list.size(); i++) {
                ModelSpec m = list.get(i);
                out.add(new ModelSpec("m" + i, m.memoryBytes(), m.load(), m.cpuPerInstance(), m.weight(),
                        m.batchMillis(), m.sloMillis()));
            }
            return out;
        });
        return Combinators.combine(devices, models, Arbitraries.longs()).as((ds, ms, seed) -> {
            // a random current placement, possibly over the limits (budgets may have shrunk)
            java.util.Random r = new java.util.Random(seed);
            Map<String, Set<String>> p = new TreeMap<>();
            for (ModelSpec m : ms) {
                for (DeviceSpec d : ds) {
                    if (r.nextInt(3) == 0) {
                        p.computeIfAbsent(m.name(), k -> new TreeSet<>()).add(d.id());
                    }
                }
            }
            return new Fleet(ds, ms, Placement.of(p));
        });
    }

    static void assertWithinLimits(Fleet f, Placement p) {
        for (DeviceSpec d : f.devices()) {
            long used = p.models(d.id()).stream().mapToLong(m -> f.models().stream()
                    .filter(s -> s.name().equals(m)).findFirst().orElseThrow().memoryBytes()).sum();
            assertThat(used).as("memory on %s", d.id()).isLessThanOrEqualTo(d.memoryBytes());
            assertThat(p.models(d.id()).size()).as("models on %s", d.id()).isLessThanOrEqualTo(d.maxModels());
        }
        p.devicesByModel().keySet().forEach(m -> assertThat(f.models()).extracting(ModelSpec::name).contains(m));
    }

    @Property(tries = 300)
    void modelsAtZeroHoldNoInstanceAndUnloadWhereTheyWere(@ForAll("fleets") Fleet f, @ForAll long seed) {
        java.util.Random r = new java.util.Random(seed);
        Map<String, String> atZero = new TreeMap<>();
        f.models().forEach(m -> {
            if (r.nextBoolean()) {
                atZero.put(m.name(), "idle (test)");
            }
        });
        PlacementPlan plan = planner.plan(f.devices(), f.models(), f.current(), List.of(), 0, Map.of(),
                new ScaleToZero(atZero, Map.of()));
        assertWithinLimits(f, plan.placement());
        for (String m : atZero.keySet()) {
            assertThat(plan.placement().devices(m)).as("instances of %s at zero", m).isEmpty();
            assertThat(plan.allocation().tasks(m)).isZero();
            assertThat(plan.commands(f.devices())).filteredOn(c -> c.model().equals(m))
                    .allSatisfy(c -> assertThat(c.action())
                            .isEqualTo(io.flinkgpu.contract.control.SubtaskCommand.Action.UNLOAD));
            for (String d : f.current().devices(m)) {
                assertThat(plan.commands(f.devices())).as("UNLOAD of %s on %s", m, d).anySatisfy(c -> {
                    assertThat(c.model()).isEqualTo(m);
                    assertThat(c.subtask()).isEqualTo(Integer.parseInt(d.substring(1)));
                });
            }
        }
        assertThat(plan.decisions()).filteredOn(d -> d.action().equals("SCALE_TO_ZERO"))
                .allSatisfy(d -> assertThat(atZero).containsKey(d.model()));
    }

    @Property(tries = 300)
    void memoryBudgetsAndModelLimitsAreNeverExceeded(@ForAll("fleets") Fleet f, @ForAll boolean colocation) {
        PlacementPlan plan = (colocation ? colocating : planner).plan(f.devices(), f.models(), f.current(), List.of(), 0);
        assertWithinLimits(f, plan.placement());
        assertThat(plan.moves().size()).isLessThanOrEqualTo(settings.maxMovesPerPlan());
        assertThat(plan.decisions()).allSatisfy(d -> assertThat(d.reason()).isNotBlank());
    }

    /** Re-planning under the same load converges within a few rounds and then changes nothing. */
    @Property(tries = 200)
    void unchangedLoadReachesAFixedPointAndStaysThere(@ForAll("fleets") Fleet f, @ForAll boolean colocation) {
        PlacementPlanner planner = colocation ? colocating : this.planner;
        Placement p = f.current();
        List<MoveRecord> history = new ArrayList<>();
        long now = 0;
        int changes = 0;
        for (int round = 0; round < 12; round++) {
            now += 5 * 60_000; // past the minimum interval each round
            PlacementPlan plan = planner.plan(f.devices(), f.models(), p, history, now);
            if (plan.changesPlacement()) {
                changes++;
            }
            history.addAll(plan.moves());
            p = plan.placement();
        }
        assertThat(changes).isLessThanOrEqualTo(6);
        PlacementPlan again = planner.plan(f.devices(), f.models(), p, history, now + 5 * 60_000);
        assertThat(again.changesPlacement()).isFalse();
        assertThat(again.moves()).isEmpty();
    }

    /**
     * Under load that changes every 30 s for an hour, moves stay bounded: at most
     * maxMovesPerPlan per plan, never the same model twice within the minimum interval, and at
     * most one reversal per model per 10 minutes.
     */
    @Property(tries = 60)
    void movesAreBoundedUnderFluctuatingLoad(@ForAll("fleets") Fleet f, @ForAll long seed,
            @ForAll boolean colocation) {
        PlacementPlanner planner = colocation ? colocating : this.planner;
        java.util.Random r = new java.util.Random(seed);
        Placement p = f.current();
        List<MoveRecord> history = new ArrayList<>();
        for (int step = 1; step <= 120; step++) {
            long now = step * 30_000L;
            List<ModelSpec> models = new ArrayList<>();
            for (ModelSpec m : f.models()) {
                // load flips between two levels at random: the worst case for thrashing
                double load = r.nextBoolean() ? m.load() : m.load() * 0.2;
                models.add(new ModelSpec(m.name(), m.memoryBytes(), load, m.cpuPerInstance(), m.weight(),
                        m.batchMillis(), m.sloMillis()));
            }
            PlacementPlan plan = planner.plan(f.devices(), models, p, history, now);
            assertThat(plan.moves().size()).isLessThanOrEqualTo(settings.maxMovesPerPlan());
            assertWithinLimits(new Fleet(f.devices(), models, p), plan.placement());
            history.addAll(plan.moves());
            p = plan.placement();
        }
        Map<String, List<MoveRecord>> byModel = new TreeMap<>();
        history.forEach(m -> byModel.computeIfAbsent(m.model(), k -> new ArrayList<>()).add(m));
        byModel.forEach((model, moves) -> {
            for (int i = 1; i < moves.size(); i++) {
                assertThat(moves.get(i).atMillis() - moves.get(i - 1).atMillis())
                        .as("interval between moves of %s", model)
                        .isGreaterThanOrEqualTo(settings.minMoveIntervalMillis());
            }
            for (MoveRecord m : moves) {
                long reversalsInWindow = moves.stream().filter(MoveRecord::reversal)
                        .filter(o -> o.atMillis() >= m.atMillis()
                                && o.atMillis() < m.atMillis() + settings.reversalWindowMillis())
                        .count();
                assertThat(reversalsInWindow).as("reversals of %s in 10 min from %d", model, m.atMillis())
                        .isLessThanOrEqualTo(settings.maxReversalsPerWindow());
            }
        });
    }
    private static List<ModelSpec> withoutBatchTimes(List<ModelSpec> models) {
        return models.stream().map(m -> new ModelSpec(m.name(), m.memoryBytes(), m.load(), m.cpuPerInstance(),
                m.weight())).toList();
    }

    private static boolean anyConflict(List<ModelSpec> models) {
        for (ModelSpec a : models) {
            for (ModelSpec b : models) {
                if (a != b && !a.compatibleWith(b)) {
                    return true;
                }
            }
        }
        return false;
    }

    /**
     * SLO co-location off, the planner ignores batch times and SLOs; on, it changes nothing where
     * no two models conflict: the option adds a constraint, not a different planner.
     */
    @Property(tries = 300)
    void colocationChangesAPlanOnlyWhereModelsConflict(@ForAll("fleets") Fleet f, @ForAll boolean colocation) {
        PlacementPlanner off = new PlacementPlanner(settings.withSloColocation(false));
        PlacementPlanner plain = new PlacementPlanner(settings.withSloColocation(colocation));
        PlacementPlan offPlan = off.plan(f.devices(), f.models(), f.current(), List.of(), 0);
        PlacementPlan blind = plain.plan(f.devices(), withoutBatchTimes(f.models()), f.current(), List.of(), 0);
        assertThat(offPlan.placement()).isEqualTo(blind.placement());
        assertThat(offPlan.moves()).isEqualTo(blind.moves());
        if (!anyConflict(f.models())) {
            PlacementPlan on = colocating.plan(f.devices(), f.models(), f.current(), List.of(), 0);
            assertThat(on.placement()).isEqualTo(offPlan.placement());
            assertThat(on.decisions()).isEqualTo(offPlan.decisions());
        }
    }

    /**
     * With SLO co-location, every move of a plan (rebalancing or separating) ends on a device
     * none of whose models the moved one conflicts with, and a separating move never leaves its
     * destination above target x (1 + hysteresis) by its own instance.
     */
    @Property(tries = 300)
    void noMoveEndsInAConflict(@ForAll("fleets") Fleet f) {
        PlacementPlan plan = colocating.plan(f.devices(), f.models(), f.current(), List.of(), 0);
        assertWithinLimits(f, plan.placement());
        Map<String, ModelSpec> byName = new TreeMap<>();
        f.models().forEach(m -> byName.put(m.name(), m));
        for (MoveRecord move : plan.moves()) {
            for (String other : plan.placement().models(move.to())) {
                if (other.equals(move.model())) {
                    continue; // itself: a model's batches queue behind its own whatever the placement
                }
                assertThat(byName.get(move.model()).compatibleWith(byName.get(other)))
                        .as("%s moved to %s next to %s", move.model(), move.to(), other).isTrue();
            }
        }
        assertThat(plan.decisions()).filteredOn(d -> d.reason().contains("cannot both meet their SLOs"))
                .allSatisfy(d -> assertThat(d.action()).isEqualTo("MOVE"));
    }
}
