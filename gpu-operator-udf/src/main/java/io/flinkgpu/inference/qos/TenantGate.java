package io.flinkgpu.inference.qos;

import io.flinkgpu.inference.protocol.ErrorCode;
import java.util.HashMap;
import java.util.Map;

/**
 * Per-tenant admission: the model must be allowed, the tenant's token bucket must have a token,
 * and its in-flight count must be under its limit. Single-threaded (the operator's mailbox).
 */
public final class TenantGate {
    private final TenantRegistry registry;
    private final Map<String, TokenBucket> buckets = new HashMap<>();
    private final Map<String, int[]> inFlight = new HashMap<>();

    public TenantGate(TenantRegistry registry) {
        this.registry = registry;
    }

    /** Admits the request (counting it in flight) or returns why not: FORBIDDEN_MODEL or QUOTA_EXCEEDED. */
    public ErrorCode admit(String tenant, String model, long nowNanos) {
        TenantConfig config = registry.get(tenant);
        if (!config.allows(model)) {
            return ErrorCode.FORBIDDEN_MODEL;
        }
        int[] flying = inFlight.computeIfAbsent(tenant, t -> new int[1]);
        if (config.maxInFlight() > 0 && flying[0] >= config.maxInFlight()) {
            return ErrorCode.QUOTA_EXCEEDED;
        }
        if (config.rateLimit() > 0) {
            TokenBucket bucket = buckets.computeIfAbsent(tenant, t -> new TokenBucket(config.rateLimit(),
                    config.burst() > 0 ? config.burst() : Math.max(1, config.rateLimit()), nowNanos));
            if (!bucket.tryAcquire(1, nowNanos)) {
                return ErrorCode.QUOTA_EXCEEDED;
            }
        }
        flying[0]++;
        return null;
    }

    /** An admitted request was answered. */
    public void release(String tenant) {
        int[] flying = inFlight.get(tenant);
        if (flying != null && flying[0] > 0) {
            flying[0]--;
        }
    }

    public int inFlight(String tenant) {
        int[] flying = inFlight.get(tenant);
        return flying == null ? 0 : flying[0];
    }

    public double weight(String tenant) {
        return registry.weight(tenant);
    }
}
