package io.flinkgpu.inference.execution;

import io.flinkgpu.inference.device.DeviceLostException;

/**
 * The one rule for what fails a task rather than a request: a fault that a restart may cure and no
 * record can cause. A lost device ({@link DeviceLostException}) or a JVM error
 * ({@link VirtualMachineError}, such as {@code OutOfMemoryError}) anywhere in the cause chain. Every
 * other exception of a batch or a request becomes an error response for the requests it touched.
 * The operator, the shared runtime of the SQL path and batch isolation all ask here.
 */
public final class Faults {
    private Faults() {}

    public static boolean isInfrastructureFault(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof DeviceLostException || t instanceof VirtualMachineError) {
                return true;
            }
        }
        return false;
    }
}
