package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class WorkloadTest {
    @Test
    void gammaInterArrivalsHaveTheRequestedCoefficientOfVariation() {
        for (double cv : new double[] {1, 2, 4, 8}) {
            SplittableRandom rnd = new SplittableRandom(5);
            int n = 200_000;
            double sum = 0;
            double sq = 0;
            for (int i = 0; i < n; i++) {
                double g = Workload.gamma(rnd, cv);
                sum += g;
                sq += g * g;
            }
            double mean = sum / n;
            double sd = Math.sqrt(sq / n - mean * mean);
            assertThat(mean).as("mean, cv %s", cv).isCloseTo(1.0, within(0.05 * cv));
            assertThat(sd / mean).as("cv %s", cv).isCloseTo(cv, within(0.15 * cv));
        }
    }

    @Test
    void arrivalsFollowTheMeanRateAndTheDiurnalCurve() {
        Workload.Spec spec = new Workload.Spec(1, 1, "poisson", 1, 0.8, 100, 0, 1, new double[] {0, 0, 0, 0, 1}, 0,
                1, 9);
        Workload w = Workload.build(spec, 1, Scenarios.CALIBRATION, "a100");
        SimModel m = w.models().get(0);
        Workload.Arrivals a = w.arrivals(m);
        int trough = 0;
        int peak = 0;
        int total = 0;
        double t;
        while ((t = a.next()) < 100) {
            total++;
            if (t < 10 || t >= 90) {
                trough++;
            } else if (t >= 40 && t < 60) {
                peak++;
            }
        }
        assertThat(total / 100.0).isCloseTo(m.meanRate(), within(0.05 * m.meanRate()));
        // 1 - 0.8 cos: about 0.2 at the ends of the period, 1.8 in the middle
        assertThat((double) peak / trough).isGreaterThan(4);
    }

    @Test
    void popularityIsZipfAndTheCatalogueComesFromTheSeed() {
        Workload.Spec spec = Scenarios.spec(100, 0.5, 3);
        Workload a = Workload.build(spec, 8, Scenarios.CALIBRATION, "a100");
        Workload b = Workload.build(spec, 8, Scenarios.CALIBRATION, "a100");
        Workload c = Workload.build(spec.withSeed(4), 8, Scenarios.CALIBRATION, "a100");
        assertThat(a.models()).isEqualTo(b.models());
        assertThat(a.models()).isNotEqualTo(c.models());
        List<Double> rates = new ArrayList<>();
        a.models().forEach(m -> rates.add(m.meanRate()));
        assertThat(rates.get(0) / rates.get(9)).isCloseTo(10.0, within(1e-6));
        assertThat(a.models()).anyMatch(SimModel::latencyBound).anyMatch(m -> !m.latencyBound());
        // the offered load: sum of rate x cost = load x devices
        double load = 0;
        for (SimModel m : a.models()) {
            load += m.meanRate() * Workload.requestCostSeconds(m.arch(), Scenarios.CALIBRATION, "a100");
        }
        assertThat(load).isCloseTo(0.5 * 8, within(1e-6));
    }

    @Test
    void invalidSpecsAreRefused() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Workload.Spec(10, 1, "uniform", 1, 0, 1, 0, 1,
                new double[] {1, 1, 1, 1, 1}, 0, 1, 1)).isInstanceOf(IllegalArgumentException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new Workload.Spec(10, 1, "gamma", 1, 0.99, 1, 0, 1,
                new double[] {1, 1, 1, 1, 1}, 0, 1, 1)).isInstanceOf(IllegalArgumentException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> FleetConfig.parseKinds("a100"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
