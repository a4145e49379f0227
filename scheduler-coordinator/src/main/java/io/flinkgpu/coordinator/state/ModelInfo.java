package io.flinkgpu.coordinator.state;

/**
 * A model in the coordinator's catalog: what it costs to hold and what it promises.
 *
 * @param version the deployed version, or null for the repository's default
 * @param memoryBytes device memory of one instance (from the model config or measured)
 * @param sloMillis latency objective per request (0: none)
 * @param deployed false once undeployed: it is unloaded everywhere and no longer routed
 */
public record ModelInfo(String name, String version, long memoryBytes, long sloMillis, boolean deployed) {}
