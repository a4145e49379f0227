package io.flinkgpu.coordinator.plan;

/**
 * A rescale of the inference vertex the coordinator started: when, from and to which
 * parallelism, and why. Kept in the coordinator's state so that the minimum interval between
 * rescales holds across a restart.
 */
public record RescaleRecord(long atMillis, int from, int to, String reason) {}
