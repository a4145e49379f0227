package io.flinkgpu.inference.qos;

/** A token bucket: {@code ratePerSecond} tokens accrue continuously up to {@code burst}. */
public final class TokenBucket {
    private final double ratePerNano;
    private final double burst;
    private double tokens;
    private long lastNanos;

    public TokenBucket(double ratePerSecond, double burst, long nowNanos) {
        if (ratePerSecond <= 0 || burst < 1) {
            throw new IllegalArgumentException("rate must be positive and burst at least 1");
        }
        this.ratePerNano = ratePerSecond / 1e9;
        this.burst = burst;
        this.tokens = burst;
        this.lastNanos = nowNanos;
    }

    /** Takes {@code n} tokens if available. */
    public boolean tryAcquire(double n, long nowNanos) {
        if (nowNanos > lastNanos) {
            tokens = Math.min(burst, tokens + (nowNanos - lastNanos) * ratePerNano);
            lastNanos = nowNanos;
        }
        if (tokens >= n) {
            tokens -= n;
            return true;
        }
        return false;
    }
}
