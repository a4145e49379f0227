package io.flinkgpu.inference.device;

/**
 * A batch that a simulated GPU failed on purpose ({@code inference.device.simulated.model-failures}).
 * Not a lost device: the operator answers the batch's requests with an error code, as for any
 * failed run, and the device goes on serving.
 */
public final class SimulatedFailureException extends DeviceException {
    private static final long serialVersionUID = 1L;

    public SimulatedFailureException(String message) {
        super(message);
    }
}
