package io.flinkgpu.bench.load;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * Runs one load point against a {@link Target}: open loop (Poisson arrivals at a rate, latency
 * from each request's intended send time) or closed loop (a fixed number of outstanding requests).
 */
public final class LoadDriver {
    private LoadDriver() {}

    /** Most requests one point may send. */
    static final int MAX_REQUESTS = 20_000_000;

    /**
     * Open loop at {@code ratePerSecond}: the schedule is fixed in advance; the sender never waits
     * for answers, and if it falls behind (the target's send blocked) it sends the overdue
     * requests at once, each still timed from its intended send time.
     */
    public static PointResult openLoop(Target target, int runId, double ratePerSecond, RunSpec spec, double sloMs,
            long seed, Consumer<String> progress) throws Exception {
        long total = spec.warmupNanos() + spec.maxWindows() * spec.windowNanos();
        ArrivalSchedule schedule = ArrivalSchedule.poisson(ratePerSecond, total, seed);
        if (schedule.size() > MAX_REQUESTS) {
            throw new IllegalArgumentException("rate " + ratePerSecond + " needs " + schedule.size() + " requests");
        }
        long start = System.nanoTime() + 5_000_000L;
        MachineLoad load = MachineLoad.now();
        PointRecorder recorder = new PointRecorder(Math.max(1, schedule.size()), start + spec.warmupNanos(),
                spec.windowNanos(), spec.maxWindows(), sloMs);
        target.begin(runId, recorder);
        Control control = new Control(recorder.measureStartNanos() + spec.minWindows() * spec.windowNanos());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread sender = new Thread(() -> {
            try {
                for (int i = 0; i < schedule.size(); i++) {
                    long intended = start + schedule.offset(i);
                    if (!control.mayStart(intended)) {
                        break;
                    }
                    waitUntil(intended);
                    recorder.sending(i, intended);
                    target.send(i);
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "load-open-loop");
        sender.setDaemon(true);
        sender.start();
        int windows = measure(recorder, control, spec, progress);
        sender.join(10_000);
        rethrow(failure.get());
        long finished = drain(recorder, spec);
        MachineLoad end = MachineLoad.now();
        return recorder.finish("open", ratePerSecond, windows, finished, sloMs, spec.stabilityTolerance())
                .withCpu(end.selfCoresSince(load), end.otherCoresSince(load));
    }

    /**
     * Closed loop with {@code outstanding} requests in flight: each answer lets the next request
     * go; latency counts from the actual send time (which is the intended one here).
     */
    public static PointResult closedLoop(Target target, int runId, int outstanding, RunSpec spec, double sloMs,
            Consumer<String> progress) throws Exception {
        long start = System.nanoTime() + 5_000_000L;
        MachineLoad load = MachineLoad.now();
        int capacity = 2_000_000;
        PointRecorder recorder = new PointRecorder(capacity, start + spec.warmupNanos(), spec.windowNanos(),
                spec.maxWindows(), sloMs);
        Semaphore slots = new Semaphore(outstanding);
        target.begin(runId, (seq, received, error, batch, queueMs, inferenceMs) -> {
            if (recorder.completeFirst(seq, received, error, batch, queueMs, inferenceMs)) {
                slots.release();
            }
        });
        Control control = new Control(recorder.measureStartNanos() + spec.minWindows() * spec.windowNanos());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread sender = new Thread(() -> {
            try {
                waitUntil(start);
                for (int i = 0; i < capacity; i++) {
                    while (!slots.tryAcquire(20, TimeUnit.MILLISECONDS)) {
                        if (!control.mayStart(System.nanoTime())) {
                            return;
                        }
                    }
                    long now = System.nanoTime();
                    if (!control.mayStart(now)) {
                        return;
                    }
                    recorder.sending(i, now);
                    target.send(i);
                }
            } catch (Throwable t) {
                failure.set(t);
            }
        }, "load-closed-loop");
        sender.setDaemon(true);
        sender.start();
        int windows = measure(recorder, control, spec, progress);
        sender.join(10_000);
        rethrow(failure.get());
        long finished = drain(recorder, spec);
        MachineLoad end = MachineLoad.now();
        return recorder.finish("closed", outstanding, windows, finished, sloMs, spec.stabilityTolerance())
                .withCpu(end.selfCoresSince(load), end.otherCoresSince(load));
    }

    /** Waits through the windows, extending the run one window at a time until it is stable. */
    private static int measure(PointRecorder recorder, Control control, RunSpec spec, Consumer<String> progress)
            throws InterruptedException {
        int windows = spec.minWindows();
        int reported = 0;
        while (true) {
            long end = control.end();
            // Report each window as it closes.
            while (System.nanoTime() < end) {
                long next = recorder.measureStartNanos() + (reported + 1) * spec.windowNanos();
                if (reported < windows && System.nanoTime() >= next) {
                    if (progress != null) {
                        progress.accept(String.format("    window %d: %.0f answers/s", reported + 1,
                                recorder.windowCompletions(reported) / (spec.windowNanos() / 1e9)));
                    }
                    reported++;
                }
                sleepNanos(Math.min(end, next) - System.nanoTime());
            }
            if (recorder.stable(windows, spec.stabilityTolerance()) || windows >= spec.maxWindows()) {
                control.finish();
                return windows;
            }
            windows++;
            control.extend(spec.windowNanos());
        }
    }

    private static long drain(PointRecorder recorder, RunSpec spec) throws InterruptedException {
        long deadline = System.nanoTime() + spec.drainTimeout().toNanos();
        while (recorder.outstanding() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return System.nanoTime();
    }

    static void waitUntil(long nanos) {
        long wait;
        while ((wait = nanos - System.nanoTime()) > 0) {
            if (wait > 200_000) {
                LockSupport.parkNanos(wait - 100_000);
            } else if (wait > 20_000) {
                LockSupport.parkNanos(wait / 2);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    private static void sleepNanos(long nanos) throws InterruptedException {
        if (nanos > 0) {
            TimeUnit.NANOSECONDS.sleep(Math.min(nanos, 50_000_000L));
        }
    }

    private static void rethrow(Throwable t) throws Exception {
        if (t instanceof Exception e) {
            throw e;
        }
        if (t instanceof Error e) {
            throw e;
        }
    }

    /** The end of the measurement period, extendable until it is final. */
    static final class Control {
        private long end;
        private boolean finished;

        Control(long end) {
            this.end = end;
        }

        synchronized long end() {
            return end;
        }

        synchronized void extend(long nanos) {
            end += nanos;
            notifyAll();
        }

        synchronized void finish() {
            finished = true;
            notifyAll();
        }

        /** Whether a request intended at {@code intended} belongs to the run; waits while that is undecided. */
        synchronized boolean mayStart(long intended) throws InterruptedException {
            while (intended >= end && !finished) {
                wait(1);
            }
            return intended < end;
        }
    }
}
