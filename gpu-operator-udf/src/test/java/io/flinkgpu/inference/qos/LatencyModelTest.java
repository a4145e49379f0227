package io.flinkgpu.inference.qos;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.assertj.core.data.Percentage;
import org.junit.jupiter.api.Test;

class LatencyModelTest {
    @Test
    void fitsNoisyLinearLatenciesWithOutliersToWithinFivePercent() {
        double alpha = 800_000; // 0.8 ms launch cost
        double beta = 120_000; // 0.12 ms per sample
        Random random = new Random(3);
        LatencyModel model = new LatencyModel();
        for (int i = 0; i < 200; i++) {
            int b = 1 + random.nextInt(64);
            double t = (alpha + beta * b) * (1 + random.nextGaussian() * 0.02);
            if (random.nextDouble() < 0.15) {
                t *= 5 + random.nextDouble() * 20; // a GC pause or a page fault
            }
            model.record(b, Math.round(t));
        }
        assertThat(model.alphaNanos()).isCloseTo(alpha, Percentage.withPercentage(5));
        assertThat(model.betaNanos()).isCloseTo(beta, Percentage.withPercentage(5));
        assertThat((double) model.predictNanos(32)).isCloseTo(alpha + beta * 32, Percentage.withPercentage(5));
    }

    @Test
    void leastSquaresWouldBeDraggedByTheSameOutliers() {
        // Guards the choice of estimator: the outliers above move an ordinary fit far off.
        Random random = new Random(3);
        double sx = 0, sy = 0, sxx = 0, sxy = 0;
        int n = 200;
        for (int i = 0; i < n; i++) {
            int b = 1 + random.nextInt(64);
            double t = (800_000 + 120_000.0 * b) * (1 + random.nextGaussian() * 0.02);
            if (random.nextDouble() < 0.15) {
                t *= 5 + random.nextDouble() * 20;
            }
            sx += b;
            sy += t;
            sxx += (double) b * b;
            sxy += b * t;
        }
        double slope = (n * sxy - sx * sy) / (n * sxx - sx * sx);
        assertThat(Math.abs(slope - 120_000) / 120_000).isGreaterThan(0.5);
    }

    @Test
    void withOneBatchSizeOnlyItAssumesNoBatchingBenefit() {
        LatencyModel model = new LatencyModel();
        model.record(4, 4_000_000);
        model.record(4, 4_400_000);
        assertThat(model.alphaNanos()).isZero();
        assertThat(model.predictNanos(8)).isEqualTo(8_400_000);
    }

    @Test
    void forgetsObservationsOlderThanItsWindow() {
        LatencyModel model = new LatencyModel(16);
        for (int i = 0; i < 16; i++) {
            model.record(1 + i % 8, 10_000_000L * (1 + i % 8)); // slow device
        }
        for (int i = 0; i < 16; i++) {
            model.record(1 + i % 8, 1_000_000L * (1 + i % 8)); // after a swap to a fast one
        }
        assertThat(model.betaNanos()).isCloseTo(1_000_000, Percentage.withPercentage(1));
    }

    @Test
    void theMedianIsTheSortedMedianForEveryLengthAndWithTies() {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(3);
        for (int n = 1; n < 300; n++) {
            double[] v = new double[n + 5];
            for (int i = 0; i < v.length; i++) {
                v[i] = rnd.nextInt(4) == 0 ? rnd.nextInt(5) : rnd.nextDouble() * 100 - 50; // many ties
            }
            double[] sorted = java.util.Arrays.copyOf(v, n);
            java.util.Arrays.sort(sorted);
            double expected = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
            double[] before = v.clone();
            assertThat(LatencyModel.median(v, n)).as("n = %d", n).isEqualTo(expected);
            assertThat(v).as("input untouched").isEqualTo(before);
        }
    }

