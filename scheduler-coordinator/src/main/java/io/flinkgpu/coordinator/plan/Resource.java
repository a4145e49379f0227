package io.flinkgpu.coordinator.plan;

/** The resources the planner divides. */
public enum Resource {
    /** Bytes of accelerator (or CPU-device) memory that model weights occupy. */
    DEVICE_MEMORY("device memory"),
    /** Device-seconds per second of execution (1.0 = one device fully busy). */
    DEVICE_TIME("device time"),
    /** Host CPU cores (pre/post-processing, the CPU device's execution). */
    CPU("CPU");

    private final String label;

    Resource(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }
}
