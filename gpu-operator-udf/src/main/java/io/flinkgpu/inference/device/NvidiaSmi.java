package io.flinkgpu.inference.device;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * GPU utilisation, temperature and power from {@code nvidia-smi --query-gpu=... --format=csv}.
 * Chosen over NVML because nvidia-smi ships with every driver and its CSV query is a stable
 * interface, while NVML from Java needs a native binding that Maven Central does not provide in
 * a maintained form. One query covers every GPU and is cached for a second, so all devices of a
 * TaskManager share one process start per metric interval.
 */
public final class NvidiaSmi {
    private static final Logger LOG = LoggerFactory.getLogger(NvidiaSmi.class);
    static final String QUERY = "index,utilization.gpu,temperature.gpu,power.draw,memory.used,memory.total";
    private static final long MAX_AGE_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long TIMEOUT_SECONDS = 5;
    private static NvidiaSmi shared;

    private final Path executable;
    private Map<Integer, Sample> last = Map.of();
    private long lastAtNanos = Long.MIN_VALUE;
    private boolean warned;

    /** One GPU's readings; NaN where nvidia-smi says "[N/A]" or "[Not Supported]". */
    public record Sample(int index, double utilizationPercent, double temperatureCelsius, double powerWatts,
            double memoryUsedMiB, double memoryTotalMiB) {}

    NvidiaSmi(Path executable) {
        this.executable = executable;
    }

    /** The JVM's nvidia-smi, if one is on the PATH. */
    public static synchronized Optional<NvidiaSmi> shared() {
        if (shared == null) {
            String path = System.getenv().getOrDefault("PATH", "");
            for (String dir : path.split(File.pathSeparator)) {
                Path candidate = Path.of(dir.isEmpty() ? "." : dir, "nvidia-smi");
                if (Files.isExecutable(candidate)) {
                    shared = new NvidiaSmi(candidate);
                    break;
                }
            }
        }
        return Optional.ofNullable(shared);
    }

    /** Readings of every GPU by index, at most a second old; empty when nvidia-smi fails. */
    public synchronized Map<Integer, Sample> sample() {
        long now = System.nanoTime();
        if (lastAtNanos != Long.MIN_VALUE && now - lastAtNanos < MAX_AGE_NANOS) {
            return last;
        }
        lastAtNanos = now;
        try {
            Process p = new ProcessBuilder(executable.toString(), "--query-gpu=" + QUERY,
                    "--format=csv,noheader,nounits").redirectErrorStream(true).start();
            if (!p.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException("nvidia-smi did not answer within " + TIMEOUT_SECONDS + " s");
            }
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new IOException("nvidia-smi exited with " + p.exitValue() + ": " + out.strip());
            }
            Map<Integer, Sample> byIndex = new HashMap<>();
            for (Sample s : parse(out)) {
                byIndex.put(s.index(), s);
            }
            last = byIndex;
        } catch (IOException | RuntimeException e) {
            if (!warned) {
                LOG.warn("GPU telemetry from nvidia-smi unavailable: {}", e.getMessage());
                warned = true;
            }
            last = Map.of();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            last = Map.of();
        }
        return last;
    }

    /** Parses {@code --format=csv,noheader,nounits} output of {@link #QUERY}; malformed lines are skipped. */
    static List<Sample> parse(String output) {
        List<Sample> samples = new ArrayList<>();
        for (String line : output.split("\\R")) {
            String[] f = line.split(",");
            if (f.length != 6) {
                continue;
            }
            try {
                samples.add(new Sample(Integer.parseInt(f[0].trim()), number(f[1]), number(f[2]), number(f[3]),
                        number(f[4]), number(f[5])));
            } catch (NumberFormatException e) {
                // not a GPU line (a warning nvidia-smi printed); skip it
            }
        }
        return samples;
    }

    private static double number(String field) {
        String s = field.trim();
        return s.startsWith("[") ? Double.NaN : Double.parseDouble(s);
    }
}
