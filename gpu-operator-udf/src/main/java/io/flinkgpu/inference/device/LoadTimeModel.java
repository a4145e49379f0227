package io.flinkgpu.inference.device;

import java.io.Serializable;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How long a simulated GPU takes to put a model on the device: {@code a + b x MiB} milliseconds,
 * a fixed cost (context and session set-up, kernel selection) plus a cost per MiB of model
 * (the host-to-device copy). It covers the device's part of every load, a cold load from the
 * repository and a swap-in from the host tier alike; the repository read of a cold load is real.
 *
 * <p>Written as {@code "50+0.5*mib"} (50 ms plus 0.5 ms per MiB), {@code "20"} (20 ms flat) or
 * {@code "0"} (as fast as the CPU creates the session).
 */
public final class LoadTimeModel implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern LINEAR = Pattern.compile("([0-9]*\\.?[0-9]+)(?:\\+([0-9]*\\.?[0-9]+)\\*mib)?");

    /**
     * The default: 50 ms of session set-up (what ONNX Runtime's CUDA provider takes for a small
     * model) plus 0.5 ms per MiB, a host-to-device copy from pageable memory at about 2 GB/s.
     */
    public static final String DEFAULT_SPEC = "50+0.5*mib";

    /** No modelled cost: a load takes what the CPU session creation takes. */
    public static final LoadTimeModel NONE = new LoadTimeModel(0, 0);

    private final double fixedMs;
    private final double perMibMs;

    private LoadTimeModel(double fixedMs, double perMibMs) {
        this.fixedMs = fixedMs;
        this.perMibMs = perMibMs;
    }

    public static LoadTimeModel linear(double fixedMs, double perMibMs) {
        if (!(fixedMs >= 0) || !(perMibMs >= 0) || Double.isInfinite(fixedMs) || Double.isInfinite(perMibMs)) {
            throw new IllegalArgumentException("load time terms must be non-negative and finite: " + fixedMs + ", "
                    + perMibMs);
        }
        return new LoadTimeModel(fixedMs, perMibMs);
    }

    public static LoadTimeModel parse(String spec) {
        Matcher m = LINEAR.matcher(spec.replace(" ", "").toLowerCase(Locale.ROOT));
        if (!m.matches()) {
            throw new IllegalArgumentException("load time model '" + spec
                    + "' is not 'A+B*mib' (milliseconds per load and per MiB of model)");
        }
        return linear(Double.parseDouble(m.group(1)), m.group(2) == null ? 0 : Double.parseDouble(m.group(2)));
    }

    /** The modelled duration of loading a model of {@code bytes}. */
    public long loadNanos(long bytes) {
        return Math.round((fixedMs + perMibMs * bytes / (1024.0 * 1024.0)) * 1_000_000);
    }

    @Override
    public String toString() {
        return fixedMs + "+" + perMibMs + "*mib";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LoadTimeModel m && toString().equals(m.toString());
    }

    @Override
    public int hashCode() {
        return toString().hashCode();
    }
}
