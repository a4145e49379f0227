package io.flinkgpu.bench.coordinator;

import static io.flinkgpu.bench.coordinator.RecoveryOptions.num;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/** The load-ramp benchmark's settings (its command-line options) and the command that reproduces a run. */
final class RampOptions {
    @Option(names = "--out", description = "Output directory (default: ${DEFAULT-VALUE})")
    Path out = Path.of("docs/benchmarks/coordinator");

    @Option(names = "--summary", description = "Also record the targets in this summary.json "
            + "(default: ${DEFAULT-VALUE})")
    Path summary = Path.of("docs/benchmarks/summary.json");

    @Option(names = "--summary-only", description = "Do not run: record the targets of the existing ramp.json in "
            + "--summary")
    boolean summaryOnly;

    @Option(names = "--lead-in-seconds", description = "Seconds of 1x traffic, with the coordinator running, before "
            + "the first phase, not measured: the coordinator's first cycles (its first REST collections and plan, "
            + "class loading and the JIT compiling the job's code on this shared machine) fall there; the first configuration "
            + "runs in a fresh JVM, so the lead-in is what keeps compilation out of its first phase "
            + "(default: ${DEFAULT-VALUE})")
    int leadInSeconds = 60;

    @Option(names = "--configs", split = ",", description = "Configurations to run, in order "
            + "(default: ${DEFAULT-VALUE})")
    List<String> configs = new ArrayList<>(List.of(RampBenchmark.COORDINATOR, RampBenchmark.STATIC));

    @Option(names = "--rate", description = "The 1x rate, requests/s (default: ${DEFAULT-VALUE})")
    double rate = 80;

    @Option(names = "--factor", description = "The peak rate as a multiple of --rate (default: ${DEFAULT-VALUE})")
    double factor = 3;

    @Option(names = "--phases", split = ",", description = "Seconds of 1x, ramp up, peak, ramp down, 1x "
            + "(default: ${DEFAULT-VALUE})")
    List<Integer> phases = new ArrayList<>(List.of(60, 60, 90, 60, 90));

    @Option(names = "--drain-seconds", description = "Longest wait for outstanding responses after the last phase "
            + "(default: ${DEFAULT-VALUE})")
    int drainSeconds = 60;

    @Option(names = "--speed", description = "Simulated GPU speed model, ms per batch + ms per sample "
            + "(default: ${DEFAULT-VALUE})")
    String speed = "1+4*b";

    @Option(names = "--slo-ms", description = "End-to-end latency objective (default: ${DEFAULT-VALUE})")
    double sloMs = 150;

    @Option(names = "--target-utilization", description = "coordinator.plan.target-utilization (default: the "
            + "coordinator's, ${DEFAULT-VALUE})")
    double targetUtilization = CoordinatorOptions.TARGET_UTILIZATION.defaultValue();

    @Option(names = "--forecast-horizon-s", description = "coordinator.forecast.horizon in seconds, 0: off "
            + "(default: the coordinator's, ${DEFAULT-VALUE})")
    long forecastHorizonSeconds = CoordinatorOptions.FORECAST_HORIZON.defaultValue().toSeconds();

    @Option(names = "--cycle-ms", description = "Time between coordinator cycles (default: ${DEFAULT-VALUE})")
    long cycleMs = 1500;

    @Option(names = "--metrics-fetch-ms", description = "Flink REST metric fetcher interval, "
            + "metrics.fetcher.update-interval (default: ${DEFAULT-VALUE})")
    long fetchMs = 500;

    @Option(names = "--metrics-settle-ms", description = "coordinator.flink.metrics-settle; below --metrics-fetch-ms "
            + "(default: the coordinator's default, ${DEFAULT-VALUE})")
    long settleMs = CoordinatorOptions.METRICS_SETTLE.defaultValue().toMillis();

    @Option(names = "--plot", negatable = true, description = "Write ramp-p99.png and ramp-replicas.png "
            + "(default: ${DEFAULT-VALUE})")
    boolean plot = true;

    RampProfile profile() {
        return new RampProfile(rate, factor, phases);
    }

    /** Samples per second one device runs at batch {@code b} under the speed model. */
    double capacity(int b) {
        RecoveryOptions r = new RecoveryOptions();
        r.speed = speed;
        return r.capacity(b);
    }

    /** The command line, from the repository root, that runs these settings again. */
    String command() {
        return "mvn -o -q -B -pl benchmarks compile exec:exec -Dbench.main=" + RampBenchmark.class.getName()
                + " -Dbench.args=\"" + String.format(Locale.ROOT, "--configs=%s --lead-in-seconds=%d --rate=%s --factor=%s "
                + "--phases=%s --speed=%s --slo-ms=%s --target-utilization=%s --forecast-horizon-s=%d --cycle-ms=%d "
                + "--metrics-fetch-ms=%d --metrics-settle-ms=%d", String.join(",", configs), leadInSeconds, num(rate),
                num(factor),
                String.join(",", phases.stream().map(String::valueOf).toList()), speed, num(sloMs),
                num(targetUtilization), forecastHorizonSeconds, cycleMs, fetchMs, settleMs) + "\"";
    }
}
