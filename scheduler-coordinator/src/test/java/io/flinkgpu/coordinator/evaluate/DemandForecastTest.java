package io.flinkgpu.coordinator.evaluate;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The forecast step: a significant rising trend raises the demand ahead of a ramp; noise and falls change nothing. */
class DemandForecastTest {
    static Demand demand(long atMillis, double deviceSeconds) {
        return new Demand(atMillis, 2, Map.of("m", new ModelDemand("m", "1", deviceSeconds * 1000, 8, deviceSeconds,
                1L << 20, 100, 10, Set.of(), "measured")), Map.of());
    }

    @Test
    void aSteadyRampIsPlannedForAheadOfTheMeasurement() {
        DemandForecast f = new DemandForecast(15, 60, 3);
        Demand last = null;
        for (int i = 0; i < 20; i++) {
            // +0.02 device-s/s every 2 s: +0.15 over the 15 s horizon
            last = f.apply(demand(i * 2000L, 0.2 + 0.02 * i), true);
        }
        ModelDemand m = last.models().get("m");
        double measured = 0.2 + 0.02 * 19;
        assertThat(m.deviceSecondsPerSecond()).isBetween(measured + 0.1, measured + 0.2);
        assertThat(m.ratePerSecond() / m.deviceSecondsPerSecond()).isCloseTo(1000, org.assertj.core.data.Offset.offset(1e-6));
        assertThat(m.reason()).contains("forecast");
    }

    @Test
    void noiseOnASteadyLoadAndFallingLoadsAreLeftAsMeasured() {
        DemandForecast f = new DemandForecast(15, 60, 3);
        Random random = new Random(42);
        int raised = 0;
        for (int i = 0; i < 300; i++) {
            double x = 0.5 * (1 + 0.2 * random.nextGaussian());
            ModelDemand m = f.apply(demand(i * 2000L, x), true).models().get("m");
            raised += m.deviceSecondsPerSecond() > x ? 1 : 0;
        }
        // the slope's t test over a 60-s window: noise that lines up for a cycle or two does not pass it
        assertThat(raised).isLessThanOrEqualTo(2);
        DemandForecast falling = new DemandForecast(15, 60, 3);
        for (int i = 0; i < 20; i++) {
            double x = 1.0 - 0.03 * i;
            assertThat(falling.apply(demand(i * 2000L, x), true).models().get("m").deviceSecondsPerSecond()).isEqualTo(x);
        }
    }

    @Test
    void aZeroHorizonTurnsItOffAndDryRunsLearnNothing() {
        DemandForecast off = new DemandForecast(0, 60, 2);
        Demand d = demand(0, 0.3);
        assertThat(off.apply(d, true)).isSameAs(d);
        DemandForecast f = new DemandForecast(15, 60, 3);
        for (int i = 0; i < 10; i++) {
            f.apply(demand(i * 2000L, 0.2 + 0.05 * i), false);
        }
        assertThat(f.trend("m").samples()).isZero();
    }

    @Test
    void theFirstCollectionsAfterAStartNeverRaiseHoweverSteepTheirRise() {
        // a fresh coordinator's first rates are the noisiest (short, aliased intervals): five collections
        // (here 20 s apart in all), or more within less than a quarter of the window, fit any slope and
        // must not add a replica
        DemandForecast f = new DemandForecast(15, 60, 3);
        for (int i = 0; i < DemandForecast.MIN_SAMPLES - 1; i++) {
            double x = 0.2 + 0.1 * i;
            assertThat(f.apply(demand(i * 5000L, x), true).models().get("m").deviceSecondsPerSecond()).isEqualTo(x);
        }
        DemandForecast quick = new DemandForecast(15, 60, 3);
        for (int i = 0; i < 10; i++) { // 10 collections 1 s apart: 9 s < 15 s, a quarter of the window
            double x = 0.2 + 0.05 * i;
            assertThat(quick.apply(demand(i * 1000L, x), true).models().get("m").deviceSecondsPerSecond()).isEqualTo(x);
        }
        // once the window holds enough, the same rise is planned for ahead of it
        ModelDemand later = null;
        for (int i = 10; i < 20; i++) {
            later = quick.apply(demand(i * 1000L, 0.2 + 0.05 * i), true).models().get("m");
        }
        assertThat(later.deviceSecondsPerSecond()).isCloseTo(0.2 + 0.05 * 19 + 0.05 * 15,
                org.assertj.core.data.Offset.offset(1e-6));
        assertThat(later.reason()).contains("t = ");
    }

    /** Collections one second apart, from 0 s, with these values. */
    private static java.util.ArrayDeque<double[]> oneASecond(double... xs) {
        java.util.ArrayDeque<double[]> w = new java.util.ArrayDeque<>();
        for (int i = 0; i < xs.length; i++) {
            w.add(new double[] {i, xs[i]});
        }
        return w;
    }

