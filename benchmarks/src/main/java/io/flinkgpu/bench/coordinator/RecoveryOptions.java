package io.flinkgpu.bench.coordinator;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * The recovery benchmark's settings (its command-line options) and what follows from them: the
 * models that get traffic, the simulated device's speed model and capacity, the command that
 * reproduces a run.
 */
final class RecoveryOptions {
    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/coordinator");

    @Option(names = "--summary", description = "Also record the targets in this summary.json "
            + "(default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing recovery.json in "
            + "--summary")
    boolean summaryOnly;

    @Option(names = "--configs", split = ",", description = "Configurations to run, in order "
            + "(default: ${DEFAULT-VALUE})")
    List<String> configs = new ArrayList<>(List.of(RecoveryBenchmark.COORDINATOR, RecoveryBenchmark.NO_SETTLE,
            RecoveryBenchmark.STATIC));

    @Option(names = "--before-seconds", description = "Phase 1 (steady load) in seconds (default: ${DEFAULT-VALUE})")
    int beforeSeconds = 20;

    @Option(names = "--after-seconds", description = "Phase 2 (after the step) in seconds (default: ${DEFAULT-VALUE})")
    int afterSeconds = 60;

    @Option(names = "--drain-seconds", description = "Longest wait for outstanding responses after phase 2 "
            + "(default: ${DEFAULT-VALUE})")
    int drainSeconds = 60;

    @Option(names = "--rate", description = "Phase-1 rate of the stepped model, requests/s (default: ${DEFAULT-VALUE})")
    double rate = 130;

    @Option(names = "--step", description = "Rate factor of the stepped model at t0 (default: ${DEFAULT-VALUE})")
    double step = 2.0;

    @Option(names = "--steady-rate", description = "Rate of the second model, requests/s; 0: one model only "
            + "(default: ${DEFAULT-VALUE})")
    double steadyRate = 30;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "1+4*b";

    @Option(names = "--slo-ms", description = "End-to-end p99 objective per window (default: ${DEFAULT-VALUE})")
    double sloMs = 150;

    @Option(names = "--target-utilization", description = "coordinator.plan.target-utilization (coordinator default "
            + "0.7): the steady phase, whose estimated load is about 0.6-0.65 device-s/s here, must sit clearly below it, "
            + "or the noise of one cycle's rate sample alone adds and removes replicas (default: ${DEFAULT-VALUE})")
    double targetUtilization = 0.8;

    @Option(names = "--cycle-ms", description = "Time between coordinator cycles (default: ${DEFAULT-VALUE})")
    long cycleMs = 1500;

    @Option(names = "--metrics-fetch-ms", description = "Flink REST metric fetcher interval, "
            + "metrics.fetcher.update-interval (default: ${DEFAULT-VALUE})")
    long fetchMs = 500;

    @Option(names = "--metrics-settle-ms", description = "coordinator.flink.metrics-settle of the coordinator "
            + "configuration; below --metrics-fetch-ms (default: the coordinator's default, ${DEFAULT-VALUE})")
    long settleMs = CoordinatorOptions.METRICS_SETTLE.defaultValue().toMillis();

    @Option(names = "--recovery-windows", description = "Consecutive 1-s windows within the SLO that count as "
            + "recovered (default: ${DEFAULT-VALUE})")
    int recoveryWindows = 5;

    @Option(names = "--plot", negatable = true, description = "Write recovery-p99.png (default: ${DEFAULT-VALUE})")
    boolean plot = true;

    /** The stepped model, and the steady one unless it gets no traffic. */
    List<String> models() {
        return steadyRate > 0 ? List.of(RecoveryBenchmark.STEPPED, RecoveryBenchmark.STEADY)
                : List.of(RecoveryBenchmark.STEPPED);
    }

    /** The speed model's milliseconds per batch. */
    double alpha() {
        return Double.parseDouble(speed.replace("*b", "").split("\\+")[0]);
    }

    /** The speed model's milliseconds per sample. */
    double beta() {
        return Double.parseDouble(speed.replace("*b", "").split("\\+")[1]);
    }

    /** Samples per second one device runs at batch {@code b} under the speed model. */
    double capacity(int b) {
        return b / ((alpha() + b * beta()) / 1000);
    }

    /** The command line, from the repository root, that runs these settings again. */
    String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + RecoveryBenchmark.class.getName()
                + " -Dbench.args=\"" + String.format(Locale.ROOT, "--configs=%s --before-seconds=%d --after-seconds=%d "
                + "--rate=%s --step=%s --steady-rate=%s --speed=%s --slo-ms=%s --target-utilization=%s --cycle-ms=%d "
                + "--metrics-fetch-ms=%d --metrics-settle-ms=%d", String.join(",", configs), beforeSeconds, afterSeconds,
                num(rate), num(step), num(steadyRate), speed, num(sloMs), num(targetUtilization), cycleMs, fetchMs,
                settleMs) + "\"";
    }

    /** {@code d} without a fractional part when it has none. */
    static String num(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
