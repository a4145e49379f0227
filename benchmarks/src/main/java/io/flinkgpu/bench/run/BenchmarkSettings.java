package io.flinkgpu.bench.run;

import io.flinkgpu.bench.load.RunSpec;
import io.flinkgpu.bench.sweep.RateSweep;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Durations, sweep plan and tuning candidates of a mode.
 *
 * @param jvmWarmup how long a throwaway job runs under load before anything is measured, so that the
 *     broker's, the Kafka clients' and Flink's code is compiled before the Kafka floor and the first
 *     configuration (without it the first configuration ran while the JIT took up to a core); zero: none
 * @param lowLoadClassRequests the requests of every request class (the NLP scenario's sequence-length
 *     buckets; of all requests where there are none) that the 10%-of-capacity point's measurement
 *     windows hold at least, lengthening them where needed: a p99 over fewer than 100 requests is
 *     their maximum; zero: the point's usual length
 */
public record BenchmarkSettings(String mode, RunSpec point, RunSpec unloaded, double rateFactor, int maxPoints,
        int refineSteps, double maxRate, Duration ceilingWarmup, Duration ceilingDuration, int[] ceilingBatches,
        List<Map<String, String>> tuningCandidates, Duration jvmWarmup, int lowLoadClassRequests) {

    static final int[] BATCHES = {1, 8, 32, 64, 128};

    /**
     * The highest rate a sweep offers. Above what two cores carry (Flink and Kafka alone answered
     * 64,000 requests/s of the recommendation scenario, the cap before this one), so that a sweep
     * ends at a failing rate and the passthrough's goodput, hence the roofline, is measured rather
     * than bounded.
     */
    static final double MAX_RATE = 512_000;

    public static BenchmarkSettings quick() {
        return new BenchmarkSettings("quick",
                new RunSpec(Duration.ofSeconds(1), Duration.ofSeconds(1), 3, 4, Duration.ofSeconds(5), 0.10),
                new RunSpec(Duration.ofMillis(500), Duration.ofSeconds(1), 3, 3, Duration.ofSeconds(2), 0.10),
                2.0, 11, 1, MAX_RATE, Duration.ofMillis(300), Duration.ofMillis(1500), BATCHES,
                List.of(options("inference.batching.max-batch-size", "32"), options("inference.execution-threads", "2"),
                        options("inference.batching.batch-sizing", "SLO_AWARE_CAPPED")), Duration.ofSeconds(20), 0);
    }

    public static BenchmarkSettings full() {
        return new BenchmarkSettings("full",
                // 4 x 2.5 s windows: every point spans at least one checkpoint (10 s interval), so
                // checkpoint pauses are always in the measurement rather than by luck.
                new RunSpec(Duration.ofSeconds(2), Duration.ofMillis(2500), 4, 6, Duration.ofSeconds(10), 0.10),
                new RunSpec(Duration.ofSeconds(1), Duration.ofSeconds(2), 3, 3, Duration.ofSeconds(3), 0.10),
                Math.sqrt(2), 18, 2, MAX_RATE, Duration.ofSeconds(1), Duration.ofSeconds(4), BATCHES,
                List.of(options("inference.batching.max-batch-size", "32"),
                        options("inference.batching.max-queue-delay", "1 ms", "inference.batching.max-batch-size",
                                "128"),
                        options("inference.execution-threads", "2"),
                        options("inference.batching.batch-sizing", "SLO_AWARE_CAPPED")), Duration.ofSeconds(40), 100);
    }

    /** A tiny run for the smoke test: seconds per point. */
    public static BenchmarkSettings smoke() {
        return new BenchmarkSettings("smoke",
                new RunSpec(Duration.ofMillis(300), Duration.ofMillis(500), 3, 3, Duration.ofSeconds(3), 0.10),
                new RunSpec(Duration.ofMillis(300), Duration.ofMillis(300), 3, 3, Duration.ofSeconds(2), 0.10),
                4.0, 2, 0, 64_000, Duration.ofMillis(100), Duration.ofMillis(200), new int[] {1, 8}, List.of(),
                Duration.ZERO, 0);
    }

    static Map<String, String> options(String... kv) {
        Map<String, String> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    public RateSweep.Plan plan(double startRate) {
        // The full mode's finer grid starts one octave higher so that it needs no more points.
        double start = mode.equals("full") ? 2 * startRate : startRate;
        return new RateSweep.Plan(start, rateFactor, maxPoints, refineSteps, maxRate);
    }
}
