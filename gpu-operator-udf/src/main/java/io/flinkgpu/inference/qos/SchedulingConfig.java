package io.flinkgpu.inference.qos;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;

/**
 * A model's {@code scheduling} block: priority levels with their queue policies, the default
 * timeout, aging, and how partial batches are sized.
 *
 * @param priorityLevels number of levels; 1 is the highest
 * @param defaultPriority the level of requests that do not name one
 * @param defaultTimeoutMs deadline relative to arrival for requests that do not shorten it (0: none)
 * @param allowTimeoutOverride whether a request may ask for a longer timeout than the default
 * @param levels per-level queue policies (levels not listed use {@link LevelPolicy#DEFAULT})
 * @param agingMs a queued request is treated one level higher for every {@code agingMs} it has
 *     waited (0: no aging)
 * @param batchSizing how partial batches are cut; null where the block does not say, which reads
 *     as {@link BatchSizing#FIXED_DELAY} unless the operator's default ({@link
 *     #withBatchSizingDefault}) says otherwise
 * @param sloMs the latency objective for SLO-aware and AIMD sizing (0: none)
 * @param isolateLevels cut each batch from one priority level only, so that a high-priority
 *     batch is not topped up with (and slowed by) lower-priority requests
 * @param lowPriorityBatchMs while level-1 requests have arrived within the last second, batches
 *     of lower levels are cut no larger than the latency model predicts to run in this many ms,
 *     so that a high-priority request never waits long behind one (0: no cap)
 */
public record SchedulingConfig(
        @JsonProperty("priority_levels") int priorityLevels,
        @JsonProperty("default_priority") int defaultPriority,
        @JsonProperty("default_timeout_ms") long defaultTimeoutMs,
        @JsonProperty("allow_timeout_override") boolean allowTimeoutOverride,
        @JsonProperty("levels") Map<Integer, LevelPolicy> levels,
        @JsonProperty("aging_ms") long agingMs,
        @JsonProperty("batch_sizing") BatchSizing batchSizing,
        @JsonProperty("slo_ms") double sloMs,
        @JsonProperty("isolate_levels") boolean isolateLevels,
        @JsonProperty("low_priority_batch_ms") double lowPriorityBatchMs) implements Serializable {

    /** A model config without a {@code scheduling} block: batch sizing left to the operator's default. */
    public static final SchedulingConfig DEFAULTS =
            new SchedulingConfig(1, 1, 0, false, Map.of(), 0, null, 0, false, 0);

    /** Levels share batches (the default). */
    public SchedulingConfig(int priorityLevels, int defaultPriority, long defaultTimeoutMs, boolean allowTimeoutOverride,
            Map<Integer, LevelPolicy> levels, long agingMs, BatchSizing batchSizing, double sloMs) {
        this(priorityLevels, defaultPriority, defaultTimeoutMs, allowTimeoutOverride, levels, agingMs, batchSizing, sloMs,
                false, 0);
    }

    /** Without a cap on lower-priority batches. */
    public SchedulingConfig(int priorityLevels, int defaultPriority, long defaultTimeoutMs, boolean allowTimeoutOverride,
            Map<Integer, LevelPolicy> levels, long agingMs, BatchSizing batchSizing, double sloMs,
            boolean isolateLevels) {
        this(priorityLevels, defaultPriority, defaultTimeoutMs, allowTimeoutOverride, levels, agingMs, batchSizing, sloMs,
                isolateLevels, 0);
    }

    @JsonCreator
    public SchedulingConfig {
        if (priorityLevels < 1) {
            priorityLevels = 1;
        }
        if (defaultPriority == 0) {
            defaultPriority = (priorityLevels + 1) / 2;
        }
        if (defaultPriority < 1 || defaultPriority > priorityLevels) {
            throw new IllegalArgumentException(
                    "default_priority " + defaultPriority + " is outside 1.." + priorityLevels);
        }
        if (defaultTimeoutMs < 0 || agingMs < 0 || sloMs < 0 || lowPriorityBatchMs < 0) {
            throw new IllegalArgumentException("default_timeout_ms, aging_ms and slo_ms must not be negative");
        }
        levels = levels == null ? Map.of() : new TreeMap<>(levels);
        for (Integer level : levels.keySet()) {
            if (level < 1 || level > priorityLevels) {
                throw new IllegalArgumentException("policy for level " + level + " outside 1.." + priorityLevels);
            }
        }
        double shares = levels.values().stream().mapToDouble(LevelPolicy::minShare).sum();
        if (shares > 1) {
            throw new IllegalArgumentException("min_share over all levels adds up to " + shares + " > 1");
        }
    }

    /** How partial batches are cut: the block's {@code batch_sizing}, {@link BatchSizing#FIXED_DELAY} where it sets none. */
    @Override
    @JsonProperty("batch_sizing")
    public BatchSizing batchSizing() {
        return batchSizing == null ? BatchSizing.FIXED_DELAY : batchSizing;
    }

    /** Whether the block sets {@code batch_sizing} itself. */
    public boolean setsBatchSizing() {
        return batchSizing != null;
    }

    /**
     * This block with {@code sizing} as its batch sizing where it sets none (the operator's
     * {@code inference.batching.batch-sizing}); this block itself where it sets one.
     */
    public SchedulingConfig withBatchSizingDefault(BatchSizing sizing) {
        if (batchSizing != null || sizing == null) {
            return this;
        }
        return new SchedulingConfig(priorityLevels, defaultPriority, defaultTimeoutMs, allowTimeoutOverride, levels,
                agingMs, sizing, sloMs, isolateLevels, lowPriorityBatchMs);
    }

    public LevelPolicy level(int level) {
        return levels.getOrDefault(level, LevelPolicy.DEFAULT);
    }
}
