package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.util.Optional;

/**
 * An NVIDIA GPU through ONNX Runtime's CUDA execution provider. Exists only where
 * {@link CudaProbe} found the GPU usable. Model memory is accounted against a budget (a share of
 * the GPU's memory, leaving room for the CUDA context and activations); utilisation, temperature
 * and power come from {@link NvidiaSmi} when it is installed.
 */
public final class CudaDevice extends AbstractDevice {
    private final CudaProbe.Gpu gpu;
    private final Optional<NvidiaSmi> smi;

    public CudaDevice(CudaProbe.Gpu gpu, long budgetBytes, int intraOpThreads, Optional<NvidiaSmi> smi) {
        super("cuda:" + gpu.ordinal(), Math.min(budgetBytes, gpu.totalMemoryBytes()), SimulatedDevice.PAGE_BYTES,
                intraOpThreads);
        this.gpu = gpu;
        this.smi = smi;
    }

    @Override
    public DeviceKind kind() {
        return DeviceKind.CUDA;
    }

    @Override
    public OrtSession.SessionOptions newSessionOptions() throws OrtException {
        OrtSession.SessionOptions options = super.newSessionOptions();
        try {
            options.addCUDA(gpu.ordinal());
        } catch (OrtException | RuntimeException e) {
            options.close();
            throw e;
        }
        return options;
    }

    /**
     * Used memory of the GPU from {@code cudaMemGetInfo} (JCuda, on the CUDA primary context that
     * ONNX Runtime also uses): the difference across a load is what the model's session took,
     * weights and arena alike. Includes other processes, so a load is measured as a difference.
     */
    @Override
    public java.util.OptionalLong memoryInUseBytes() {
        try {
            synchronized (CudaDevice.class) { // cudaSetDevice is per thread, but keep probes serial
                if (jcuda.runtime.JCuda.cudaSetDevice(gpu.ordinal()) != jcuda.runtime.cudaError.cudaSuccess) {
                    return java.util.OptionalLong.empty();
                }
                long[] free = new long[1];
                long[] total = new long[1];
                if (jcuda.runtime.JCuda.cudaMemGetInfo(free, total) != jcuda.runtime.cudaError.cudaSuccess) {
                    return java.util.OptionalLong.empty();
                }
                return java.util.OptionalLong.of(total[0] - free[0]);
            }
        } catch (RuntimeException | LinkageError e) {
            return java.util.OptionalLong.empty();
        }
    }

    /** nvidia-smi's readings where available (they include other processes), else our own busy time. */
    @Override
    public DeviceTelemetry telemetry() {
        NvidiaSmi.Sample s = smi.map(n -> n.sample().get(gpu.ordinal())).orElse(null);
        if (s == null) {
            return super.telemetry();
        }
        busy.sample();
        return new DeviceTelemetry(memory.used(), memory.capacity(), s.utilizationPercent() / 100.0,
                s.temperatureCelsius(), s.powerWatts());
    }

    @Override
    public String toString() {
        return id() + " (" + gpu.name() + ", budget " + (memory.capacity() >> 20) + " MiB of "
                + (gpu.totalMemoryBytes() >> 20) + " MiB)";
    }
}
