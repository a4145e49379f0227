package io.flinkgpu.inference.protocol;

/**
 * A request that cannot be accepted, with the error code its response or dead letter carries,
 * and the request id and model name when the decoder got as far as reading them.
 */
public class ProtocolException extends Exception {
    private final ErrorCode code;
    private final String requestId;
    private final String modelName;

    public ProtocolException(ErrorCode code, String message) {
        this(code, message, null, null);
    }

    private ProtocolException(ErrorCode code, String message, String requestId, String modelName) {
        super(message);
        this.code = code;
        this.requestId = requestId;
        this.modelName = modelName;
    }

    public ErrorCode code() {
        return code;
    }

    /** The id of the request that failed to decode, or null when it could not be read. */
    public String requestId() {
        return requestId;
    }

    /** Its model name, or null when it could not be read. */
    public String modelName() {
        return modelName;
    }

    /** The same failure, naming the request it belongs to. */
    public ProtocolException forRequest(String id, String model) {
        ProtocolException e = new ProtocolException(code, getMessage(), id, model);
        e.setStackTrace(getStackTrace());
        return e;
    }

    public InferenceError toError() {
        return new InferenceError(code, getMessage());
    }
}
