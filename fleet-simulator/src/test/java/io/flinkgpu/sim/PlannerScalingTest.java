package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PlannerScalingTest {
    @Test
    void thePlannerPlacesAThousandModelsOnSixtyFourDevicesQuickly() {
        PlannerScaling.Point p = PlannerScaling.measure(64, 1000, 8, 0.6, 2, 1);
        assertThat(p.instances()).isPositive().isLessThanOrEqualTo(64 * 8);
        assertThat(p.steadyMedianMs()).isLessThan(5_000); // generous: shared CI cores; the docs run measures it
    }

    @Test
    void theRecoveryReplayDecidesAndRecovers() throws Exception {
        RecoveryValidation.Outcome o = RecoveryValidation.run(Scenarios.CALIBRATION,
                Path.of("..").toAbsolutePath().normalize(), 1);
        assertThat(o.measuredDecisionSeconds()).isEqualTo(1.873);
        assertThat(o.measuredRecoverySeconds()).isEqualTo(3.0);
        assertThat(o.simDecisionSeconds()).isBetween(0.0, 10.0);
        assertThat(o.simRecoverySeconds()).isBetween(0.0, 30.0);
        // as the benchmark's job: requests without a deadline queue, so no window fails for expired requests
        assertThat(o.windowFailures().values().stream().mapToLong(Long::longValue).sum()).isZero();
    }

    @Test
    void aWindowIsInSloOnlyWithAnswersWithinTheSloAndNoFailures() {
        Map<Integer, Double> p99 = Map.of(1, 100.0, 2, 151.0, 4, 20.0);
        Map<Integer, Long> failures = Map.of(4, 1L);
        assertThat(RecoveryValidation.inSlo(1, p99, failures)).isTrue();
        assertThat(RecoveryValidation.inSlo(2, p99, failures)).isFalse(); // p99 over the SLO
        assertThat(RecoveryValidation.inSlo(3, p99, failures)).isFalse(); // no answers: as the benchmark judges it
        assertThat(RecoveryValidation.inSlo(4, p99, failures)).isFalse(); // a failed request
    }
}
