package io.flinkgpu.inference.device;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A GPU that is not there: models run for real on the CPU, so outputs are exact, and each batch
 * then waits out the rest of the time its {@link SpeedModel} gives. Batches share one device
 * timeline, as kernels on one GPU do, so concurrent batches queue behind each other (the time a
 * batch queued is counted in {@link DeviceWait}, apart from its own service time). Memory is
 * accounted against a fixed capacity in 2 MiB pages, as a GPU allocator hands it out, and putting a
 * model on the device takes the time its {@link LoadTimeModel} gives.
 *
 * <p>Speeds are set per model or per model version ({@code model:version} entries win over
 * {@code model} ones, both over the default), so one version can be slower than another.
 *
 * <p>Faults can be injected: out-of-memory on the next session creations, and loss of the device
 * (every later load and batch fails, {@link #isHealthy()} turns false). A share of one model
 * version's batches can be failed on purpose ({@link SimulatedFailures}): such a batch throws
 * {@link SimulatedFailureException} before it runs, takes no device time, and leaves the device
 * healthy. Used by tests and the local default.
 */
public final class SimulatedDevice extends AbstractDevice {
    /** Allocation granularity of the simulated device memory. */
    public static final long PAGE_BYTES = 2L << 20;

    private final SpeedModel defaultSpeed;
    private final Map<String, SpeedModel> modelSpeeds;
    private final LoadTimeModel loadTime;
    private final SimulatedFailures failures;
    private final AtomicInteger outOfMemoryLoads = new AtomicInteger();
    private volatile boolean lost;
    private long busyUntilNanos = Long.MIN_VALUE;

    /**
     * @param modelSpeeds speeds by {@code model} or {@code model:version}
     * @param modelFailures shares in [0, 1] of the batches that fail, by {@code model} or {@code model:version}
     */
    public SimulatedDevice(String id, long capacityBytes, SpeedModel defaultSpeed, Map<String, SpeedModel> modelSpeeds,
            Map<String, Double> modelFailures, LoadTimeModel loadTime, int intraOpThreads) {
        super(id, capacityBytes, PAGE_BYTES, intraOpThreads);
        this.defaultSpeed = defaultSpeed;
        this.modelSpeeds = Map.copyOf(modelSpeeds);
        this.failures = modelFailures.isEmpty() ? SimulatedFailures.NONE : new SimulatedFailures(modelFailures);
        this.loadTime = loadTime;
    }

    public SimulatedDevice(String id, long capacityBytes, SpeedModel defaultSpeed, Map<String, SpeedModel> modelSpeeds,
            LoadTimeModel loadTime, int intraOpThreads) {
        this(id, capacityBytes, defaultSpeed, modelSpeeds, Map.of(), loadTime, intraOpThreads);
    }

    public SimulatedDevice(String id, long capacityBytes, SpeedModel defaultSpeed, Map<String, SpeedModel> modelSpeeds,
            int intraOpThreads) {
        this(id, capacityBytes, defaultSpeed, modelSpeeds, LoadTimeModel.NONE, intraOpThreads);
    }

    public SimulatedDevice(String id, long capacityBytes, SpeedModel speed) {
        this(id, capacityBytes, speed, Map.of(), 1);
    }

    @Override
    public DeviceKind kind() {
        return DeviceKind.SIMULATED;
    }

    @Override
    public boolean isHealthy() {
        return !lost;
    }

    @Override
    public boolean reserve(long bytes) {
        return !lost && super.reserve(bytes);
    }

    /** The next {@code loads} session creations fail with {@link DeviceOutOfMemoryException}. */
    public void injectOutOfMemoryOnLoad(int loads) {
        outOfMemoryLoads.set(loads);
    }

    /** From now on every load and every batch fails with {@link DeviceLostException}. */
    public void injectDeviceLost() {
        lost = true;
    }

    /** The speed of {@code model} in any version that has no speed of its own. */
    public SpeedModel speedOf(String model) {
        return modelSpeeds.getOrDefault(model, defaultSpeed);
    }

    /** The speed of {@code model} in {@code version} (null: unknown): its versioned entry, else the model's, else the default. */
    public SpeedModel speedOf(String model, String version) {
        SpeedModel versioned = version == null ? null : modelSpeeds.get(model + ":" + version);
        return versioned != null ? versioned : speedOf(model);
    }

    /** The share of the batches of {@code model} in {@code version} (null: unknown) that this device fails on purpose. */
    public double failureShareOf(String model, String version) {
        return failures.shareOf(model, version);
    }

    private void checkAlive() {
        if (lost) {
            throw new DeviceLostException("device " + id() + " is lost");
        }
    }

    @Override
    public OrtSession createSession(OrtEnvironment env, byte[] model) throws OrtException {
        checkAlive();
        if (outOfMemoryLoads.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new DeviceOutOfMemoryException("out of memory creating a session on " + id() + " (injected)");
        }
        long started = System.nanoTime();
        OrtSession session = super.createSession(env, model);
        // Loads do not hold the compute timeline: copies run on their own engine on a GPU.
        long done = started + loadTime.loadNanos(model.length);
        for (long left = done - System.nanoTime(); left > 0 && !Thread.currentThread().isInterrupted();
                left = done - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
        return session;
    }

    public LoadTimeModel loadTime() {
        return loadTime;
    }

    @Override
    public <T> T execute(String model, int samples, Work<T> work) throws OrtException {
        return execute(model, null, null, samples, work);
    }

    @Override
    public <T> T execute(String model, String version, String firstRequestId, int samples, Work<T> work)
            throws OrtException {
        checkAlive();
        if (failures.fails(model, version, firstRequestId)) {
            throw new SimulatedFailureException(String.format(java.util.Locale.ROOT,
                    "simulated failure of %s:%s on %s (inference.device.simulated.model-failures fails %s of its "
                    + "batches; first request %s)", model, version, id(), failures.shareOf(model, version),
                    firstRequestId));
        }
        long started = System.nanoTime();
        T result = work.run();
        long cpuNanos = System.nanoTime() - started;
        long modelled = speedOf(model, version).latencyNanos(samples, cpuNanos);
        long done;
        long begin;
        synchronized (this) {
            begin = Math.max(started, busyUntilNanos);
            busyUntilNanos = begin + modelled;
            done = Math.max(started + cpuNanos, busyUntilNanos);
        }
        DeviceWait.add(begin - started); // queued behind batches the device had not finished
        busy.busy(modelled);
        for (long left = done - System.nanoTime(); left > 0 && !Thread.currentThread().isInterrupted();
                left = done - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
        return result;
    }

    @Override
    public String toString() {
        return id() + " (simulated GPU, " + (memory.capacity() >> 20) + " MiB, speed " + defaultSpeed
                + (modelSpeeds.isEmpty() ? "" : ", per model " + modelSpeeds)
                + (failures.isEmpty() ? "" : ", failing on purpose " + failures) + ")";
    }
}
