package io.flinkgpu.bench.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import org.junit.jupiter.api.Test;

class RampAnalysisTest {
    /** 10 s at 100/s, 10 s ramp to 300/s, 10 s peak, 10 s down, 10 s at 100/s. */
    private static final RampProfile PROFILE = new RampProfile(100, 3, List.of(10, 10, 10, 10, 10));

    @Test
    void theProfileRampsLinearlyBetweenItsPhases() {
        assertThat(PROFILE.total()).isEqualTo(50);
        assertThat(PROFILE.names()).containsExactly("1x", "ramp up", "3x", "ramp down", "1x after");
        assertThat(PROFILE.rateAt(5)).isEqualTo(100);
        assertThat(PROFILE.rateAt(15)).isCloseTo(200, within(1e-9));
        assertThat(PROFILE.rateAt(25)).isEqualTo(300);
        assertThat(PROFILE.rateAt(37.5)).isCloseTo(150, within(1e-9));
        assertThat(PROFILE.rateAt(45)).isEqualTo(100);
        assertThat(PROFILE.phaseAt(9.999)).isZero();
        assertThat(PROFILE.phaseAt(10)).isEqualTo(1);
        assertThat(PROFILE.phaseAt(49)).isEqualTo(4);
        assertThat(PROFILE.phaseStart(5)).isEqualTo(50);
    }

    @Test
    void aProfileWithoutFivePositivePhasesOrABaseRateIsRefused() {
        assertThatThrownBy(() -> new RampProfile(100, 3, List.of(10, 10, 10, 10)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RampProfile(100, 3, List.of(10, 0, 10, 10, 10)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RampProfile(0, 3, List.of(10, 10, 10, 10, 10)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new RampProfile(100, 0.5, List.of(10, 10, 10, 10, 10)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void attainmentCountsPerPhaseAndMissesUnansweredAndSlowRequests() {
        // phase 0: 4 requests, one slow; phase 2: 2, one unanswered (NaN); phase 4: 1 in SLO; one outside the run
        double[] t = {0.5, 1, 2, 9.9, 20, 29, 45, 50.5};
        double[] latency = {10, 20, 151, 149, 100, Double.NaN, 1, 1};
        List<RampAnalysis.PhaseAttainment> a = RampAnalysis.attainment(PROFILE, t, latency, 150);
        assertThat(a).hasSize(6);
        assertThat(a.get(0).sent()).isEqualTo(4);
        assertThat(a.get(0).withinSlo()).isEqualTo(3);
        assertThat(a.get(0).attainment()).isEqualTo(0.75);
        assertThat(a.get(1).sent()).isZero();
        assertThat(a.get(1).attainment()).isNaN();
        assertThat(a.get(2).attainment()).isEqualTo(0.5);
        assertThat(a.get(2).phase()).isEqualTo("3x");
        assertThat(a.get(4).attainment()).isEqualTo(1.0);
        assertThat(a.get(5).phase()).isEqualTo("overall");
        assertThat(a.get(5).sent()).isEqualTo(7);
        assertThat(a.get(5).withinSlo()).isEqualTo(5);
    }

    @Test
    void oneScaleOutAndOneScaleInIsOneReversal() {
        double[] t = {0, 1, 2, 3, 4, 5};
        List<RampAnalysis.Change> changes = RampAnalysis.changes(t, new int[] {1, 1, 2, 2, 1, 1});
        assertThat(changes).containsExactly(new RampAnalysis.Change(2, 1, 2), new RampAnalysis.Change(4, 2, 1));
        assertThat(RampAnalysis.reversals(changes)).isEqualTo(1);
    }

    @Test
    void flappingCountsEveryChangeOfDirection() {
        double[] t = {0, 1, 2, 3, 4, 5, 6, 7};
        // up, down, up, up, down, down: 3 reversals (up->down, down->up, up->down)
        assertThat(RampAnalysis.reversals(RampAnalysis.changes(t, new int[] {1, 2, 1, 2, 3, 2, 1, 1}))).isEqualTo(3);
        // only up: none
        assertThat(RampAnalysis.reversals(RampAnalysis.changes(t, new int[] {1, 1, 2, 2, 3, 3, 3, 3}))).isZero();
        assertThat(RampAnalysis.reversals(List.of())).isZero();
    }

    @Test
    void theFirstViolationIsSearchedFromTheGivenWindow() {
        boolean[] v = {true, false, false, true, false};
        assertThat(RampAnalysis.firstViolation(v, 0)).isZero();
        assertThat(RampAnalysis.firstViolation(v, 1)).isEqualTo(3);
        assertThat(RampAnalysis.firstViolation(v, 4)).isEqualTo(-1);
    }

    @Test
    void replicasCountTheTargetsWithWeight() {
        assertThat(RampAnalysis.replicas("0:1.000")).isEqualTo(1);
        assertThat(RampAnalysis.replicas("0:0.500,1:0.500")).isEqualTo(2);
        assertThat(RampAnalysis.replicas("0:1.000,1:0.000")).isEqualTo(1);
    }
}
