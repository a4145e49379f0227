package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

/**
 * The CPU as a device: ONNX Runtime's default execution provider, with a configured memory
 * budget for loaded models. One intra-op thread per session is the default because on small
 * machines inter-batch parallelism (several batches at once) beats intra-op parallelism.
 * Utilisation is the fraction of wall time a batch was executing.
 */
public final class CpuDevice implements Device {
    private final String id;
    private final MemoryBudget memory;
    private final int intraOpThreads;
    private final BusyMeter busy = new BusyMeter(System::nanoTime);

    public CpuDevice(String id, long memoryBudgetBytes, int intraOpThreads) {
        if (memoryBudgetBytes <= 0) {
            throw new IllegalArgumentException("memory budget must be positive");
        }
        if (intraOpThreads < 1) {
            throw new IllegalArgumentException("intra-op threads must be at least 1");
        }
        this.id = id;
        this.memory = new MemoryBudget(memoryBudgetBytes, 1);
        this.intraOpThreads = intraOpThreads;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public DeviceKind kind() {
        return DeviceKind.CPU;
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
        return cpuSessionOptions(intraOpThreads);
    }

    static OrtSession.SessionOptions cpuSessionOptions(int intraOpThreads) throws OrtException {
        OrtSession.SessionOptions options = new OrtSession.SessionOptions();
        options.setIntraOpNumThreads(intraOpThreads);
        options.setInterOpNumThreads(1);
        options.setExecutionMode(OrtSession.SessionOptions.ExecutionMode.SEQUENTIAL);
        options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
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

    @Override
    public DeviceTelemetry telemetry() {
        return new DeviceTelemetry(memory.used(), memory.capacity(), busy.sample(), Double.NaN, Double.NaN);
    }

    @Override
    public String toString() {
        return id + " (CPU, budget " + (memory.capacity() >> 20) + " MiB, " + intraOpThreads + " intra-op threads)";
    }
}
