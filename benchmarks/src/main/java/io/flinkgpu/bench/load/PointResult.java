package io.flinkgpu.bench.load;

import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * One measured point. Latencies in milliseconds, from intended send time to answer received.
 *
 * @param mode "open" (Poisson arrivals at {@code offered} requests/s) or "closed" ({@code offered} outstanding)
 * @param attainment share of the measured requests answered without error within the SLO
 *     (lost and failed requests count as misses)
 * @param pass p99 within the SLO, at least 99% attainment, and (open loop) at least 90% of the
 *     offered rate answered, or of the rate its Poisson schedule actually held in the measured
 *     period where that is lower ({@code scheduledRate})
 * @param cdf latency distribution: pairs of (percentile, latency ms)
 * @param benchmarkCores cores this JVM used on average during the point (/proc/self/stat)
 * @param otherCores cores other processes used meanwhile
 * @param cpuPerRequest this JVM's CPU time per answered request, split by thread; null where
 *     per-thread CPU time is not available
 * @param classes latencies per request class where the target has classes (the NLP scenario's
 *     sequence-length buckets), else empty
 * @param stages where the answers' time went, for targets whose answers carry the operator's
 *     timings; null otherwise
 * @param scheduledRate open loop: the arrivals the schedule held in the measured period per
 *     second. A Poisson schedule of a few hundred arrivals is several percent off its nominal rate
 *     (at 50 requests/s over 4 s, one sample in twelve is 10% short); NaN where not known
 */
