package io.flinkgpu.inference.device;

import java.io.Serializable;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How long a simulated GPU takes for one batch: either {@code a + b x samples} (milliseconds,
 * the latency model the batcher and the planner fit per model and device) or a multiple of the
 * CPU time the batch really took.
 *
 * <p>Written as {@code "2+0.05*b"} (2 ms plus 0.05 ms per sample), {@code "3"} (3 ms flat) or
 * {@code "cpu*0.25"} (a quarter of the measured CPU time).
 */
public final class SpeedModel implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern LINEAR = Pattern.compile("([0-9]*\\.?[0-9]+)(?:\\+([0-9]*\\.?[0-9]+)\\*b)?");
    private static final Pattern CPU = Pattern.compile("cpu\\*([0-9]*\\.?[0-9]+)");

    /** As fast as the CPU: the batch takes what it took. */
    public static final SpeedModel CPU_SPEED = cpuMultiple(1.0);

    private final double fixedMs;
    private final double perSampleMs;
    private final double cpuFactor; // NaN for a linear model

    private SpeedModel(double fixedMs, double perSampleMs, double cpuFactor) {
        this.fixedMs = fixedMs;
        this.perSampleMs = perSampleMs;
        this.cpuFactor = cpuFactor;
    }

    public static SpeedModel linear(double fixedMs, double perSampleMs) {
        if (!(fixedMs >= 0) || !(perSampleMs >= 0)) {
            throw new IllegalArgumentException("latency terms must be non-negative: " + fixedMs + ", " + perSampleMs);
        }
        return new SpeedModel(fixedMs, perSampleMs, Double.NaN);
    }

    public static SpeedModel cpuMultiple(double factor) {
        if (!(factor > 0) || Double.isInfinite(factor)) {
            throw new IllegalArgumentException("CPU time factor must be positive: " + factor);
        }
        return new SpeedModel(0, 0, factor);
    }

    public static SpeedModel parse(String spec) {
        String s = spec.replace(" ", "").toLowerCase(Locale.ROOT);
        Matcher cpu = CPU.matcher(s);
        if (cpu.matches()) {
            return cpuMultiple(Double.parseDouble(cpu.group(1)));
        }
        Matcher linear = LINEAR.matcher(s);
        if (linear.matches()) {
            return linear(Double.parseDouble(linear.group(1)),
                    linear.group(2) == null ? 0 : Double.parseDouble(linear.group(2)));
        }
        throw new IllegalArgumentException("speed model '" + spec
                + "' is neither 'A+B*b' (milliseconds per batch and per sample) nor 'cpu*F'");
    }

    /** The modelled duration of a batch of {@code samples} whose real CPU execution took {@code cpuNanos}. */
    public long latencyNanos(int samples, long cpuNanos) {
        if (!Double.isNaN(cpuFactor)) {
            return Math.round(cpuNanos * cpuFactor);
        }
        return Math.round((fixedMs + perSampleMs * samples) * 1_000_000);
    }

    @Override
    public String toString() {
        return Double.isNaN(cpuFactor) ? fixedMs + "+" + perSampleMs + "*b" : "cpu*" + cpuFactor;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SpeedModel m && toString().equals(m.toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
