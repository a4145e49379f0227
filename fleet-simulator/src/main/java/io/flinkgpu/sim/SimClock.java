package io.flinkgpu.sim;

import io.flinkgpu.inference.batching.Ticker;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.function.LongSupplier;

/**
 * The simulation's virtual time in nanoseconds from the start of the run: the batcher's
 * {@link Ticker}, the cache policy's clock and, as a {@link Clock}, the coordinator's. Only the
 * event loop moves it.
 */
public final class SimClock implements Ticker, LongSupplier {
    private long now;

    @Override
    public long nanos() {
        return now;
    }

    @Override
    public long getAsLong() {
        return now;
    }

    void advanceTo(long t) {
        if (t < now) {
            throw new IllegalStateException("time goes back: " + t + " < " + now);
        }
        now = t;
    }

    public long millis() {
        return now / 1_000_000;
    }

    /** The same time as a {@link Clock} (epoch = the start of the run). */
    public Clock asClock() {
        return new Clock() {
            @Override
            public ZoneId getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(ZoneId zone) {
                return this;
            }

            @Override
            public long millis() {
                return now / 1_000_000;
            }

            @Override
            public Instant instant() {
                return Instant.ofEpochMilli(millis());
            }
        };
    }
}
