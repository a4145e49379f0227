package io.flinkgpu.bench.sweep;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.load.PointResult;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class RateSweepTest {
    /** A fake system that meets its SLO up to {@code capacity} requests/s. */
    static PointResult point(double rate, double capacity) {
        boolean pass = rate <= capacity;
        return new PointResult("open", rate, 1, 100, 100, 0, 0, 0, Math.min(rate, capacity), 1, 1, 1,
                pass ? 5 : 500, 1, 1, 1, 50, pass ? 1.0 : 0.5, pass, true, List.of(), 1, 0, 0, List.of(), 1, 0, null, List.of(), null, Double.NaN);
    }

    @Test
    void goodputIsTheHighestPassingRateAndNeverAboveCapacity() throws Exception {
        List<Double> tried = new ArrayList<>();
        RateSweep.Outcome o = RateSweep.run(new RateSweep.Plan(100, 2, 20, 3, 1e9), rate -> {
            tried.add(rate);
            return point(rate, 1000);
        });
        // 100, 200, 400, 800 pass; 1600 fails twice; bisection 3 times between 800 and 1600
        // (each failing bisection point is measured twice too).
        assertThat(tried).startsWith(100.0, 200.0, 400.0, 800.0, 1600.0, 1600.0);
        // three geometric bisections narrow the bracket [800, 1600] to a ratio of 2^(1/8)
        assertThat(o.goodput()).isLessThanOrEqualTo(1000).isGreaterThanOrEqualTo(1000 / Math.pow(2, 1.0 / 8));
        assertThat(o.atGoodput().offered()).isEqualTo(o.goodput());
        assertThat(o.sorted()).isSortedAccordingTo((a, b) -> Double.compare(a.offered(), b.offered()));
    }

    @Test
    void aSingleFailureIsMeasuredAgainAndKeptInTheResults() throws Exception {
        int[] calls = {0};
        RateSweep.Outcome o = RateSweep.run(new RateSweep.Plan(100, 2, 3, 0, 1e9), rate -> {
            calls[0]++;
            // the second point's first measurement fails (a pause), its repeat passes
            return point(rate, calls[0] == 2 ? 150 : 1e9);
        });
        assertThat(o.goodput()).isEqualTo(400.0);
        assertThat(o.points()).hasSize(4);
        assertThat(o.points().stream().filter(p -> !p.pass())).hasSize(1);
    }

    @Test
    void walksDownWhenTheFirstRateAlreadyFails() throws Exception {
        RateSweep.Outcome o = RateSweep.run(new RateSweep.Plan(1000, 2, 10, 0, 1e9), rate -> point(rate, 300));
        assertThat(o.goodput()).isEqualTo(250.0);
    }

    @Test
    void noPassingPointMeansZeroGoodput() throws Exception {
        RateSweep.Outcome o = RateSweep.run(new RateSweep.Plan(1000, 2, 10, 1, 1e9), rate -> point(rate, 1));
        assertThat(o.goodput()).isZero();
        assertThat(o.atGoodput()).isNull();
    }

    @Test
    void stopsAtTheMaximumRateAndPointBudget() throws Exception {
        RateSweep.Outcome o = RateSweep.run(new RateSweep.Plan(100, 2, 3, 2, 1e9), rate -> point(rate, 1e12));
        assertThat(o.points()).hasSize(3);
        assertThat(o.goodput()).isEqualTo(400.0);
        RateSweep.Outcome capped = RateSweep.run(new RateSweep.Plan(100, 2, 30, 2, 1000), rate -> point(rate, 1e12));
        assertThat(capped.goodput()).isEqualTo(800.0);
    }

    @Test
    void aFailedPointBelowAPassingOneDoesNotLowerGoodput() {
        // A noisy failure at a lower rate (e.g. a checkpoint) does not hide a pass above it.
        RateSweep.Outcome o = RateSweep.outcome(List.of(point(100, 1000), point(200, 150), point(400, 1000)));
        assertThat(o.goodput()).isEqualTo(400.0);
    }

    @Test
    void gridFloor() {
        assertThat(RateSweep.gridFloor(100, 2, 900)).isEqualTo(800.0);
        assertThat(RateSweep.gridFloor(100, 2, 800)).isEqualTo(800.0);
        assertThat(RateSweep.gridFloor(100, 2, 50)).isEqualTo(50.0);
    }
}
