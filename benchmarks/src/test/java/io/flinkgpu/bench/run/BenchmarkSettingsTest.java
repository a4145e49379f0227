package io.flinkgpu.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.load.ArrivalSchedule;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.load.RequestClasses;
import io.flinkgpu.bench.load.RunSpec;
import io.flinkgpu.bench.sweep.RateSweep;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The modes' sweep plans and the length of their low-load points. */
class BenchmarkSettingsTest {
    /** Classes in the NLP scenario's proportions: 18%, 37%, 35% and 10% of a 100-sample cycle. */
    static final RequestClasses NLP_LIKE = new RequestClasses(List.of("16", "32", "64", "128"), seq -> {
        int i = seq % 100;
        return i < 18 ? 0 : i < 55 ? 1 : i < 90 ? 2 : 3;
    });

    /** A point that met its SLO at {@code rate}. */
    static PointResult passing(double rate) {
        return new PointResult("open", rate, 1, 100, 100, 0, 0, 0, rate, 1, 1, 1, 5, 1, 1, 1, 50, 1.0, true, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, null, List.of(), null, Double.NaN);
    }

    @Test
    void sweepsOfferRatesAboveWhatTwoCoresCarryBeforeTheirPointsRunOut() throws Exception {
        for (BenchmarkSettings settings : List.of(BenchmarkSettings.quick(), BenchmarkSettings.full())) {
            double[] highest = {0};
            // every point passes: the sweep walks the grid until its cap or its point budget ends it
            RateSweep.run(settings.plan(250), rate -> {
                highest[0] = Math.max(highest[0], rate);
                return passing(rate);
            });
            assertThat(highest[0]).as(settings.mode()).isGreaterThan(100_000);
        }
    }

    @Test
    void theFullLowLoadPointHoldsAHundredRequestsOfEveryClass() {
        BenchmarkSettings full = BenchmarkSettings.full();
        for (double rate : new double[] {4, 20, 200}) {
            RunSpec spec = BenchmarkRunner.lowLoadSpec(full, NLP_LIKE, rate);
            long measured = (long) (spec.minWindows() * spec.windowNanos() / 1e9 * rate);
            assertThat(measured).as("at %s req/s", rate).isGreaterThanOrEqualTo(1000);
            // a realised Poisson schedule over the measured span: the rarest class (10%) still has 100
            ArrivalSchedule s = ArrivalSchedule.poisson(rate, spec.minWindows() * spec.windowNanos(), 7);
            long rarest = 0;
            for (int i = 0; i < s.size(); i++) {
                rarest += NLP_LIKE.of(i) == 3 ? 1 : 0;
            }
            assertThat(rarest).as("at %s req/s", rate).isGreaterThanOrEqualTo(100);
        }
        // where the usual point already holds them, it stays as it is
        assertThat(BenchmarkRunner.lowLoadSpec(full, NLP_LIKE, 5_000)).isEqualTo(full.point());
        // no classes: a hundred requests in all
        assertThat(BenchmarkRunner.lowLoadSpec(full, RequestClasses.NONE, 2)).isNotEqualTo(full.point());
        assertThat(BenchmarkRunner.lowLoadSpec(full, RequestClasses.NONE, 20)).isEqualTo(full.point());
        // the quick mode keeps its usual length
        assertThat(BenchmarkRunner.lowLoadSpec(BenchmarkSettings.quick(), NLP_LIKE, 4))
                .isEqualTo(BenchmarkSettings.quick().point());
    }

    @Test
    void requestsForCountsUntilTheRarestClassHasEnough() {
        assertThat(NLP_LIKE.requestsFor(100, 1_000_000)).isEqualTo(1000);
        assertThat(NLP_LIKE.requestsFor(1, 1_000_000)).isEqualTo(91);
        assertThat(NLP_LIKE.requestsFor(100, 500)).isEqualTo(500);
        assertThat(RequestClasses.NONE.requestsFor(100, 1_000_000)).isEqualTo(100);
        assertThat(NLP_LIKE.requestsFor(0, 1_000_000)).isZero();
    }
}
