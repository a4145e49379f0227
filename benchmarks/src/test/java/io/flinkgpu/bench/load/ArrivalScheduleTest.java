package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Random;
import org.junit.jupiter.api.Test;

class ArrivalScheduleTest {
    @Test
    void poissonGapsHaveTheMeanAndSpreadOfAnExponential() {
        double rate = 2000;
        ArrivalSchedule s = ArrivalSchedule.poisson(rate, 50_000_000_000L, 1); // 50 s -> ~100k arrivals
        int n = s.size();
        assertThat(n).isBetween(98_000, 102_000);
        double sum = 0;
        double sumSq = 0;
        long previous = 0;
        for (int i = 0; i < n; i++) {
            long gap = s.offset(i) - previous;
            assertThat(gap).isGreaterThanOrEqualTo(0);
            sum += gap;
            sumSq += (double) gap * gap;
            previous = s.offset(i);
        }
        double mean = sum / n;
        double sd = Math.sqrt(sumSq / n - mean * mean);
        assertThat(mean).isCloseTo(1e9 / rate, within(0.02 * 1e9 / rate));
        // Exponential: standard deviation equals the mean (coefficient of variation 1).
        assertThat(sd / mean).isCloseTo(1.0, within(0.03));
    }

    @Test
    void scheduleIsFixedInAdvanceAndReproducible() {
        ArrivalSchedule a = ArrivalSchedule.poisson(500, 1_000_000_000L, 42);
        ArrivalSchedule b = ArrivalSchedule.poisson(500, 1_000_000_000L, 42);
        assertThat(a.size()).isEqualTo(b.size());
        for (int i = 0; i < a.size(); i++) {
            assertThat(a.offset(i)).isEqualTo(b.offset(i));
            assertThat(a.offset(i)).isLessThan(1_000_000_000L);
        }
    }

    @Test
    void aSteppedRateStartsAtTheStartAndChangesAtTheStep() {
        long second = 1_000_000_000L;
        ArrivalSchedule.Rate rate = ArrivalSchedule.Rate.step(1000, 3000, 20 * second);
        ArrivalSchedule s = ArrivalSchedule.poisson(rate, 40 * second, new Random(42));
        assertThat(s.offset(0)).isZero();
        int before = 0;
        for (int i = 0; i < s.size(); i++) {
            assertThat(s.offset(i)).isLessThan(40 * second);
            before += s.offset(i) < 20 * second ? 1 : 0;
        }
        int after = s.size() - before;
        assertThat(before).isBetween(19_000, 21_000); // ~20,000 at 1,000/s
        assertThat(after).isBetween(57_000, 63_000); // ~60,000 at 3,000/s
        ArrivalSchedule again = ArrivalSchedule.poisson(rate, 40 * second, new Random(42));
        assertThat(again.size()).isEqualTo(s.size());
        assertThat(again.offset(s.size() - 1)).isEqualTo(s.offset(s.size() - 1));
    }

    @Test
    void constantScheduleIsEvenlySpaced() {
        ArrivalSchedule s = ArrivalSchedule.constant(1000, 1_000_000_000L);
        assertThat(s.size()).isEqualTo(1000);
        assertThat(s.offset(10) - s.offset(9)).isEqualTo(1_000_000L);
    }
}
