package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
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
    }
}
