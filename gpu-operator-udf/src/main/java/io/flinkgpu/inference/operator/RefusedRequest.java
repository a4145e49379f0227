package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.ErrorCode;
import java.util.Arrays;
import java.util.Objects;

/**
 * A request the operator refused because the request itself is at fault (it does not fit its
 * model or its limits), or one whose handling threw ({@link ErrorCode#INTERNAL}): emitted on the
 * side output {@link GpuInference#REFUSED} besides its error response, for a dead-letter sink.
 * Refusals for load, quota or deadline are not bad input and only get their error response.
 *
 * @param origin where the request came from ({@code parameters.origin}), or null
 * @param request the request as decoded, in the binary wire format; empty if it could not be encoded
 */
public record RefusedRequest(ErrorCode code, String reason, String requestId, String modelName, String origin,
        byte[] request) {

    public RefusedRequest {
        Objects.requireNonNull(code, "code");
        request = request == null ? new byte[0] : request;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RefusedRequest r && code == r.code && Objects.equals(reason, r.reason)
                && Objects.equals(requestId, r.requestId) && Objects.equals(modelName, r.modelName)
                && Objects.equals(origin, r.origin) && Arrays.equals(request, r.request);
    }

    @Override
    public int hashCode() {
        return Objects.hash(code, reason, requestId, modelName, origin) * 31 + Arrays.hashCode(request);
    }

    @Override
    public String toString() {
        return "RefusedRequest{" + code + ", " + requestId + ", " + reason + "}";
    }
}
