package io.flinkgpu.sim;

/**
 * One model of the simulated catalogue.
 *
 * @param index its rank in popularity (0 the most popular)
 * @param memoryBytes declared device memory of one instance ({@code memory_bytes})
 * @param latencyBound latency-bound (tight SLO, small batches) or throughput-bound (loose SLO, large batches)
 * @param meanRate mean requests per second over the diurnal cycle
 * @param phaseSeconds where its diurnal cycle starts (models of different regions peak at different times)
 * @param samples samples per request
 * @param maxBatchSamples the batcher's {@code max_batch_size} in samples
 * @param maxQueueDelayMs the batcher's {@code max_queue_delay}
 */
public record SimModel(int index, String name, Arch arch, int samples, long memoryBytes, double sloMs,
        boolean latencyBound, double meanRate, double phaseSeconds, int maxBatchSamples, double maxQueueDelayMs) {}
