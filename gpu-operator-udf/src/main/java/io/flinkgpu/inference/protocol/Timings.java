package io.flinkgpu.inference.protocol;

import java.io.Serializable;

/**
 * Where a request's time went inside the inference operator: waiting in the batcher queue, and
 * executing (the whole batch's run time), plus the size in samples of the batch it ran in.
 */
public record Timings(double queueMs, double inferenceMs, int batchSize) implements Serializable {
    public static final Timings NONE = new Timings(0, 0, 0);
}
