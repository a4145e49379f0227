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
 */
public record CpuSplit(long answers, double seconds, double processUs, double jobUs, Map<String, Double> partsUs,
        double unattributedUs, double processCpuSeconds, int threadsStarted, int threadsEnded,
        double compileSeconds) {

    /** The JIT compilers' busy time over the point's span, in cores (NaN where not reported). */
    public double compilerCores() {
        return seconds > 0 ? compileSeconds / seconds : Double.NaN;
    }

    /** The figure of part {@code key}, or NaN. */
    public double part(String key) {
        Double v = partsUs.get(key);
        return v == null ? Double.NaN : v;
    }
}
