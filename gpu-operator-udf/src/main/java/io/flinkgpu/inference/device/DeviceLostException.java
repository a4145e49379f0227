package io.flinkgpu.inference.device;

/** The device stopped working (a GPU fell off the bus, an injected fault); nothing runs on it any more. */
public class DeviceLostException extends DeviceException {
    private static final long serialVersionUID = 1L;

    public DeviceLostException(String message) {
        super(message);
    }
}
