package io.flinkgpu.inference.control;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class RoutingTableTest {
    @Test
    void spreadsRequestsInProportionToWeights() {
        ControlMessage plan = ControlMessage.of(1, 0, 4, List.of(new ModelRoute("m",
                List.of(new RouteTarget(0, 3), new RouteTarget(2, 1)), "r")), List.of(), "test");
        RoutingTable table = new RoutingTable(plan, 4);
        Map<Integer, Integer> counts = new HashMap<>();
        for (int i = 0; i < 400; i++) {
            counts.merge(table.select("m"), 1, Integer::sum);
        }
        assertThat(counts).containsOnly(Map.entry(0, 300), Map.entry(2, 100));
    }

    @Test
    void smoothRoundRobinNeverSendsMoreThanTheWeightInARow() {
        ControlMessage plan = ControlMessage.of(1, 0, 2, List.of(new ModelRoute("m",
                List.of(new RouteTarget(0, 1), new RouteTarget(1, 1)), "r")), List.of(), "test");
        RoutingTable table = new RoutingTable(plan, 2);
        int previous = table.select("m");
        for (int i = 0; i < 20; i++) {
            int next = table.select("m");
            assertThat(next).isNotEqualTo(previous);
            previous = next;
        }
    }

    @Test
    void unknownModelsAndTargetsBeyondTheParallelismHaveNoRoute() {
        ControlMessage plan = ControlMessage.of(1, 0, 8, List.of(
                new ModelRoute("m", List.of(new RouteTarget(5, 1), new RouteTarget(1, 1)), "r"),
                new ModelRoute("far", List.of(new RouteTarget(6, 1)), "r")), List.of(), "test");
        RoutingTable table = new RoutingTable(plan, 2);
        for (int i = 0; i < 5; i++) {
            assertThat(table.select("m")).isEqualTo(1);
        }
        assertThat(table.select("far")).isEqualTo(RoutingTable.NO_ROUTE);
        assertThat(table.select("other")).isEqualTo(RoutingTable.NO_ROUTE);
        assertThat(new RoutingTable(null, 2).select("m")).isEqualTo(RoutingTable.NO_ROUTE);
    }

    static ControlMessage twoTargets(double w0, double w1) {
        return ControlMessage.of(1, 0, 3, List.of(new ModelRoute("m",
                List.of(new RouteTarget(0, w0), new RouteTarget(2, w1)), "r")), List.of(), "test");
    }

    @Test
    void queueAwareSelectionPicksTheFewestOutstandingWhateverTheWeights() {
        RoutingTable table = new RoutingTable(twoTargets(1, 1), 3);
        long[] outstanding = {5, 0, 2};
        for (int i = 0; i < 10; i++) {
            assertThat(table.select("m", s -> outstanding[s])).isEqualTo(2);
        }
        outstanding[2] = 9;
        assertThat(table.select("m", s -> outstanding[s])).isEqualTo(0);
        // weight 3 against 1 (the coordinator's headroom): the counts alone decide
        RoutingTable weighted = new RoutingTable(twoTargets(3, 1), 3);
        long[] queues = {4, 0, 3};
        for (int i = 0; i < 8; i++) {
            assertThat(weighted.select("m", s -> queues[s])).isEqualTo(2);
        }
        queues[2] = 5;
        assertThat(weighted.select("m", s -> queues[s])).isEqualTo(0);
        assertThat(table.select("other", s -> 0)).isEqualTo(RoutingTable.NO_ROUTE);
    }

    @Test
    void queueAwareTiesAndUnknownCountsFollowTheWeights() {
        // all idle: every choice is a tie, so the round robin's proportions hold exactly
        RoutingTable idle = new RoutingTable(twoTargets(3, 1), 3);
        Map<Integer, Integer> counts = new HashMap<>();
        for (int i = 0; i < 400; i++) {
            counts.merge(idle.select("m", s -> 0), 1, Integer::sum);
        }
        assertThat(counts).containsOnly(Map.entry(0, 300), Map.entry(2, 100));
        // a target whose count is unknown (not on this JVM's board): the round robin alone, even
        // where the known one is empty
        RoutingTable partial = new RoutingTable(twoTargets(1, 1), 3);
        RoutingTable plain = new RoutingTable(twoTargets(1, 1), 3);
        for (int i = 0; i < 20; i++) {
            assertThat(partial.select("m", s -> s == 0 ? 0 : QueueBoard.UNKNOWN)).isEqualTo(plain.select("m"));
        }
    }
}
