package io.flinkgpu.inference.device;

/**
 * The CPU as a device: ONNX Runtime's default execution provider, with a configured memory
 * budget for loaded models. One intra-op thread per session is the default because on small
 * machines inter-batch parallelism (several batches at once) beats intra-op parallelism.
 * Utilisation is the fraction of wall time a batch was executing.
 */
public final class CpuDevice extends AbstractDevice {
    public CpuDevice(String id, long memoryBudgetBytes, int intraOpThreads) {
        super(id, memoryBudgetBytes, 1, intraOpThreads);
    }

    @Override
    public DeviceKind kind() {
        return DeviceKind.CPU;
    }

    @Override
    public String toString() {
        return id() + " (CPU, budget " + (memory.capacity() >> 20) + " MiB, " + intraOpThreads + " intra-op threads)";
    }
}
