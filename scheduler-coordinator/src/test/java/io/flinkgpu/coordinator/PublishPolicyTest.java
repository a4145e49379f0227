package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PublishPolicyTest {
    private static final List<ModelRoute> ROUTES = route(new RouteTarget(0, 1));

    private final PublishPolicy policy = new PublishPolicy(0.2);

    /** Model m's route over {@code targets}. */
    private static List<ModelRoute> route(RouteTarget... targets) {
        return List.of(new ModelRoute("m", List.of(targets), "r"));
    }

    /** A proposal that keeps {@code placement} as it is. */
    private static PlacementPlan unchanged(Placement placement) {
        return new PlacementPlan(placement, placement, List.of(), List.of(), Map.of(), null);
    }

    @Test
    void theFirstPlanWaitsForAModelToRoute() {
        assertThat(policy.worthPublishing(Optional.empty(), unchanged(Placement.EMPTY), List.of(), 2)).isFalse();
        assertThat(policy.worthPublishing(Optional.empty(), unchanged(Placement.EMPTY), ROUTES, 2)).isTrue();
    }

    @Test
    void aLaterPlanNeedsAChangedPlacementParallelismOrRoute() {
        Placement one = Placement.of(Map.of("m", Set.of("sim:0")));
        Optional<ControlMessage> last = Optional.of(ControlMessage.of(1, 0, 2, ROUTES, List.of(), "initial plan"));
        assertThat(policy.worthPublishing(last, unchanged(one), ROUTES, 2)).as("nothing changed").isFalse();
        assertThat(policy.worthPublishing(last, unchanged(one), ROUTES, 4)).as("rescaled since").isTrue();
        assertThat(policy.worthPublishing(last, new PlacementPlan(Placement.EMPTY, one, List.of(), List.of(),
                Map.of(), null), ROUTES, 2)).as("placement changed").isTrue();
        List<ModelRoute> split = route(new RouteTarget(0, 1), new RouteTarget(1, 1));
        assertThat(policy.worthPublishing(last, unchanged(one), split, 2)).as("route changed").isTrue();
    }

    @Test
    void onlyProportionsOfRoutingWeightsCountAsAChange() {
        List<ModelRoute> one = route(new RouteTarget(0, 0.4));
        List<ModelRoute> oneOther = route(new RouteTarget(0, 0.9));
        assertThat(PublishPolicy.routesChanged(one, oneOther, 0.2)).isFalse();
        List<ModelRoute> two = route(new RouteTarget(0, 0.5), new RouteTarget(1, 0.5));
        List<ModelRoute> twoScaled = route(new RouteTarget(0, 0.2), new RouteTarget(1, 0.2));
        List<ModelRoute> twoSkewed = route(new RouteTarget(0, 0.8), new RouteTarget(1, 0.2));
        assertThat(PublishPolicy.routesChanged(two, twoScaled, 0.2)).isFalse();
        assertThat(PublishPolicy.routesChanged(two, twoSkewed, 0.2)).isTrue();
        assertThat(PublishPolicy.routesChanged(one, two, 0.2)).isTrue();
    }
}
