package io.flinkgpu.inference.protocol;

/** A request that cannot be accepted, with the error code its response or dead letter carries. */
public class ProtocolException extends Exception {
    private final ErrorCode code;

    public ProtocolException(ErrorCode code, String message) {
        super(message);
        this.code = code;
    }

    public ErrorCode code() {
        return code;
    }

    public InferenceError toError() {
        return new InferenceError(code, getMessage());
    }
}