    @Test
    void aFullWindowRefitsAfterAnEighthOfItIsNewNotAfterEveryBatch() {
        LatencyModel model = new LatencyModel(64);
        for (int i = 0; i < 64; i++) {
            model.record(1 + i % 8, 1_000_000L * (1 + i % 8));
        }
        assertThat(model.betaNanos()).isCloseTo(1_000_000, Percentage.withPercentage(1));
        // 7 batches twice as slow: under an eighth of the window, the fit stands
        for (int i = 0; i < 7; i++) {
            model.record(1 + i % 8, 2_000_000L * (1 + i % 8));
        }
        assertThat(model.betaNanos()).isCloseTo(1_000_000, Percentage.withPercentage(1));
        // the 8th triggers a refit over the window as it is now
        model.record(8, 16_000_000L);
        double refit = model.betaNanos();
        LatencyModel exact = new LatencyModel(64);
        for (int i = 0; i < 56; i++) {
            exact.record(1 + (i + 8) % 8, 1_000_000L * (1 + (i + 8) % 8));
        }
        for (int i = 0; i < 8; i++) {
            exact.record(1 + i % 8, 2_000_000L * (1 + i % 8));
        }
        assertThat(refit).isEqualTo(exact.betaNanos());
        // and a regime change is followed within the window
        for (int i = 0; i < 64; i++) {
            model.record(1 + i % 8, 2_000_000L * (1 + i % 8));
        }
        assertThat(model.betaNanos()).isCloseTo(2_000_000, Percentage.withPercentage(1));
    }

    @Test
    void aSmallWindowStillRefitsAfterEveryBatch() {
        LatencyModel model = new LatencyModel();
        model.record(1, 1_000_000);
        assertThat(model.predictNanos(1)).isEqualTo(1_000_000);
        model.record(2, 3_000_000);
        assertThat(model.betaNanos()).isEqualTo(2_000_000);
    }

    @Test
    void thePublishedFitIsTheOnePredictedWithAfterEveryRecord() {
        LatencyModel model = new LatencyModel();
        assertThat(model.published()).isEqualTo(new LatencyModel.Fit(0, 0));
        model.record(1, 1_000_000);
        assertThat(model.published()).as("one size: the mean time per sample").isEqualTo(new LatencyModel.Fit(0, 1_000_000));
        model.record(2, 3_000_000);
        assertThat(model.published()).as("slope 2 ms, intercept -1 ms held at 0")
                .isEqualTo(new LatencyModel.Fit(0, 2_000_000));
        assertThat(model.predictNanos(4)).isEqualTo(8_000_000);
        model.record(3, 9_000_000);
        assertThat(model.published()).as("the median of slopes 2, 4 and 6 ms").isEqualTo(new LatencyModel.Fit(0, 4_000_000));
        assertThat(model.published()).isEqualTo(new LatencyModel.Fit(model.alphaNanos(), model.betaNanos()));
    }

    @Test
    void anotherThreadReadsOnlyWholeFitsTheOwnerPublishedWhileItRecords() throws Exception {
        LatencyModel model = new LatencyModel();
        java.util.Set<LatencyModel.Fit> published = java.util.concurrent.ConcurrentHashMap.newKeySet();
        published.add(model.published());
        java.util.Set<LatencyModel.Fit> read = new java.util.HashSet<>();
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        Thread reporter = new Thread(() -> {
            while (!done.get()) {
                read.add(model.published());
            }
        });
        reporter.start();
        Random random = new Random(7);
        for (int i = 0; i < 20_000; i++) {
            // two regimes in turn, so that consecutive fits differ in both alpha and beta
            boolean fast = (i / 500) % 2 == 0;
            int b = 1 + random.nextInt(64);
            double noise = 1 + random.nextGaussian() * 0.05;
            model.record(b, Math.round((fast ? 100_000 + 10_000.0 * b : 900_000 + 70_000.0 * b) * noise));
            published.add(model.published());
        }
        done.set(true);
        reporter.join();
        assertThat(published).hasSizeGreaterThan(10);
        assertThat(read).as("every fit the reporter saw is one the owner published whole").isNotEmpty()
                .isSubsetOf(published);
    }
}
