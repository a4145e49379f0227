package io.flinkgpu.bench.coordinator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.plan.Decision;
import java.util.List;
import org.junit.jupiter.api.Test;

class RolloutAnalysisTest {
    private static Decision d(long at, String action) {
        return new Decision(at, action, "m", "", action.toLowerCase());
    }

    @Test
    void aGoodRolloutTakesTheTimeFromStartToDone() {
        List<Decision> timeline = List.of(d(1_000, "ROLLOUT_START"), d(12_000, "ROLLOUT_PROMOTE"),
                d(23_000, "ROLLOUT_PROMOTE"), d(34_500, "ROLLOUT_DONE"));
        assertThat(RolloutAnalysis.timeToDone(timeline)).isEqualTo(33.5);
        assertThat(RolloutAnalysis.timeToRollback(timeline)).isNaN();
        assertThat(RolloutAnalysis.rolledBackStep(timeline)).isEqualTo(-1);
    }

    @Test
    void theRollbackIsTimedFromTheBeginningOfTheStepItEnded() {
        // rolled back in the third step (two promotions before): timed from the second promotion
        List<Decision> timeline = List.of(d(1_000, "ROLLOUT_START"), d(12_000, "ROLLOUT_PROMOTE"),
                d(23_000, "ROLLOUT_PROMOTE"), d(30_250, "ROLLOUT_ROLLBACK"));
        assertThat(RolloutAnalysis.timeToRollback(timeline)).isEqualTo(7.25);
        assertThat(RolloutAnalysis.rolledBackStep(timeline)).isEqualTo(2);
        assertThat(RolloutAnalysis.timeToDone(timeline)).isNaN();
    }

    @Test
    void aRollbackFromTheFirstStepIsTimedFromTheStart() {
        List<Decision> timeline = List.of(d(5_000, "ROLLOUT_START"), d(16_000, "ROLLOUT_ROLLBACK"));
        assertThat(RolloutAnalysis.timeToRollback(timeline)).isEqualTo(11.0);
        assertThat(RolloutAnalysis.rolledBackStep(timeline)).isZero();
    }

    @Test
    void aRollbackFromTheFirstStepAfterWarmingIsTimedFromTheEndOfTheWarming() {
        List<Decision> timeline = List.of(d(5_000, "ROLLOUT_START"), d(6_000, "ROLLOUT_WARM"),
                d(9_500, "ROLLOUT_WARMED"), d(16_000, "ROLLOUT_ROLLBACK"));
        assertThat(RolloutAnalysis.timeToRollback(timeline)).isEqualTo(6.5);
        assertThat(RolloutAnalysis.rolledBackStep(timeline)).isZero();
    }

    @Test
    void aResumeOrResetStartsTheStepsSamplesAgain() {
        List<Decision> timeline = List.of(d(0, "ROLLOUT_START"), d(2_000, "ROLLOUT_PAUSE"), d(10_000, "ROLLOUT_RESUME"),
                d(14_000, "ROLLOUT_ROLLBACK"), d(20_000, "ROLLOUT_FORGET"));
        assertThat(RolloutAnalysis.timeToRollback(timeline)).isEqualTo(4.0);
        List<Decision> reset = List.of(d(0, "ROLLOUT_START"), d(3_000, "ROLLOUT_RESET"), d(9_000, "ROLLOUT_ROLLBACK"));
        assertThat(RolloutAnalysis.timeToRollback(reset)).isEqualTo(6.0);
    }

    @Test
    void aRollbackWithoutAStepBeforeItHasNoTime() {
        assertThat(RolloutAnalysis.timeToRollback(List.of(d(9_000, "ROLLOUT_ROLLBACK")))).isNaN();
        assertThat(RolloutAnalysis.timeToRollback(List.of())).isNaN();
    }
}
