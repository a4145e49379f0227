package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

/**
 * One place where models run: the CPU, a CUDA GPU, or a simulated GPU. A device knows its
 * memory and how to configure an ONNX Runtime session for itself; everything above it (the
 * model cache, the operator) is device-agnostic.
 */
public interface Device extends AutoCloseable {
    /** Stable id, e.g. {@code cpu:0} or {@code cuda:1}. */
    String id();

    DeviceKind kind();

    /** Memory available to models on this device (for the CPU: the configured budget). */
    long totalMemoryBytes();

    /** Memory not yet accounted to loaded models. */
    long freeMemoryBytes();

    /** Whether the device can take work. */
    boolean isHealthy();

    /** Session options that place a session on this device. The caller closes them. */
    OrtSession.SessionOptions newSessionOptions() throws OrtException;

    /** Accounts {@code bytes} of model memory; false if it does not fit. */
    boolean reserve(long bytes);

    void release(long bytes);

    @Override
    default void close() {}
}
