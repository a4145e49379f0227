package io.flinkgpu.inference.protocol;

import java.io.Serializable;
import java.util.Objects;

/** Why a request was not answered with outputs: a stable code and a human-readable reason. */
public record InferenceError(ErrorCode code, String message) implements Serializable {
    public InferenceError {
        Objects.requireNonNull(code, "code");
        message = message == null ? "" : message;
    }
}