public record PointResult(String mode, double offered, double seconds, long sent, long answered, long errors,
        long lost, long duplicates, double throughput, double p50, double p90, double p95, double p99, double p999,
        double max, double mean, double sloMs, double attainment, boolean pass, boolean stable,
        List<Window> windows, double meanBatch, double meanQueueMs, double meanInferenceMs, List<double[]> cdf,
        double benchmarkCores, double otherCores, CpuSplit cpuPerRequest, List<ClassLatency> classes,
        StageTail stages, double scheduledRate, SendLag sendLag) {

    /** A result without the sender's lag (closed loop, and results built by hand). */
    public PointResult(String mode, double offered, double seconds, long sent, long answered, long errors,
            long lost, long duplicates, double throughput, double p50, double p90, double p95, double p99, double p999,
            double max, double mean, double sloMs, double attainment, boolean pass, boolean stable,
            List<Window> windows, double meanBatch, double meanQueueMs, double meanInferenceMs, List<double[]> cdf,
            double benchmarkCores, double otherCores, CpuSplit cpuPerRequest, List<ClassLatency> classes,
            StageTail stages, double scheduledRate) {
        this(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput, p50, p90, p95, p99, p999,
                max, mean, sloMs, attainment, pass, stable, windows, meanBatch, meanQueueMs, meanInferenceMs, cdf,
                benchmarkCores, otherCores, cpuPerRequest, classes, stages, scheduledRate, null);
    }

    /**
     * How late the open loop's sender sent its measured requests, in milliseconds: {@code lag*} is
     * the time from a request's intended send time until {@code Target.send} returned (the load
     * generator's own thread waking late, and the client's send call), which the end-to-end latency
     * counts; {@code fromSend*} is the end-to-end latency counted from that actual send instead.
     * Where the lag's p99 is close to the end-to-end p99, the tail is the load generator's thread
     * not being run on time (on a machine shared with the system under test, the same stalls reach
     * the system's threads too).
     */
    public record SendLag(long requests, double lagP50, double lagP99, double lagMax, double fromSendP50,
            double fromSendP99) {}

    /**
     * Each answered request's end-to-end latency split by the operator's timings: queued (admitted
     * to batch cut), inference (the batch's run on its execution thread) and outside (the rest: both
     * Kafka trips, source, parser, routing, the hand-offs to and from the execution thread, emit and
     * sink). Percentiles of each part over the point's answers without error, in milliseconds; a
     * request's tail is not the sum of the parts' tails, but the part whose p99 is close to the
     * end-to-end p99 is where the tail is.
     */
    public record StageTail(long requests, double queueP50, double queueP99, double inferenceP50,
            double inferenceP99, double outsideP50, double outsideP99) {}

    /** The measured requests of one class: how many, their p50 and p99 (lost ones included, as overall). */
    public record ClassLatency(String name, long requests, double p50, double p99) {}

    /** Other processes using more than this many cores during a point mark it as contended. */
    public static final double CONTENDED_OTHER_CORES = 0.25;

    /** Whether something outside the benchmark competed for the CPU during this point. */
    public boolean contended() {
        return otherCores > CONTENDED_OTHER_CORES;
    }

    /** The JIT compilers busy for more than this many cores during a point mark it as compiling. */
    public static final double COMPILING_CORES = 0.1;

    /** The JIT compilers' busy time during this point in cores, NaN where not measured. */
    public double compilerCores() {
        return cpuPerRequest == null ? Double.NaN : cpuPerRequest.compilerCores();
    }

    /**
     * Whether the JVM was still compiling code while this point ran: on two cores a compiler
     * thread takes CPU from the system under test, so such a point understates it.
     */
    public boolean compiling() {
        return compilerCores() > COMPILING_CORES;
    }

    /** This result with the CPU used by the benchmark JVM and by other processes while it ran. */
    public PointResult withCpu(double benchmark, double other) {
        return new PointResult(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput, p50, p90,
                p95, p99, p999, max, mean, sloMs, attainment, pass, stable, windows, meanBatch, meanQueueMs,
                meanInferenceMs, cdf, benchmark, other, cpuPerRequest, classes, stages, scheduledRate, sendLag);
    }

    /** This result with its CPU time per request. */
    public PointResult withCpuPerRequest(CpuSplit split) {
        return new PointResult(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput, p50, p90,
                p95, p99, p999, max, mean, sloMs, attainment, pass, stable, windows, meanBatch, meanQueueMs,
                meanInferenceMs, cdf, benchmarkCores, otherCores, split, classes, stages, scheduledRate, sendLag);
    }

    /** This result with {@code batch} as its mean batch size (measured outside the answers, e.g. rows per batch). */
    public PointResult withMeanBatch(double batch) {
        return new PointResult(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput, p50, p90,
                p95, p99, p999, max, mean, sloMs, attainment, pass, stable, windows, batch, meanQueueMs,
                meanInferenceMs, cdf, benchmarkCores, otherCores, cpuPerRequest, classes, stages, scheduledRate, sendLag);
    }

    /**
     * This open-loop result judged against the rate its schedule held in the measured period
     * ({@code rate} arrivals per second) where that is below the offered rate: a point that answered
     * everything it was sent does not fail because its Poisson sample was short.
     */
    public PointResult withScheduledRate(double rate) {
        return new PointResult(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput, p50, p90,
                p95, p99, p999, max, mean, sloMs, attainment,
                passes(mode, p99, sloMs, attainment, throughput, offered, rate), stable, windows, meanBatch,
                meanQueueMs, meanInferenceMs, cdf, benchmarkCores, otherCores, cpuPerRequest, classes, stages, rate,
                sendLag);
    }

    static boolean passes(String mode, double p99, double sloMs, double attainment, double throughput, double offered,
            double scheduledRate) {
        double reference = scheduledRate > 0 ? Math.min(offered, scheduledRate) : offered;
        return p99 <= sloMs && attainment >= MIN_ATTAINMENT
                && (!"open".equals(mode) || throughput >= MIN_THROUGHPUT_SHARE * reference);
    }

    /** Throughput and latency of one measurement window (by time of answer). */
    public record Window(double throughput, double p50, double p99) {}

    /** Minimum share of the offered rate that must be answered for an open-loop point to pass. */
    public static final double MIN_THROUGHPUT_SHARE = 0.9;
    public static final double MIN_ATTAINMENT = 0.99;

    static PointResult of(String mode, double offered, double seconds, long sent, long answered, long errors,
            long lost, long duplicates, double throughput, Histogram h, double sloMs, double attainment,
            boolean stable, List<Window> windows, double meanBatch, double meanQueueMs, double meanInferenceMs,
            List<ClassLatency> classes, StageTail stages, SendLag sendLag) {
        boolean any = h.getTotalCount() > 0;
        double p99 = any ? h.getValueAtPercentile(99) / 1000.0 : Double.NaN;
        boolean pass = any && passes(mode, p99, sloMs, attainment, throughput, offered, Double.NaN);
        return new PointResult(mode, offered, seconds, sent, answered, errors, lost, duplicates, throughput,
                pct(h, 50), pct(h, 90), pct(h, 95), p99, pct(h, 99.9), any ? h.getMaxValue() / 1000.0 : Double.NaN,
                any ? h.getMean() / 1000.0 : Double.NaN, sloMs, attainment, pass, stable, windows, meanBatch,
                meanQueueMs, meanInferenceMs, cdf(h), Double.NaN, Double.NaN, null, List.copyOf(classes), stages,
                Double.NaN, sendLag);
    }

    /** The class named {@code name}, or null. */
    public ClassLatency classNamed(String name) {
        for (ClassLatency c : classes == null ? List.<ClassLatency>of() : classes) {
            if (c.name().equals(name)) {
                return c;
            }
        }
        return null;
    }

    static double pct(Histogram h, double p) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1000.0;
    }

    private static List<double[]> cdf(Histogram h) {
        List<double[]> out = new ArrayList<>();
        if (h.getTotalCount() == 0) {
            return out;
        }
        // Percentiles spaced evenly in "nines": 0, 10, 20, ... 90, 91, ... 99, 99.1, ... 99.99, 100.
        for (int i = 0; i <= 90; i += 10) {
            out.add(new double[] {i, h.getValueAtPercentile(Math.max(i, 0.0001)) / 1000.0});
        }
        for (int i = 91; i <= 99; i++) {
            out.add(new double[] {i, h.getValueAtPercentile(i) / 1000.0});
        }
        for (double p = 99.1; p < 99.95; p += 0.1) {
            out.add(new double[] {p, h.getValueAtPercentile(p) / 1000.0});
        }
        out.add(new double[] {99.99, h.getValueAtPercentile(99.99) / 1000.0});
        out.add(new double[] {100, h.getMaxValue() / 1000.0});
        return out;
    }

    /** A short console line. */
    public String line() {
        return String.format("%s %8.0f%s | answered %7.0f/s | p50 %7.2f p99 %8.2f ms | SLO %.0f ms: %5.1f%% | "
                        + "batch %5.1f | %s%s%s",
                mode.equals("open") ? "rate" : "outstanding", offered, mode.equals("open") ? "/s" : "",
                throughput, p50, p99, sloMs, attainment * 100, Double.isNaN(meanBatch) ? 0.0 : meanBatch,
                pass ? "PASS" : "FAIL", stable ? "" : " (unstable)",
                lost > 0 ? " lost " + lost : "") + (errors > 0 ? " errors " + errors : "")
                + (sendLag != null && sendLag.lagP99() >= 1 ? String.format(" (sent late: p99 %.1f ms)",
                        sendLag.lagP99()) : "")
                + (contended() ? String.format(" CONTENDED (other processes used %.1f cores)", otherCores) : "")
                + (compiling() ? String.format(" COMPILING (the JIT busy %.2f cores)", compilerCores()) : "");
    }
}
