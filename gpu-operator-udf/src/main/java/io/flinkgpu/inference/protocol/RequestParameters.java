package io.flinkgpu.inference.protocol;

import java.io.Serializable;

/**
 * The request parameters the scheduler understands. {@code priority} 1 is the highest; 0 means
 * "the model's default level". {@code timeoutMs} 0 means "the model's default timeout".
 * {@code deadlineEpochMs} (0: none) is an absolute deadline in milliseconds since the epoch; when
 * both are given the earlier one counts.
 */
public record RequestParameters(int priority, long timeoutMs, String tenant, long deadlineEpochMs)
        implements Serializable {
    public static final String DEFAULT_TENANT = "default";
    public static final RequestParameters DEFAULTS = new RequestParameters(0, 0, DEFAULT_TENANT, 0);

    public RequestParameters {
        tenant = tenant == null || tenant.isEmpty() ? DEFAULT_TENANT : tenant;
    }

    public RequestParameters(int priority, long timeoutMs, String tenant) {
        this(priority, timeoutMs, tenant, 0);
    }
}
