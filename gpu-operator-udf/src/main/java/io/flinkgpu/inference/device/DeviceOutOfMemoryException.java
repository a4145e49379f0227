package io.flinkgpu.inference.device;

import java.util.Locale;

/** The device could not allocate memory for a session (real or injected). */
public class DeviceOutOfMemoryException extends DeviceException {
    private static final long serialVersionUID = 1L;

    public DeviceOutOfMemoryException(String message) {
        super(message);
    }

    /**
     * Whether {@code t} or one of its causes is an out-of-memory failure: ours, or ONNX Runtime's
     * CUDA allocator failing ("out of memory", "Failed to allocate memory", CUDA error 2).
     */
    public static boolean isOutOfMemory(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof DeviceOutOfMemoryException) {
                return true;
            }
            String m = String.valueOf(c.getMessage()).toLowerCase(Locale.ROOT);
            if (m.contains("out of memory") || m.contains("failed to allocate memory")
                    || m.contains("cudaerrormemoryallocation")) {
                return true;
            }
        }
        return false;
    }
}
