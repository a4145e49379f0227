package io.flinkgpu.bench.load;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * CPU used on this machine by processes other than this JVM, so that a point measured while
 * something else (a build, another benchmark) competed for the cores is flagged instead of
 * silently reported. Linux only; elsewhere it reports NaN.
 */
public final class MachineLoad {
    private static final double TICKS_PER_SECOND = 100.0; // USER_HZ on Linux

    private final long busyTicks;
    private final long selfTicks;
    private final long nanos;

    private MachineLoad(long busyTicks, long selfTicks, long nanos) {
        this.busyTicks = busyTicks;
        this.selfTicks = selfTicks;
        this.nanos = nanos;
    }

    public static MachineLoad now() {
        try {
            String[] cpu = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
            long busy = busyTicks(cpu);
            String self = Files.readString(Path.of("/proc/self/stat"));
            String[] f = self.substring(self.lastIndexOf(')') + 2).split(" ");
            long mine = Long.parseLong(f[11]) + Long.parseLong(f[12]);
            return new MachineLoad(busy, mine, System.nanoTime());
        } catch (IOException | RuntimeException e) {
            return new MachineLoad(-1, -1, System.nanoTime());
        }
    }

    /**
     * The ticks of the first line of {@code /proc/stat} ({@code cpu user nice system idle iowait
     * irq softirq steal ...}) that count as someone's use of the machine: user, nice, system, hard
     * interrupts and the hypervisor's steal time. Soft interrupts are left out: on this loopback
     * benchmark they are almost all the kernel's network processing of the benchmark's own Kafka
     * traffic, which the kernel accounts to no process, so counting them would mark a busy point
     * as contended with nothing else running.
     */
    static long busyTicks(String[] cpu) {
        return Long.parseLong(cpu[1]) + Long.parseLong(cpu[2]) + Long.parseLong(cpu[3]) + Long.parseLong(cpu[6])
                + (cpu.length > 8 ? Long.parseLong(cpu[8]) : 0);
    }

    /** Average cores used by other processes since {@code start}. */
    public double otherCoresSince(MachineLoad start) {
        if (busyTicks < 0 || start.busyTicks < 0 || nanos <= start.nanos) {
            return Double.NaN;
        }
        double seconds = (nanos - start.nanos) / 1e9;
        long others = (busyTicks - start.busyTicks) - (selfTicks - start.selfTicks);
        return Math.max(0, others / TICKS_PER_SECOND / seconds);
    }

    /** Average cores used by this JVM since {@code start}. */
    public double selfCoresSince(MachineLoad start) {
        if (selfTicks < 0 || start.selfTicks < 0 || nanos <= start.nanos) {
            return Double.NaN;
        }
        return (selfTicks - start.selfTicks) / TICKS_PER_SECOND / ((nanos - start.nanos) / 1e9);
    }
}
