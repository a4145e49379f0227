package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class BatchWindowTest {
    @Test
    void reportsNothingBeforeTheFirstBatch() {
        BatchWindow w = new BatchWindow(4);
        assertThat(w.meanSamples()).isNaN();
        assertThat(w.meanNanos()).isNaN();
        assertThatThrownBy(() -> new BatchWindow(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void averagesTheLastBatchesAndForgetsOlderOnes() {
        BatchWindow w = new BatchWindow(4);
        w.add(2, 100);
        w.add(4, 300);
        assertThat(w.meanSamples()).isEqualTo(3.0);
        assertThat(w.meanNanos()).isEqualTo(200.0);
        for (int i = 0; i < 3; i++) {
            w.add(10, 1000);
        }
        // the first batch (2 samples) has left the window: 4, 10, 10, 10
        assertThat(w.meanSamples()).isEqualTo(8.5);
        assertThat(w.meanNanos()).isEqualTo(825.0);
        w.add(10, 1000);
        assertThat(w.meanSamples()).isEqualTo(10.0);
    }

    @Test
    void aLongRunOfSmallBatchesHoldsTheMeanDownAfterALoadStep() {
        // as the operator's histogram after a step: 1,024 batches of 5, then 50 of 20
        BatchWindow w = new BatchWindow(1024);
        for (int i = 0; i < 2000; i++) {
            w.add(5, 5_000_000);
        }
        for (int i = 0; i < 50; i++) {
            w.add(20, 20_000_000);
        }
        assertThat(w.meanSamples()).isCloseTo((974 * 5 + 50 * 20) / 1024.0, org.assertj.core.data.Offset.offset(1e-9));
    }
}
