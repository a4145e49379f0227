package io.flinkgpu.inference.device;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Which batches of which model version a simulated GPU fails on purpose: a share in [0, 1] per
 * {@code model} or {@code model:version} ({@code inference.device.simulated.model-failures}; a
 * versioned entry wins over the model's). A bad model version that fails on a share of its
 * inputs, without a second network: the same weights, a failure share.
 *
 * <p>Deterministic: a batch fails when a 64-bit hash of {@code model:version} and the batch's
 * first request id, mapped to [0, 1), is below the share. The same request first in a batch of
 * the same version therefore fails every time, so the operator's batch isolation (which retries
 * a failed batch in halves) narrows the failure down to that request, as with a real input the
 * model cannot take; the other requests of the batch are answered. Where the caller gives no
 * request id, the hash takes the device's count of that version's batches instead, so two devices
 * given the same sequence of batches fail the same ones.
 */
final class SimulatedFailures {
    private final Map<String, Double> shares;
    private final Map<String, AtomicLong> counters = new ConcurrentHashMap<>();

    SimulatedFailures(Map<String, Double> shares) {
        this.shares = Map.copyOf(shares);
    }

    static final SimulatedFailures NONE = new SimulatedFailures(Map.of());

    boolean isEmpty() {
        return shares.isEmpty();
    }

    /** The share of {@code model}'s batches in {@code version} (null: unknown) that fail; 0 when none is set. */
    double shareOf(String model, String version) {
        Double versioned = version == null ? null : shares.get(model + ":" + version);
        return versioned != null ? versioned : shares.getOrDefault(model, 0.0);
    }

    /** Whether this batch fails: see the class comment for what the decision depends on. */
    boolean fails(String model, String version, String firstRequestId) {
        double share = shareOf(model, version);
        if (share <= 0) {
            return false;
        }
        String key = model + ":" + version;
        String seed = firstRequestId != null ? "r" + firstRequestId
                : "n" + counters.computeIfAbsent(key, k -> new AtomicLong()).getAndIncrement();
        return share >= 1 || unit(key + "#" + seed) < share;
    }

    /** FNV-1a over the characters, finished with SplitMix64's mixer, as a double in [0, 1). */
    static double unit(String s) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < s.length(); i++) {
            h ^= s.charAt(i);
            h *= 0x100000001b3L;
        }
        h = (h ^ (h >>> 30)) * 0xbf58476d1ce4e5b9L;
        h = (h ^ (h >>> 27)) * 0x94d049bb133111ebL;
        h ^= h >>> 31;
        return (h >>> 11) * 0x1.0p-53;
    }

    @Override
    public String toString() {
        return shares.toString();
    }
}
