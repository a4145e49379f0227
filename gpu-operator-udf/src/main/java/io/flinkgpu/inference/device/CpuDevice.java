package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The CPU as a device: ONNX Runtime's default execution provider, with a configured memory
 * budget for loaded models. One intra-op thread per session is the default because on small
 * machines inter-batch parallelism (several batches at once) beats intra-op parallelism.
 */
public final class CpuDevice implements Device {
    private final String id;
    private final long memoryBudgetBytes;
    private final int intraOpThreads;
    private final AtomicLong reserved = new AtomicLong();

    public CpuDevice(String id, long memoryBudgetBytes, int intraOpThreads) {
        if (memoryBudgetBytes <= 0) {
            throw new IllegalArgumentException("memory budget must be positive");
        }
        if (intraOpThreads < 1) {
            throw new IllegalArgumentException("intra-op threads must be at least 1");
        }
        this.id = id;
        this.memoryBudgetBytes = memoryBudgetBytes;
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
        return memoryBudgetBytes;
    }

    @Override
    public long freeMemoryBytes() {
        return memoryBudgetBytes - reserved.get();
    }

    @Override
    public boolean isHealthy() {
        return true;
    }

    @Override
    public OrtSession.SessionOptions newSessionOptions() throws OrtException {
        OrtSession.SessionOptions options = new OrtSession.SessionOptions();
        options.setIntraOpNumThreads(intraOpThreads);
        options.setInterOpNumThreads(1);
        options.setExecutionMode(OrtSession.SessionOptions.ExecutionMode.SEQUENTIAL);
        options.setOptimizationLevel(OrtSession.SessionOptions.OptLevel.ALL_OPT);
        return options;
    }

    @Override
    public boolean reserve(long bytes) {
        while (true) {
            long current = reserved.get();
            if (current + bytes > memoryBudgetBytes) {
                return false;
            }
            if (reserved.compareAndSet(current, current + bytes)) {
                return true;
            }
        }
    }

    @Override
    public void release(long bytes) {
        reserved.addAndGet(-bytes);
    }

    @Override
    public String toString() {
        return id + " (CPU, budget " + (memoryBudgetBytes >> 20) + " MiB, " + intraOpThreads + " intra-op threads)";
    }
}
