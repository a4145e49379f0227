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
}
