package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** The warm-before-route step on plans made by hand: a MOVE, a REPLICATE, the timeout, a rescale, off. */
class WarmRoutingTest {
    private static final List<DeviceSpec> DEVICES = List.of(
            new DeviceSpec("sim:0", 8L << 30, 4, 1, List.of(0)),
            new DeviceSpec("sim:1", 8L << 30, 4, 1, List.of(1)));

    /** The plan step's proposal for a placement change from {@code before} to {@code after}. */
    private static PlacementStep.Proposal proposal(Placement before, Placement after, Decision... decisions) {
        PlacementPlan plan = new PlacementPlan(before, after, List.of(decisions), List.of(),
                Map.of("sim:0", 0.5, "sim:1", 0.2), null);
        return new PlacementStep.Proposal(DEVICES, plan, plan.routes(DEVICES), List.of(decisions), Map.of(), Map.of());
    }

    /** Subtasks 0 and 1, each reporting model m loaded or not. */
    private static MetricSnapshot loaded(boolean onZero, boolean onOne) {
        return new MetricSnapshot(0, "job", "vertex", 2, List.of(subtask(0, onZero), subtask(1, onOne)));
    }

    private static SubtaskSample subtask(int i, boolean loaded) {
        return new SubtaskSample(i, "sim:" + i, 0, 8.0 * (1L << 30), 0.5, 0, 0, 0, List.of(ModelSample.builder("m", "1")
                .counts(0, 0, 0).queuedSamples(0).loaded(loaded ? 1 : 0).build()));
    }

    private static ControlMessage published(long epoch, int parallelism, WarmRouting.Result r) {
        return ControlMessage.of(epoch, 0, parallelism, r.routes(), r.commands(), "test");
    }

    private static List<Integer> subtasks(WarmRouting.Result r, String model) {
        return r.routes().stream().filter(x -> x.model().equals(model)).flatMap(x -> x.targets().stream())
                .map(RouteTarget::subtask).sorted().toList();
    }

    private static List<String> commands(WarmRouting.Result r) {
        List<String> out = new ArrayList<>();
        r.commands().forEach(c -> out.add(c.action() + " " + c.model() + "@" + c.subtask()));
        return out;
    }

