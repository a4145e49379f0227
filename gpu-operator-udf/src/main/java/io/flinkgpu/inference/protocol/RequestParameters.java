package io.flinkgpu.inference.protocol;

import java.io.Serializable;

/**
 * The request parameters the scheduler understands. {@code priority} 1 is the highest; 0 means
 * "the model's default level". {@code timeoutMs} 0 means "the model's default timeout".
 * {@code deadlineEpochMs} (0: none) is an absolute deadline in milliseconds since the epoch; when
 * both are given the earlier one counts. {@code origin} (null: none) says where the request came
 * from, e.g. {@code topic/partition@offset}; the job sets it from the Kafka record so that a
 * request refused after decoding is dead-lettered with its source.
 */
public record RequestParameters(int priority, long timeoutMs, String tenant, long deadlineEpochMs, String origin)
        implements Serializable {
    public static final String DEFAULT_TENANT = "default";
    public static final RequestParameters DEFAULTS = new RequestParameters(0, 0, DEFAULT_TENANT, 0, null);

    public RequestParameters {
        tenant = tenant == null || tenant.isEmpty() ? DEFAULT_TENANT : tenant;
        origin = origin == null || origin.isEmpty() ? null : origin;
    }

    public RequestParameters(int priority, long timeoutMs, String tenant, long deadlineEpochMs) {
        this(priority, timeoutMs, tenant, deadlineEpochMs, null);
    }

    public RequestParameters(int priority, long timeoutMs, String tenant) {
        this(priority, timeoutMs, tenant, 0, null);
    }

    /** The same parameters with another tenant ({@code this} if it is the same). */
    public RequestParameters withTenant(String newTenant) {
        return tenant.equals(newTenant) ? this
                : new RequestParameters(priority, timeoutMs, newTenant, deadlineEpochMs, origin);
    }

    /** The same parameters with another origin. */
    public RequestParameters withOrigin(String newOrigin) {
        return new RequestParameters(priority, timeoutMs, tenant, deadlineEpochMs, newOrigin);
    }
}
