package io.flinkgpu.bench.load;

import java.util.Map;

/**
 * CPU time per answered request during one point, in CPU-microseconds, split by thread (see
 * {@link ThreadCpu}).
 *
 * @param answers requests answered during the point (warm-up included: the CPU is read over the
 *     whole point), which every figure is divided by
 * @param seconds how long the readings span
 * @param processUs the whole JVM's CPU time per request (every thread, JIT and GC included)
 * @param jobUs the job's threads together (the {@code job_*} parts)
 * @param partsUs per part ({@link ThreadCpu.Part#key}), in report order
 * @param unattributedUs the process's CPU time that no live Java thread accounts for (JIT, GC,
 *     native threads, threads that ended between readings)
 * @param processCpuSeconds the JVM's CPU time over the point
 * @param threadsStarted threads first seen after the start (all their CPU time counts)
 * @param threadsEnded threads seen during the point that had ended by its end (their CPU time
 *     counts up to the last reading that saw them)
 * @param compileSeconds how long the JIT compilers spent compiling during the point (the JVM's
 *     accumulated compilation time, summed over its compiler threads; NaN where the JVM does not
 *     report it): part of the unattributed time, and a sign that the point measured code still
 *     being compiled
 * @param allocatedBytesPerRequest heap bytes the threads of each part ({@link ThreadCpu.Part#key})
 *     allocated per request over the point, counted like their CPU time (empty where the JVM keeps
 *     no per-thread allocation counters): what the young collections that pause every thread
 *     are paid for
 * @param gcPauses the garbage collector's stop-the-world pauses that began during the point (null
 *     where no collector reports them)
 * @param pressure the machine's CPU, I/O and memory stalls over the point, as the kernel counts them
 *     (null where it does not)
 */
public record CpuSplit(long answers, double seconds, double processUs, double jobUs, Map<String, Double> partsUs,
        double unattributedUs, double processCpuSeconds, int threadsStarted, int threadsEnded,
        double compileSeconds, Map<String, Double> allocatedBytesPerRequest, GcPauses.Summary gcPauses,
        Pressure.Stalls pressure) {

    /** The JIT compilers' busy time over the point's span, in cores (NaN where not reported). */
    public double compilerCores() {
        return seconds > 0 ? compileSeconds / seconds : Double.NaN;
    }

    /** Heap bytes allocated per request by the job's threads (the {@code job_*} parts), or NaN. */
    public double jobAllocatedBytes() {
        if (allocatedBytesPerRequest == null || allocatedBytesPerRequest.isEmpty()) {
            return Double.NaN;
        }
        double sum = 0;
        for (ThreadCpu.Part p : ThreadCpu.Part.values()) {
            sum += p.ofJob() ? allocatedBytesPerRequest.getOrDefault(p.key, 0.0) : 0;
        }
        return sum;
    }

    /** Heap bytes allocated per request by every thread, or NaN. */
    public double allocatedBytes() {
        if (allocatedBytesPerRequest == null || allocatedBytesPerRequest.isEmpty()) {
            return Double.NaN;
        }
        return allocatedBytesPerRequest.values().stream().mapToDouble(Double::doubleValue).sum();
    }

    /** The figure of part {@code key}, or NaN. */
    public double part(String key) {
        Double v = partsUs.get(key);
        return v == null ? Double.NaN : v;
    }
}
