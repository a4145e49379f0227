package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;

/**
 * The batch-size cap of one model. Under {@link BatchSizing#AIMD} it starts at a quarter of the
 * max batch size and adapts to measured run times: a batch that ran within the model's SLO raises
 * the cap by one sample (additive increase), a batch that overran it shrinks the cap by a tenth
 * (multiplicative decrease). Without an SLO the cap stays where it started. Under every other
 * sizing the cap is the max batch size.
 *
 * <p>The {@link CutPolicy} cuts no batch above the cap, except when flushing.
 */
final class BatchSizeController {
    private static final double BACKOFF = 0.9;

    private final int maxBatchSize;
    private final SchedulingConfig sched;
    private double aimdCap;

    BatchSizeController(int maxBatchSize, SchedulingConfig sched) {
        this.maxBatchSize = maxBatchSize;
        this.sched = sched;
        this.aimdCap = Math.max(1, maxBatchSize / 4.0);
    }

    /** Samples per batch at most, now. */
    int cap() {
        return sched.batchSizing() == BatchSizing.AIMD
                ? (int) Math.max(1, Math.min(maxBatchSize, Math.floor(aimdCap)))
                : maxBatchSize;
    }

    /** Adapts the cap to a completed batch's run time. */
    void record(long elapsedNanos) {
        if (sched.batchSizing() == BatchSizing.AIMD && sched.sloMs() > 0) {
            if (elapsedNanos <= sched.sloMs() * 1e6) {
                aimdCap = Math.min(maxBatchSize, aimdCap + 1);
            } else {
                aimdCap = Math.max(1, aimdCap * BACKOFF);
            }
        }
    }
}
