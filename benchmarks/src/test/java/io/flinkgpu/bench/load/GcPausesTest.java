package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The collector's pauses are read from its own notifications, concurrent cycles left out. */
class GcPausesTest {
    @Test
    void concurrentCyclesAreNotPauses() {
        assertThat(GcPauses.isPauses("G1 Young Generation")).isTrue();
        assertThat(GcPauses.isPauses("G1 Old Generation")).isTrue();
        assertThat(GcPauses.isPauses("ZGC Pauses")).isTrue();
        assertThat(GcPauses.isPauses("Shenandoah Pauses")).isTrue();
        assertThat(GcPauses.isPauses("PS Scavenge")).isTrue();
        assertThat(GcPauses.isPauses("ZGC Cycles")).isFalse();
        assertThat(GcPauses.isPauses("Shenandoah Cycles")).isFalse();
        assertThat(GcPauses.isPauses("G1 Concurrent GC")).isFalse();
    }

    @Test
    void aCollectionDuringThePointIsCountedAndOneBeforeItIsNot() throws Exception {
        GcPauses.listen();
        long start = System.nanoTime();
        System.gc(); // a full collection: a stop-the-world pause under every collector this JVM may run
        assertThat(awaitPauses(start, 1)).isGreaterThanOrEqualTo(1);
        Thread.sleep(300); // the first collection's notifications (one per collector it ran) are in
        long from = System.nanoTime();
        System.gc();
        assertThat(awaitPauses(from, 1)).isGreaterThanOrEqualTo(1);
        GcPauses.Summary during = GcPauses.since(from);
        assertThat(during.longestMs()).isGreaterThanOrEqualTo(0).isLessThanOrEqualTo(during.totalMs());
        // the first collection began before the point: it counts since the start, not since the point
        assertThat(GcPauses.since(start).count()).isGreaterThan(during.count());
    }

    /** The pause count since {@code from} once it reaches {@code atLeast} (notifications come a moment late), within 10 s. */
    private static long awaitPauses(long from, int atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        GcPauses.Summary s = GcPauses.since(from);
        while (s.count() < atLeast && System.nanoTime() < deadline) {
            Thread.sleep(10);
            s = GcPauses.since(from);
        }
        return s.count();
    }
}
