package io.flinkgpu.inference.admission;

import java.io.Serializable;

/**
 * Size limits applied to every request before it is queued.
 *
 * @param maxTensorElements elements per input tensor at most
 * @param maxRequestBytes encoded request size at most
 */
public record ValidationLimits(long maxTensorElements, long maxRequestBytes) implements Serializable {
    public static final long DEFAULT_MAX_TENSOR_ELEMENTS = 16L * 1024 * 1024;
    public static final long DEFAULT_MAX_REQUEST_BYTES = 1024L * 1024;
    public static final ValidationLimits DEFAULTS =
            new ValidationLimits(DEFAULT_MAX_TENSOR_ELEMENTS, DEFAULT_MAX_REQUEST_BYTES);

    public ValidationLimits {
        if (maxTensorElements < 1 || maxRequestBytes < 1) {
            throw new IllegalArgumentException("limits must be positive");
        }
    }
}
