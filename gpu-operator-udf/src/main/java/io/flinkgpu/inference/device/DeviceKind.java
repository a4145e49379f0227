package io.flinkgpu.inference.device;

/** What executes a model. */
public enum DeviceKind {
    CPU,
    CUDA,
    SIMULATED
}
