package io.flinkgpu.inference.device;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Utilisation counts the time at least one run is going, once however many overlap. */
class BusyMeterTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final BusyMeter meter = new BusyMeter(now::get);

    private void advance(long nanos) {
        now.addAndGet(nanos);
    }

    @Test
    void twoOverlappingRunsCountTheTimeEitherRanOnce() {
        meter.begin();          // t = 0: A starts
        advance(20);
        meter.begin();          // t = 20: B starts
        advance(20);
        meter.end();            // t = 40: A ends
        advance(20);
        meter.end();            // t = 60: B ends
        advance(40);            // idle to t = 100
        // busy from 0 to 60 although the two runs sum to 80
        assertThat(meter.sample()).isCloseTo(0.6, within(1e-9));
    }

    @Test
    void aRunGoingAtASampleCountsUpToItAndTheRestInTheNextWindow() {
        advance(50);
        meter.begin();          // t = 50
        advance(50);
        assertThat(meter.sample()).isCloseTo(0.5, within(1e-9)); // window [0, 100): busy 50
        advance(30);
        meter.end();            // t = 130
        advance(70);
        assertThat(meter.sample()).isCloseTo(0.3, within(1e-9)); // window [100, 200): busy 30
        advance(100);
        assertThat(meter.sample()).isZero();
    }

    @Test
    void serialisedBusyTimeAddsAndTheFractionIsCappedAtOne() {
        meter.busy(30);
        meter.busy(30);
        advance(100);
        assertThat(meter.sample()).isCloseTo(0.6, within(1e-9));
        meter.busy(500);
        advance(100);
        assertThat(meter.sample()).isEqualTo(1.0);
        meter.end(); // an end without a begin changes nothing
        advance(100);
        assertThat(meter.sample()).isZero();
    }
}
