package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

/**
 * One place where models run: the CPU, a CUDA GPU, or a simulated GPU. A device knows its
 * memory, how to place an ONNX Runtime session on itself and how to run work there; everything
 * above it (the model cache, the operator) is device-agnostic.
 */
public interface Device extends AutoCloseable {
    /** Stable id, e.g. {@code cpu:0}, {@code cuda:1} or {@code sim:0}. */
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

    /**
     * Memory in use as the device itself reports it now, whoever uses it (not the accounting of
     * {@link #reserve}): what the model cache measures a first load with. Empty where the
     * device cannot tell.
     */
    default java.util.OptionalLong memoryInUseBytes() {
        return java.util.OptionalLong.empty();
    }

    /** Memory, utilisation, temperature and power now; unknown values are NaN. */
    default DeviceTelemetry telemetry() {
        long total = totalMemoryBytes();
        return new DeviceTelemetry(total - freeMemoryBytes(), total, Double.NaN, Double.NaN, Double.NaN);
    }

    /**
     * Creates a session for a serialized ONNX model on this device. A device may fail this with
     * {@link DeviceOutOfMemoryException} or {@link DeviceLostException}.
     */
    default OrtSession createSession(OrtEnvironment env, byte[] model) throws OrtException {
        try (OrtSession.SessionOptions options = newSessionOptions()) {
            return env.createSession(model, options);
        }
    }

    /**
     * Runs one batch of {@code samples} samples of {@code model} on this device. Devices that
     * model their own speed or meter their utilisation wrap the work here.
     */
    default <T> T execute(String model, int samples, Work<T> work) throws OrtException {
        return work.run();
    }

    /**
     * Runs one batch of {@code model} in {@code version} whose first request is {@code firstRequestId}
     * (either may be null where unknown). Devices that treat versions or requests differently (a
     * simulated GPU's per-version speed and failures) override this; the default runs
     * {@link #execute(String, int, Work)}.
     */
    default <T> T execute(String model, String version, String firstRequestId, int samples, Work<T> work)
            throws OrtException {
        return execute(model, samples, work);
    }

    /** A unit of work on a session. */
    @FunctionalInterface
    interface Work<T> {
        T run() throws OrtException;
    }

    @Override
    default void close() {}
}
