package io.flinkgpu.inference.batching;

/** A monotonic nanosecond clock, injectable so that batching decisions can be tested exactly. */
@FunctionalInterface
public interface Ticker {
    Ticker SYSTEM = System::nanoTime;

    long nanos();
}
