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
    /** Clipper's AIMD: grow the batch cap additively while latency meets the SLO, halve it when not. */
    AIMD
}
