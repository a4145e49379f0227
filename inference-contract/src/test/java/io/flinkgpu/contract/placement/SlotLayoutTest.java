package io.flinkgpu.contract.placement;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class SlotLayoutTest {

    @Test
    void threeToOneAtFourRunsThreeSubtasksOnDeviceZeroAndOneOnDeviceOne() {
        SlotLayout layout = SlotLayout.of(List.of(3, 1));
        assertThat(layout.slotCounts(4)).containsExactly(3, 1);
        assertThat(layout.assignment(4)).containsExactly(0, 1, 0, 0);
        assertThat(layout.subtasksOf(1, 4)).containsExactly(1);
        assertThat(layout.subtasksOf(0, 4)).containsExactly(0, 2, 3);
        // the way there: each rescale by one keeps every subtask where it was
        assertThat(layout.assignment(1)).containsExactly(0);
        assertThat(layout.assignment(2)).containsExactly(0, 1);
        assertThat(layout.assignment(3)).containsExactly(0, 1, 0);
        assertThat(layout.assignment(8)).startsWith(0, 1, 0, 0);
        assertThat(layout.slotCounts(8)).containsExactly(6, 2);
    }

    @Test
    void everyDeviceGetsASlotBeforeAnyGetsItsProportion() {
        // 10:1 at 11: the small device's quota is 1.0, at 3 it is 0.27 but it still gets one
        assertThat(SlotLayout.of(List.of(10, 1)).slotCounts(11)).containsExactly(10, 1);
        assertThat(SlotLayout.of(List.of(10, 1)).slotCounts(3)).containsExactly(2, 1);
        assertThat(SlotLayout.of(List.of(10, 1, 1)).slotCounts(2)).as("fewer slots than devices").containsExactly(2, 0, 0);
        assertThat(SlotLayout.of(List.of(1, 1, 1)).slotCounts(2)).containsExactly(1, 1, 0);
        assertThat(SlotLayout.of(List.of(2.5, 0.5)).slotCounts(6)).containsExactly(5, 1);
    }

    @Test
    void equalWeightsOfAnyValueAreIModDevices() {
        for (SlotLayout layout : List.of(SlotLayout.equal(3), SlotLayout.of(List.of(0.1, 0.1, 0.1)))) {
            assertThat(layout.isUniform()).isTrue();
            assertThat(layout.assignment(7)).containsExactly(0, 1, 2, 0, 1, 2, 0);
        }
        assertThat(SlotLayout.of(List.of(2, 1)).isUniform()).isFalse();
    }

    @Test
    void weightsMustBeFinitePositiveNumbers() {
        assertThatThrownBy(() -> SlotLayout.of(List.of())).hasMessageContaining("at least one");
        assertThatThrownBy(() -> SlotLayout.of(List.of(1.0, 0.0))).hasMessageContaining("device 1 has weight 0.0");
        assertThatThrownBy(() -> SlotLayout.of(List.of(-1.0))).hasMessageContaining("> 0");
        assertThatThrownBy(() -> SlotLayout.of(List.of(Double.NaN))).hasMessageContaining("finite");
        assertThatThrownBy(() -> SlotLayout.equal(0)).hasMessageContaining("at least one device");
        assertThat(SlotLayout.invalidReason(List.of(1.0, Double.POSITIVE_INFINITY))).contains("device 1");
        assertThat(SlotLayout.invalidReason(List.of(1.0, 2.0))).isNull();
        assertThatThrownBy(() -> SlotLayout.of(List.of(3, 1)).deviceOf(4, 4)).hasMessageContaining("not one of 4");
        assertThat(SlotLayout.describe(SlotLayout.of(List.of(3, 1)).slotCounts(4))).isEqualTo("3:1");
        assertThat(Arrays.stream(SlotLayout.of(List.of(3, 1)).slotCounts(0)).sum()).isZero();
    }
}
