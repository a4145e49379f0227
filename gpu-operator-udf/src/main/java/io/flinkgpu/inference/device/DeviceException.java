package io.flinkgpu.inference.device;

/**
 * A failure of the device itself rather than of a model or a request. Unchecked, because it can
 * surface from any session call; the model cache and the operator catch it and turn it into an
 * error response or a failed load with its reason.
 */
public class DeviceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public DeviceException(String message) {
        super(message);
    }

    public DeviceException(String message, Throwable cause) {
        super(message, cause);
    }
}
