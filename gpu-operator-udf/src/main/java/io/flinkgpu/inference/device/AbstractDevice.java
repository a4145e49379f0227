package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;

/**
 * What every device shares: an id, a memory budget for loaded models, ONNX Runtime session
 * options with a fixed number of intra-op threads, and a busy-time meter for utilisation.
 * Subclasses say what kind they are and, where they differ, how sessions are placed, how a batch
 * executes and what telemetry they have.
 */
abstract class AbstractDevice implements Device {
    private final String id;
    protected final MemoryBudget memory;
    protected final int intraOpThreads;
    protected final BusyMeter busy = new BusyMeter(System::nanoTime);

    AbstractDevice(String id, long memoryBytes, long pageBytes, int intraOpThreads) {
        if (memoryBytes <= 0) {
            throw new IllegalArgumentException("memory budget must be positive");
        }
        if (intraOpThreads < 1) {
            throw new IllegalArgumentException("intra-op threads must be at least 1");
        }
        this.id = id;
        this.memory = new MemoryBudget(memoryBytes, pageBytes);
        this.intraOpThreads = intraOpThreads;
    }

    @Override
    public String id() {
        return id;
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

    /** CPU session options; GPU devices add their execution provider on top. */
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
        return memory.reserve(bytes);
    }

    @Override
    public void release(long bytes) {
        memory.release(bytes);
    }

    /** Runs the batch; the device is busy while at least one batch runs (overlapping runs count once). */
    @Override
    public <T> T execute(String model, int samples, Work<T> work) throws OrtException {
        busy.begin();
        try {
            return work.run();
        } finally {
            busy.end();
        }
    }

    /**
     * CPU sessions live in this process, so what they use is the process's anonymous resident
     * memory ({@code /proc/self/statm}, Linux: resident less file-backed pages such as ONNX
     * Runtime's library code); empty elsewhere. Simulated GPUs run their sessions on the CPU too,
     * so this is also how they measure a model.
     */
    @Override
    public java.util.OptionalLong memoryInUseBytes() {
        return ProcessMemory.anonymousResidentBytes();
    }

    @Override
    public DeviceTelemetry telemetry() {
        return new DeviceTelemetry(memory.used(), memory.capacity(), busy.sample(), Double.NaN, Double.NaN);
    }
}
