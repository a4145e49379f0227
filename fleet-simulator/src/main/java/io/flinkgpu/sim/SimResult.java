package io.flinkgpu.sim;

import java.util.List;
import java.util.Map;

/**
 * What one run measured, over the arrivals from the end of the warm-up to the horizon.
 *
 * @param arrivals requests that arrived in the window
 * @param answered of them, answered (any latency)
 * @param withinSlo answered within their model's SLO
 * @param refused refused at admission (queue full, deadline infeasible)
 * @param expired deadline passed while queued
 * @param unrouted no device serves the model
 * @param noRoom the device could not load the model
 * @param utilization device busy time in the window / (devices x window)
 * @param goodputPerGpu requests answered within SLO per second per device
 * @param swapsPerMinute model loads started in the window per minute (all devices)
 * @param evictions models evicted in the window
 * @param maxModelsOnADevice the most models any device held at once (sampled at every load)
 * @param cycleWallMs the coordinator's cycles, real wall time each (evaluate, plan, decide, record)
 * @param arrivalsHash a digest of the arrival trace (model and time of every arrival)
 */
public record SimResult(String policy, double load, int devices, int models, double horizonSeconds,
        double warmupSeconds, long arrivals, long answered, long withinSlo, long refused, long expired, long unrouted,
        long noRoom, long inFlightAtEnd, double p50Ms, double p95Ms, double p99Ms, double attainment,
        double attainmentLatencyBound, double attainmentThroughputBound, double utilization, double goodputPerGpu,
        double offeredPerSecond, double swapsPerMinute, long loads, long evictions, int maxModelsOnADevice,
        List<Double> cycleWallMs, long plansPublished, long arrivalsHash, Map<String, Object> extra) {

    /** Every request that arrived in the window is accounted for exactly once. */
    public boolean conserved() {
        return arrivals == answered + refused + expired + unrouted + noRoom + inFlightAtEnd;
    }

    /** Median coordinator cycle wall time, ms (NaN without cycles). */
    public double cycleWallMsMedian() {
        if (cycleWallMs.isEmpty()) {
            return Double.NaN;
        }
        double[] s = cycleWallMs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        return s[s.length / 2];
    }

    public double cycleWallMsMax() {
        return cycleWallMs.stream().mapToDouble(Double::doubleValue).max().orElse(Double.NaN);
    }
}
