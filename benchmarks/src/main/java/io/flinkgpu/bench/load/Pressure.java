package io.flinkgpu.bench.load;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The Linux kernel's pressure stall information ({@code /proc/pressure/cpu}, {@code io} and
 * {@code memory}): for how long, machine-wide, some task was stalled waiting for a CPU, for I/O or
 * for memory ({@code some}), and for how long every non-idle task was ({@code full}). A point reads
 * the totals at its start, as each measurement window closes and at its end, so that a window whose
 * requests stalled can be set beside the I/O stall in it: the embedded broker writes its log
 * through the page cache, and a write that the kernel throttles while it flushes dirty pages stalls
 * the broker, not the CPU.
 */
public final class Pressure {
    private static final Path DIR = Path.of("/proc/pressure");

    /** Cumulative stall times in microseconds, as the kernel counts them since boot. */
    record Totals(long cpuSome, long ioSome, long ioFull, long memorySome, long memoryFull) {}

    /**
     * The stalls over one point, in milliseconds: the totals of each kind, and the most I/O
     * ({@code some}) stall between two consecutive readings (a measurement window, the warm-up or the drain).
     */
    public record Stalls(double cpuSomeMs, double ioSomeMs, double ioFullMs, double memorySomeMs,
            double memoryFullMs, double ioSomeMostInAWindowMs) {}

    private Pressure() {}

    /** The totals now, or null where the kernel reports none (not Linux, or a kernel without PSI). */
    static Totals read() {
        try {
            return parse(Files.readString(DIR.resolve("cpu")), Files.readString(DIR.resolve("io")),
                    Files.readString(DIR.resolve("memory")));
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** The totals in the three files' text. */
    static Totals parse(String cpu, String io, String memory) {
        return new Totals(total(cpu, "some"), total(io, "some"), total(io, "full"), total(memory, "some"),
                total(memory, "full"));
    }

    /**
     * The {@code total=} of the line starting with {@code kind}; 0 for a {@code full} line that an
     * older kernel's cpu file lacks.
     */
    static long total(String text, String kind) {
        for (String line : text.split("\n")) {
            if (line.startsWith(kind + " ")) {
                int at = line.indexOf("total=");
                if (at < 0) {
                    throw new IllegalArgumentException("no total in '" + line + "'");
                }
                return Long.parseLong(line.substring(at + "total=".length()).trim());
            }
        }
        if (kind.equals("full")) {
            return 0;
        }
        throw new IllegalArgumentException("no '" + kind + "' line in '" + text + "'");
    }

    /** The stalls from {@code start} to {@code end}, {@code mostIoSome} the largest I/O delta between readings. */
    static Stalls between(Totals start, Totals end, long mostIoSome) {
        return new Stalls(ms(end.cpuSome - start.cpuSome), ms(end.ioSome - start.ioSome),
                ms(end.ioFull - start.ioFull), ms(end.memorySome - start.memorySome),
                ms(end.memoryFull - start.memoryFull), ms(mostIoSome));
    }

    private static double ms(long us) {
        return us / 1000.0;
    }

    /** Readings over one point: the first, the last and the largest I/O step between two. */
    static final class Readings {
        private final Totals first;
        private Totals last;
        private long mostIoSome;

        Readings(Totals first) {
            this.first = first;
            this.last = first;
        }

        /** Readings from now, or null where the kernel reports none. */
        static Readings start() {
            Totals now = read();
            return now == null ? null : new Readings(now);
        }

        /** Adds a reading of {@code now}. */
        void add(Totals now) {
            if (now != null) {
                mostIoSome = Math.max(mostIoSome, now.ioSome - last.ioSome);
                last = now;
            }
        }

        /** Reads the totals now and adds them. */
        void sample() {
            add(read());
        }

        /** The stalls from the first reading to the last. */
        Stalls stalls() {
            return between(first, last, mostIoSome);
        }
    }
}
