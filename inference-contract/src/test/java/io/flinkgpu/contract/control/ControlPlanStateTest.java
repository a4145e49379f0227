package io.flinkgpu.contract.control;

import static io.flinkgpu.contract.control.ControlMessageCodecTest.plan;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class ControlPlanStateTest {
    @Test
    void appliesOnlyPlansNewerThanTheCurrentOne() {
        ControlPlanState state = new ControlPlanState();
        assertThat(state.offer(ControlMessageCodec.encode(plan(5)))).isEqualTo(ControlPlanState.Outcome.APPLIED);
        assertThat(state.offer(ControlMessageCodec.encode(plan(4)))).isEqualTo(ControlPlanState.Outcome.STALE);
        assertThat(state.offer(ControlMessageCodec.encode(plan(5)))).isEqualTo(ControlPlanState.Outcome.STALE);
        assertThat(state.currentEpoch()).isEqualTo(5);
        assertThat(state.offer(ControlMessageCodec.encode(plan(6)))).isEqualTo(ControlPlanState.Outcome.APPLIED);
        assertThat(state.currentEpoch()).isEqualTo(6);
        assertThat(state.appliedCount()).isEqualTo(2);
        assertThat(state.staleCount()).isEqualTo(2);
    }

    @Test
    void invalidRecordIsCountedAndLeavesTheCurrentPlanInForce() {
        ControlPlanState state = new ControlPlanState(plan(2));
        assertThat(state.offer(("{\"schema_version\":1,\"epoch\":9,\"routes\":[{\"model\":\"a\",\"targets\":"
                + "[{\"subtask\":0,\"weight\":-1}]}]}").getBytes(StandardCharsets.UTF_8)))
                .isEqualTo(ControlPlanState.Outcome.INVALID);
        assertThat(state.offer((byte[]) null)).isEqualTo(ControlPlanState.Outcome.INVALID);
        assertThat(state.invalidCount()).isEqualTo(2);
        assertThat(state.current()).isEqualTo(plan(2));
    }

    @Test
    void restoredPlanSetsTheEpochFloor() {
        ControlPlanState state = new ControlPlanState(plan(10));
        assertThat(state.offer(plan(9))).isEqualTo(ControlPlanState.Outcome.STALE);
        assertThat(state.current().epoch()).isEqualTo(10);
    }
}
