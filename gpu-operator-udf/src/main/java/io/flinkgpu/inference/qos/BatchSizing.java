package io.flinkgpu.inference.qos;

/** How the batcher decides when a partial batch has waited long enough. */
public enum BatchSizing {
    /** Cut when the oldest request waited {@code max_queue_delay} (Triton, TF Serving). */
    FIXED_DELAY,
    /**
     * Use the latency model: wait only while the queue is expected to grow and the earliest
     * deadline still holds with the predicted run time; at low load, do not wait at all.
     */
    SLO_AWARE,
    /**
     * SLO_AWARE, and a batch no larger than the largest of: what keeps up with the shape's
     * arrivals, where batching stops paying (per-sample time within 10% of the slope), and what
     * runs within a millisecond. For shapes whose run time grows in proportion to the batch (a
     * long sequence on a CPU), so that a backlog drains in small batches that other shapes can
     * interleave with. It costs throughput where bursts need large batches: in the fleet
     * simulation's GPU models it lowered attainment, so it is not part of SLO_AWARE.
     */
    SLO_AWARE_CAPPED,
    /** Clipper's AIMD: grow the batch cap additively while latency meets the SLO, halve it when not. */
    AIMD;

    /** Whether the sizing uses the latency model and the deadlines (SLO_AWARE or SLO_AWARE_CAPPED). */
    public boolean sloAware() {
        return this == SLO_AWARE || this == SLO_AWARE_CAPPED;
    }
}
