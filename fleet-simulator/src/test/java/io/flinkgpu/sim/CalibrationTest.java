package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class CalibrationTest {
    @Test
    void thePublishedBertTablesAreFittedClosely() {
        double[] base = Calibration.fit(Calibration.BERT_BASE_128_A100);
        for (double[] p : Calibration.BERT_BASE_128_A100) {
            assertThat(base[0] + base[1] * p[0]).as("batch %s", p[0]).isCloseTo(p[1], within(0.35));
        }
        double[] large = Calibration.fit(Calibration.BERT_LARGE_384_A100);
        assertThat(large[1]).isCloseTo(1.27, within(0.03));
    }

    @Test
    void theDlrmPerSampleCostIsThePublishedLargeBatchSlope() {
        // NVIDIA's Triton DLRM table: 1.379 ms at 1024, 2.730 ms at 4096 samples: about 0.44 us per sample
        double[] fit = Calibration.fit(Calibration.DLRM_V100_TRITON_FP16_LARGE_BATCHES);
        assertThat(fit[1]).isCloseTo(0.00044, within(0.00002));
        Calibration c = Calibration.load(Path.of("..").toAbsolutePath().normalize());
        Calibration.Entry dlrm = c.entries().stream()
                .filter(e -> e.arch() == Arch.DLRM && e.deviceKind().equals("a100")).findFirst().orElseThrow();
        assertThat(dlrm.betaMs()).isEqualTo(fit[1]);
        assertThat(dlrm.source()).contains("DeepLearningExamples", "ASSUMPTION 0.1 ms");
    }

    @Test
    void theCpuTablesComeFromThisProjectsCeilingRuns() {
        Calibration c = Calibration.load(Path.of("..").toAbsolutePath().normalize());
        Calibration.Entry nlp = c.entries().stream()
                .filter(e -> e.arch() == Arch.MINILM_L6 && e.deviceKind().equals("cpu")).findFirst().orElseThrow();
        assertThat(nlp.source()).contains("docs/benchmarks/full/result.json").doesNotContain("not found");
        // milliseconds per sentence on one core (about 5 to 10 in the published full runs, which
        // vary with the machine of the day), far slower than the GPU
        assertThat(nlp.betaMs()).isBetween(2.0, 15.0);
        assertThat(c.speed(Arch.MINILM_L6, "a100").latencyNanos(32, 0))
                .isLessThan(c.speed(Arch.MINILM_L6, "cpu").latencyNanos(32, 0) / 100);
        assertThat(c.entries()).allSatisfy(e -> assertThat(e.source()).isNotBlank());
    }

    @Test
    void aMixedFleetRunsEachKindAtItsOwnSpeed() {
        Workload.Spec spec = Scenarios.spec(4, 0.05, 2);
        FleetConfig c = FleetConfig.of(2, "a100", 20, 5).withKinds(FleetConfig.parseKinds("a100:1,cpu:1"));
        Workload w = Workload.build(spec, 2, Scenarios.CALIBRATION, "a100");
        SimResult r = new FleetSimulator(w, c, Policy.LRU_MEMORY, Scenarios.CALIBRATION).run();
        assertThat(r.conserved()).isTrue();
        assertThat(r.answered()).isPositive();
    }
}
