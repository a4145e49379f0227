package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class PlannerScalingTest {
    @Test
    void thePlannerPlacesAThousandModelsOnSixtyFourDevicesQuickly() {
        PlannerScaling.Point p = PlannerScaling.measure(64, 1000, 8, 0.6, 2, 1);
        assertThat(p.instances()).isPositive().isLessThanOrEqualTo(64 * 8);
        assertThat(p.steadyMedianMs()).isLessThan(5_000); // generous: shared CI cores; the docs run measures it
    }

    @Test
    void theRecoveryReplayDecidesAndRecoversOnTheMeasuredRunsDeviceSpeed() throws Exception {
        Path root = Path.of("..").toAbsolutePath().normalize();
        RecoveryValidation.Measured measured = RecoveryValidation.measured(root.resolve(RecoveryValidation.SOURCE));
        RecoveryValidation.Outcome o = RecoveryValidation.run(Scenarios.CALIBRATION, root, 1, 3);
        assertThat(o.measuredDecisionSeconds()).isEqualTo(measured.decisionSeconds()).isPositive();
        assertThat(o.measuredRecoverySeconds()).isEqualTo(measured.recoverySeconds()).isPositive();
        assertThat(o.measuredWindowP99Ms()).hasSize(120);
        // the published run records the operator's latency fit per cycle: the replay's devices run at it
        assertThat(o.speed()).contains("operator's latency fit");
        assertThat(measured.speed().latencyNanos(1, 0)).isBetween(3_000_000L, 8_000_000L); // about 1 + 4 ms
        assertThat(o.seedDecisionSeconds()).hasSize(3).allSatisfy(d -> assertThat(d).isBetween(0.0, 15.0));
        assertThat(o.simDecisionSeconds()).isEqualTo(RecoveryValidation.median(o.seedDecisionSeconds()));
        assertThat(o.simRecoverySeconds()).isBetween(0.0, 30.0);
        // as the benchmark's job: requests without a deadline queue, so no window fails for expired requests
        assertThat(o.windowFailures().values().stream().mapToLong(Long::longValue).sum()).isZero();
    }

    @Test
    void theReplayBatchesAsTheMeasuredJobDid(@TempDir Path dir) throws Exception {
        Path root = Path.of("..").toAbsolutePath().normalize();
        Path published = root.resolve(RecoveryValidation.SOURCE);
        // the published run predates settings.max_batch_size: its job's cap then, 32
        assertThat(RecoveryValidation.measured(published).maxBatch()).isEqualTo(32);
        assertThat(RecoveryValidation.measured(published).batching()).isEqualTo("batches of up to 32 samples, the "
                + "operator's cap when the run was measured, before runs recorded it");
        ObjectNode run = (ObjectNode) new ObjectMapper().readTree(published.toFile());
        ((ObjectNode) run.path("settings")).put("max_batch_size", 64);
        Path recorded = dir.resolve("recovery.json");
        new ObjectMapper().writeValue(recorded.toFile(), run);
        assertThat(RecoveryValidation.measured(recorded).maxBatch()).isEqualTo(64);
        assertThat(RecoveryValidation.measured(recorded).batching())
                .isEqualTo("batches of up to 64 samples, the largest the measured run recorded");
    }

    @Test
    void theMedianCountsATimeThatNeverCameAsLongerThanAny() {
        assertThat(RecoveryValidation.median(List.of(3.0, 1.0, 2.0))).isEqualTo(2.0);
        assertThat(RecoveryValidation.median(List.of(4.0, 1.0))).isEqualTo(2.5);
        assertThat(RecoveryValidation.median(List.of(Double.NaN, 1.0, 5.0))).isEqualTo(5.0);
        assertThat(RecoveryValidation.median(List.of(Double.NaN, Double.NaN, 5.0))).isNaN();
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
