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
public final class CudaDevice implements Device {
    private final CudaProbe.Gpu gpu;
    private final MemoryBudget memory;
    private final int intraOpThreads;
    private final Optional<NvidiaSmi> smi;
    private final BusyMeter busy = new BusyMeter(System::nanoTime);

    public CudaDevice(CudaProbe.Gpu gpu, long budgetBytes, int intraOpThreads, Optional<NvidiaSmi> smi) {
        if (intraOpThreads < 1) {
            throw new IllegalArgumentException("intra-op threads must be at least 1");
        }
        this.gpu = gpu;
        this.memory = new MemoryBudget(Math.min(budgetBytes, gpu.totalMemoryBytes()), SimulatedDevice.PAGE_BYTES);
        this.intraOpThreads = intraOpThreads;
        this.smi = smi;
    }

    @Override
    public String id() {
        return "cuda:" + gpu.ordinal();
    }

    @Override
    public DeviceKind kind() {
        return DeviceKind.CUDA;
    }

    @Override
    public long totalMemoryBytes() {
        return memory.capacity();
    }

    @Override
    public long freeMemoryBytes() {
        return memory.free();
    }

    @Override
    public boolean isHealthy() {
        return true;
    }

    @Override
    public OrtSession.SessionOptions newSessionOptions() throws OrtException {
        OrtSession.SessionOptions options = CpuDevice.cpuSessionOptions(intraOpThreads);
        try {
            options.addCUDA(gpu.ordinal());
        } catch (OrtException | RuntimeException e) {
            options.close();
            throw e;
        }
        return options;
    }

    @Override
    public boolean reserve(long bytes) {
        return memory.reserve(bytes);
    }

    @Override
    public void release(long bytes) {
        memory.release(bytes);
    }

    @Override
    public <T> T execute(String model, int samples, Work<T> work) throws OrtException {
        long started = System.nanoTime();
        try {
            return work.run();
        } finally {
            busy.busy(System.nanoTime() - started);
        }
    }

    /** nvidia-smi's readings where available (they include other processes), else our own busy time. */
    @Override
    public DeviceTelemetry telemetry() {
        double ownUtilization = busy.sample();
        NvidiaSmi.Sample s = smi.map(n -> n.sample().get(gpu.ordinal())).orElse(null);
        if (s == null) {
            return new DeviceTelemetry(memory.used(), memory.capacity(), ownUtilization, Double.NaN, Double.NaN);
        }
        return new DeviceTelemetry(memory.used(), memory.capacity(), s.utilizationPercent() / 100.0,
                s.temperatureCelsius(), s.powerWatts());
    }

    @Override
    public String toString() {
        return id() + " (" + gpu.name() + ", budget " + (memory.capacity() >> 20) + " MiB of "
                + (gpu.totalMemoryBytes() >> 20) + " MiB)";
    }
}