    @Test
    void theSlopesTStatisticIsTheFitsOwn() {
        // x = 1, 2, 4, 3 at t = 0..3 s: slope 0.8 per s, the line at 3 s 3.7, residuals -0.3, -0.1, 1.1, -0.7
        // (ssr 1.8, sum of squared time deviations 5), t = 0.8 / sqrt(1.8 / (4 - 2) / 5)
        java.util.ArrayDeque<double[]> w = oneASecond(1, 2, 4, 3);
        DemandForecast.Trend t = DemandForecast.fit(w);
        assertThat(t.slope()).isCloseTo(0.8, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(t.levelNow()).isCloseTo(3.7, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(t.t()).isCloseTo(0.8 / Math.sqrt(1.8 / 2 / 5), org.assertj.core.data.Offset.offset(1e-9));
    }

    @Test
    void aDeviceServingARaisedModelGetsAForecastRateAndOthersNone() {
        DemandForecast f = new DemandForecast(15, 60, 3);
        Demand last = null;
        for (int i = 0; i < 20; i++) {
            double m = 0.2 + 0.02 * i;
            // sim:0 takes 3/4 of m and 5/s of a steady model s; sim:1 only s
            Map<String, DeviceLoad> devices = Map.of(
                    "sim:0", new DeviceLoad("sim:0", java.util.List.of(0), 1, 0, 0.3, 0.5, 0, 0.5,
                            m * 750 + 5, Map.of("m", m * 750, "s", 5.0), Double.NaN),
                    "sim:1", new DeviceLoad("sim:1", java.util.List.of(1), 1, 0, 0.3, 0.1, 0, 0.1, 5,
                            Map.of("s", 5.0), Double.NaN));
            last = f.apply(new Demand(i * 2000L, 2, Map.of(
                    "m", new ModelDemand("m", "1", m * 1000, 8, m, 1L << 20, 100, 10, Set.of(), "measured"),
                    "s", new ModelDemand("s", "1", 10, 8, 0.01, 1L << 20, 100, 10, Set.of(), "measured")),
                    devices), true);
        }
        ModelDemand m = last.models().get("m");
        double scale = m.deviceSecondsPerSecond() / (0.2 + 0.02 * 19);
        assertThat(scale).as("m is raised").isGreaterThan(1.1);
        DeviceLoad sim0 = last.devices().get("sim:0");
        assertThat(sim0.forecastRatePerSecond()).as("its share of m scaled as m's demand, s as measured")
                .isCloseTo((0.2 + 0.02 * 19) * 750 * scale + 5, org.assertj.core.data.Offset.offset(1e-6));
        assertThat(sim0.inputRatePerSecond()).isCloseTo((0.2 + 0.02 * 19) * 750 + 5,
                org.assertj.core.data.Offset.offset(1e-9));
        assertThat(last.devices().get("sim:1").forecastRatePerSecond()).as("serves no raised model").isNaN();
    }

    @Test
    void measurementsThatAreMeansOverOverlappingSpansWidenTheSlopesError() {
        // 2-s collections of a 10-s mean: five collections share each request, so the fit's own error is
        // widened by sqrt(10 / 2); a window under two spans (20 s) says nothing
        java.util.ArrayDeque<double[]> w = new java.util.ArrayDeque<>();
        Random random = new Random(3);
        for (int i = 0; i < 16; i++) {
            w.add(new double[] {2.0 * i, 0.5 + 0.001 * i + 0.01 * random.nextGaussian()});
        }
        DemandForecast.Trend independent = DemandForecast.fit(w, 0);
        DemandForecast.Trend overlapping = DemandForecast.fit(w, 10);
        assertThat(overlapping.slope()).isEqualTo(independent.slope());
        assertThat(overlapping.t()).isCloseTo(independent.t() / Math.sqrt(5), org.assertj.core.data.Offset.offset(1e-9));
        java.util.ArrayDeque<double[]> shorter = new java.util.ArrayDeque<>();
        for (int i = 0; i < 10; i++) { // 18 s < 2 x 10 s
            shorter.add(new double[] {2.0 * i, 0.5 + 0.05 * i});
        }
        assertThat(DemandForecast.fit(shorter, 10).t()).isZero();
        assertThat(DemandForecast.fit(shorter, 0).t()).isPositive();
    }

    @Test
    void aSlopeIsPlannedForAtItsLowerConfidenceBound() {
        // the line of theSlopesTStatisticIsTheFitsOwn: slope 0.8, t = 0.8 / se, through the centroid (1.5 s, 2.5)
        java.util.ArrayDeque<double[]> w = oneASecond(1, 2, 4, 3);
        DemandForecast.Trend t = DemandForecast.fit(w);
        double se = Math.sqrt(1.8 / 2 / 5);
        assertThat(t.confidentSlope(1)).isCloseTo(0.8 - se, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(t.confidentLevelNow(1)).as("at the newest point, through the centroid")
                .isCloseTo(2.5 + (0.8 - se) * 1.5, org.assertj.core.data.Offset.offset(1e-12));
        assertThat(t.confidentLevelNow(0)).isCloseTo(t.levelNow(), org.assertj.core.data.Offset.offset(1e-12));
        assertThat(t.confidentSlope(t.t() + 0.01)).as("not significant").isZero();
    }

    @Test
    void aSteadyNoisyLoadTestedEveryCycleIsNeverRaisedFarPastItsNoise() {
        // one collection a second over a 20-s window with a 60-s horizon: over an hour, some fit passes a
        // t test of 3 by chance; planned at its fitted slope it would raise the demand by several noise
        // deviations (slope x 60 s), at its lower bound it barely moves it
        DemandForecast f = new DemandForecast(60, 20, 3);
        Random random = new Random(11);
        double sigma = 0.05;
        double worst = 0;
        for (int i = 0; i < 3600; i++) {
            double x = 0.5 + sigma * random.nextGaussian();
            worst = Math.max(worst, f.apply(demand(i * 1000L, x), true).models().get("m").deviceSecondsPerSecond() - x);
        }
        assertThat(worst).isLessThan(2 * sigma);
    }
}