    @Test
    void aMovedModelKeepsServingOnItsOldDeviceUntilTheNewOneIsLoadedAndUnloadsThere() {
        WarmRouting warm = new WarmRouting(true, Duration.ofSeconds(30));
        Placement onZero = Placement.of(Map.of("m", Set.of("sim:0")));
        Placement onOne = Placement.of(Map.of("m", Set.of("sim:1")));
        ControlMessage inForce = ControlMessage.of(1, 0, 2,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 0.5)), "held by sim:0")), List.of(), "initial");

        // the MOVE cycle: the planner moves m to sim:1, which has not loaded it yet
        PlacementStep.Proposal move = proposal(onZero, onOne,
                new Decision(0, "MOVE", "m", "sim:1", "m moves sim:0 -> sim:1"));
        WarmRouting.Result first = warm.apply(Optional.of(inForce), move, loaded(true, false), 2, 1_000, false);
        assertThat(subtasks(first, "m")).containsExactly(0);
        assertThat(first.routes().get(0).targets()).containsExactly(new RouteTarget(0, 0.5)); // the weight in force
        assertThat(first.routes().get(0).reason()).contains("warming up on [sim:1]")
                .contains("[sim:0] keep serving it until then (UNLOAD deferred)");
        assertThat(commands(first)).containsExactly("LOAD m@1"); // the planner's UNLOAD m@0 is deferred
        assertThat(first.warming()).isEqualTo(1);
        assertThat(first.decisions()).singleElement().satisfies(d -> {
            assertThat(d.action()).isEqualTo("WARM");
            assertThat(d.device()).isEqualTo("sim:1");
            assertThat(d.reason()).isEqualTo("m@sim:1: LOAD sent, routed once subtask 1 reports it loaded (at most "
                    + "30.0 s, coordinator.plan.warm-timeout); [sim:0] keep serving it until then (UNLOAD deferred)");
        });
        ControlMessage moving = published(2, 2, first);

        // a cycle later, still loading: the same routes, the LOAD repeated, no second WARM
        PlacementStep.Proposal steady = proposal(onOne, onOne);
        WarmRouting.Result second = warm.apply(Optional.of(moving), steady, loaded(true, false), 2, 6_000, false);
        assertThat(second.routes().get(0).targets()).containsExactly(new RouteTarget(0, 0.5));
        assertThat(commands(second)).containsExactly("LOAD m@1");
        assertThat(second.decisions()).isEmpty();
        assertThat(second.commands().get(0).reason()).contains("LOAD repeated while m@sim:1 warms up");

        // loaded on sim:1: routed there only, and the old instance's UNLOAD goes out now
        WarmRouting.Result third = warm.apply(Optional.of(published(2, 2, second)), steady, loaded(true, true), 2,
                11_000, false);
        assertThat(subtasks(third, "m")).containsExactly(1);
        assertThat(commands(third)).containsExactly("UNLOAD m@0");
        assertThat(third.commands().get(0).reason()).contains("deferred UNLOAD: m left sim:0");
        assertThat(third.warming()).isZero();
        assertThat(third.decisions()).singleElement().satisfies(d -> {
            assertThat(d.action()).isEqualTo("ROUTE");
            assertThat(d.reason()).isEqualTo("m@sim:1 routed: subtask 1 reports it loaded after 10.0 s of warm-up");
        });

        // the plan after that has nothing left to defer
        WarmRouting.Result fourth = warm.apply(Optional.of(published(3, 2, third)), steady, loaded(false, true), 2,
                16_000, false);
        assertThat(subtasks(fourth, "m")).containsExactly(1);
        assertThat(fourth.commands()).isEmpty();
    }

    @Test
    void aReplicaIsRoutedAnywayOnceTheTimeoutPassesWithoutAReport() {
        WarmRouting warm = new WarmRouting(true, Duration.ofSeconds(10));
        Placement one = Placement.of(Map.of("m", Set.of("sim:0")));
        Placement two = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
        ControlMessage inForce = ControlMessage.of(1, 0, 2,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 0.5)), "held by sim:0")), List.of(), "initial");
        WarmRouting.Result held = warm.apply(Optional.of(inForce), proposal(one, two), loaded(true, false), 2, 0, false);
        assertThat(subtasks(held, "m")).containsExactly(0);
        assertThat(commands(held)).containsExactly("LOAD m@1");

        ControlMessage replicating = published(2, 2, held);
        WarmRouting.Result waiting = warm.apply(Optional.of(replicating), proposal(two, two), loaded(true, false), 2,
                9_999, false);
        assertThat(subtasks(waiting, "m")).containsExactly(0);
        WarmRouting.Result routed = warm.apply(Optional.of(replicating), proposal(two, two), loaded(true, false), 2,
                10_000, false);
        assertThat(subtasks(routed, "m")).containsExactly(0, 1);
        assertThat(routed.commands()).isEmpty();
        assertThat(routed.decisions()).singleElement().satisfies(d -> assertThat(d.reason())
                .isEqualTo("m@sim:1 routed anyway: subtask 1 did not report it loaded within "
                        + "coordinator.plan.warm-timeout = 10.0 s (waited 10.0 s)"));
    }

    @Test
    void aModelNotRoutedAnywhereYetKeepsHashRoutingUntilALoadIsReported() {
        WarmRouting warm = new WarmRouting(true, Duration.ofSeconds(30));
        Placement onOne = Placement.of(Map.of("m", Set.of("sim:1")));
        WarmRouting.Result r = warm.apply(Optional.empty(), proposal(Placement.EMPTY, onOne), loaded(false, false), 2, 0,
                false);
        assertThat(r.routes()).isEmpty();
        assertThat(commands(r)).containsExactly("LOAD m@1");
        assertThat(r.decisions()).singleElement().satisfies(d -> assertThat(d.reason())
                .endsWith("until then its requests keep the job's hash routing"));
        // the first plan is worth publishing for its LOAD alone
        assertThat(new PublishPolicy(0.2).worthPublishing(Optional.empty(), proposal(Placement.EMPTY, onOne).plan(),
                r.routes(), r.commands(), 2)).isTrue();
    }

    @Test
    void aPlanInForceForAnotherParallelismDoesNotCountAsRouted() {
        WarmRouting warm = new WarmRouting(true, Duration.ofSeconds(30));
        Placement two = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
        ControlMessage oldParallelism = ControlMessage.of(1, 0, 4,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 1), new RouteTarget(1, 1)), "r")), List.of(),
                "before the rescale");
        WarmRouting.Result r = warm.apply(Optional.of(oldParallelism), proposal(two, two), loaded(true, false), 2, 0,
                false);
        assertThat(subtasks(r, "m")).containsExactly(0); // subtask 1 of a 4-way job is not subtask 1 of this one
        assertThat(commands(r)).containsExactly("LOAD m@1");
    }

    @Test
    void dryRunsStartNoWait() {
        WarmRouting warm = new WarmRouting(true, Duration.ofSeconds(10));
        Placement one = Placement.of(Map.of("m", Set.of("sim:0")));
        Placement two = Placement.of(Map.of("m", Set.of("sim:0", "sim:1")));
        ControlMessage inForce = ControlMessage.of(1, 0, 2,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 0.5)), "held by sim:0")), List.of(), "initial");
        warm.apply(Optional.of(inForce), proposal(one, two), loaded(true, false), 2, 0, true);
        // had the dry run started the wait at 0, this would be routed at 10 s
        WarmRouting.Result r = warm.apply(Optional.of(inForce), proposal(one, two), loaded(true, false), 2, 10_000,
                false);
        assertThat(subtasks(r, "m")).containsExactly(0);
        assertThat(r.decisions()).extracting(Decision::action).containsExactly("WARM");
    }

    @Test
    void offPassesTheProposalThroughAndTheOptionsConfigureIt() {
        Placement one = Placement.of(Map.of("m", Set.of("sim:0")));
        Placement moved = Placement.of(Map.of("m", Set.of("sim:1")));
        ControlMessage inForce = ControlMessage.of(1, 0, 2,
                List.of(new ModelRoute("m", List.of(new RouteTarget(0, 0.5)), "held by sim:0")), List.of(), "initial");
        Configuration off = new Configuration();
        off.set(CoordinatorOptions.WARM_BEFORE_ROUTE, false);
        PlacementStep.Proposal p = proposal(one, moved);
        WarmRouting.Result r = WarmRouting.fromConfig(off).apply(Optional.of(inForce), p, loaded(true, false), 2, 0,
                false);
        assertThat(r.routes()).isEqualTo(p.routes());
        assertThat(commands(r)).containsExactlyInAnyOrder("LOAD m@1", "UNLOAD m@0");
        assertThat(r.decisions()).isEmpty();

        assertThat(WarmRouting.fromConfig(new Configuration()).enabled()).isTrue();
        assertThat(CoordinatorOptions.describe(CoordinatorOptions.WARM_BEFORE_ROUTE)).contains("loaded");
        assertThat(CoordinatorOptions.all()).containsKeys("coordinator.plan.warm-before-route",
                "coordinator.plan.warm-timeout");
        assertThatThrownBy(() -> new WarmRouting(true, Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("coordinator.plan.warm-timeout");
    }

    @Test
    void aSampleWithoutTheGaugeIsNotLoaded() {
        assertThat(ModelSample.builder("m", "1").build().reportsLoaded()).isFalse();
        assertThat(ModelSample.builder("m", "1").loaded(1).build().reportsLoaded()).isTrue();
        assertThat(ModelSample.builder("m", "1").loaded(0).build().reportsLoaded()).isFalse();
    }
}
