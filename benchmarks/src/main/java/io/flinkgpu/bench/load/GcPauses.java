package io.flinkgpu.bench.load;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayDeque;
import java.util.Deque;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * The garbage collector's stop-the-world pauses in this JVM, as the collectors report them
 * ({@link GarbageCollectionNotificationInfo}): every thread of the benchmark JVM (the job, the
 * broker, the load generator) stands still for each one, so a pause longer than the requests'
 * service time shows in the tail of every request in flight. A point reads the pauses reported
 * during it ({@link #since}), on {@link System#nanoTime}: the collectors' own start times run on a
 * clock of their own, tens of milliseconds apart from the JVM's uptime.
 *
 * <p>Collectors whose beans report concurrent cycles rather than pauses (ZGC's and Shenandoah's
 * "Cycles", G1's "Concurrent GC") are left out. The collectors report durations in whole
 * milliseconds, and deliver their notifications on a service thread a moment (tens of
 * milliseconds) after the pause: a pause in a point's last moments counts in the next point.
 */
public final class GcPauses {
    /** How many pauses are kept (the oldest are dropped): far more than a point sees. */
    static final int KEPT = 100_000;

    /** Pauses reported during a point: how many, their total and the longest, in milliseconds. */
    public record Summary(int count, double totalMs, double longestMs) {}

    private static final GcPauses INSTANCE = new GcPauses();

    /** (System.nanoTime when reported, duration in milliseconds), oldest first. */
    private final Deque<long[]> pauses = new ArrayDeque<>();
    private final boolean listening;

    private GcPauses() {
        boolean any = false;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc instanceof NotificationEmitter emitter && isPauses(gc.getName())) {
                emitter.addNotificationListener((n, handback) -> {
                    if (GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(n.getType())) {
                        var info = GarbageCollectionNotificationInfo.from((CompositeData) n.getUserData()).getGcInfo();
                        record(System.nanoTime(), info.getDuration());
                    }
                }, null, null);
                any = true;
            }
        }
        this.listening = any;
    }

    /** Whether a collector bean named {@code name} reports stop-the-world pauses (not concurrent cycles). */
    static boolean isPauses(String name) {
        return !name.endsWith(" Cycles") && !name.equals("G1 Concurrent GC");
    }

    /**
     * Listens from now on, if not yet (the first call to this class loads it and registers the
     * listeners): call it at a point's start, before reading {@link System#nanoTime}.
     */
    public static void listen() {
        // loading the class ran the constructor of INSTANCE
    }

    /** The pauses reported at or after {@code nanoTime} ({@link System#nanoTime}); null where no collector reports pauses. */
    public static Summary since(long nanoTime) {
        return INSTANCE.listening ? INSTANCE.summary(nanoTime) : null;
    }

    private synchronized void record(long reportedNanos, long durationMs) {
        if (pauses.size() == KEPT) {
            pauses.removeFirst();
        }
        pauses.addLast(new long[] {reportedNanos, durationMs});
    }

    private synchronized Summary summary(long from) {
        int count = 0;
        long total = 0;
        long longest = 0;
        var it = pauses.descendingIterator();
        while (it.hasNext()) {
            long[] p = it.next();
            if (p[0] - from < 0) {
                break;
            }
            count++;
            total += p[1];
            longest = Math.max(longest, p[1]);
        }
        return new Summary(count, total, longest);
    }
}
