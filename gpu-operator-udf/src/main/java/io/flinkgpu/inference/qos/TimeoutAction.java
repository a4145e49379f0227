package io.flinkgpu.inference.qos;

/** What happens to a queued request whose deadline passes (Triton's queue policy). */
public enum TimeoutAction {
    /** Answer it with a TIMEOUT error. */
    REJECT,
    /** Keep it, demoted behind all other queued work, and run it when capacity allows. */
    DELAY
}
