package io.flinkgpu.bench.load;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.LongSupplier;
import java.util.random.RandomGenerator;

/**
 * The one load generator of every benchmark here. A point runs against a {@link Target} open loop
 * (Poisson arrivals at a rate, latency from each request's intended send time) or closed loop (a
 * fixed number of outstanding requests), with a warm-up and measurement windows; a
 * {@link #timed timed run} sends several open-loop streams for a fixed period and hands back
 * every answer for the benchmark to analyse itself.
 */
public final class LoadDriver {
    private LoadDriver() {}

    /** Most requests one point may send. */
    static final int MAX_REQUESTS = 20_000_000;

    /** Hooks into a point while it runs; every method is optional and runs on the driver's thread. */
    public interface Listener {
        Listener NONE = new Listener() {};

        /** Measurement window {@code index} closed with {@code answersPerSecond} answers/s. */
        default void window(int index, double answersPerSecond) {}

        /** The warm-up is over: requests sent from now on are measured. */
        default void measuring() {}

        /** The last measurement window closed; the drain follows. */
        default void measured() {}
    }

    /**
     * Open loop at {@code ratePerSecond}: the schedule is fixed in advance; the sender never waits
     * for answers, and if it falls behind (the target's send blocked) it sends the overdue
     * requests at once, each still timed from its intended send time.
     */
    public static PointResult openLoop(Target target, int runId, double ratePerSecond, RunSpec spec, double sloMs,
            long seed, Listener listener) throws Exception {
        long total = spec.warmupNanos() + spec.maxWindows() * spec.windowNanos();
        ArrivalSchedule schedule = ArrivalSchedule.poisson(ratePerSecond, total, seed);
        if (schedule.size() > MAX_REQUESTS) {
            throw new IllegalArgumentException("rate " + ratePerSecond + " needs " + schedule.size() + " requests");
        }
        PointResult p = point("open", ratePerSecond, Math.max(1, schedule.size()), target, runId, spec, sloMs,
                listener, recorder -> recorder, (start, recorder, control) -> {
                    for (int i = 0; i < schedule.size(); i++) {
                        long intended = start + schedule.offset(i);
                        if (!control.mayStart(intended)) {
                            break;
                        }
                        waitUntil(intended);
                        recorder.sending(i, intended);
                        target.send(i);
                        recorder.sent(i, System.nanoTime());
                    }
                });
        long from = spec.warmupNanos();
        long to = from + Math.round(p.seconds() * 1e9);
        return p.withScheduledRate(scheduledIn(schedule, from, to) / p.seconds());
    }

    /** How many of {@code schedule}'s arrivals fall in [from, to) nanoseconds after its start. */
    static int scheduledIn(ArrivalSchedule schedule, long from, long to) {
        int n = 0;
        for (int i = 0; i < schedule.size(); i++) {
            long t = schedule.offset(i);
            if (t >= from && t < to) {
                n++;
            }
        }
        return n;
    }

    /**
     * Closed loop with {@code outstanding} requests in flight: each answer lets the next request
     * go; latency counts from the actual send time (which is the intended one here).
     */
    public static PointResult closedLoop(Target target, int runId, int outstanding, RunSpec spec, double sloMs,
            Listener listener) throws Exception {
        int capacity = 2_000_000;
        Semaphore slots = new Semaphore(outstanding);
        return point("closed", outstanding, capacity, target, runId, spec, sloMs, listener,
                recorder -> (seq, received, error, batch, queueMs, inferenceMs) -> {
                    if (recorder.completeFirst(seq, received, error, batch, queueMs, inferenceMs)) {
                        slots.release();
                    }
                }, (start, recorder, control) -> {
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
                });
    }

    /** One open-loop stream of a timed run: its target, the run id its answers carry, and its arrivals. */
    public record Stream(Target target, int runId, ArrivalSchedule.Rate rate, RandomGenerator random) {}

    /**
     * A timed run: every stream sends Poisson arrivals at its rate from {@code startNanos} to
     * {@code endNanos} (System.nanoTime), each on its own thread, never waiting for answers; then
     * the driver waits until every request is answered or {@code drain} after the end has passed.
     * Unlike a point, nothing is excluded as warm-up and the period is never extended. Returns the
     * answers of each stream, in order, closed to later answers.
     */
    public static List<StreamAnswers> timed(List<Stream> streams, long startNanos, long endNanos, Duration drain)
            throws Exception {
        List<ArrivalSchedule> schedules = new ArrayList<>();
        List<StreamAnswers> answers = new ArrayList<>();
        for (Stream s : streams) {
            ArrivalSchedule schedule = ArrivalSchedule.poisson(s.rate(), endNanos - startNanos, s.random());
            if (schedule.size() > MAX_REQUESTS) {
                throw new IllegalArgumentException("stream " + s.runId() + " needs " + schedule.size() + " requests");
            }
            StreamAnswers a = new StreamAnswers(Math.max(1, schedule.size()));
            s.target().begin(s.runId(), a);
            schedules.add(schedule);
            answers.add(a);
        }
        List<Sender> senders = new ArrayList<>();
        for (int k = 0; k < streams.size(); k++) {
            Target target = streams.get(k).target();
            ArrivalSchedule schedule = schedules.get(k);
            StreamAnswers a = answers.get(k);
            senders.add(Sender.start("load-timed-" + k, () -> {
                for (int i = 0; i < schedule.size(); i++) {
                    long intended = startNanos + schedule.offset(i);
                    waitUntil(intended);
                    a.sending(i, intended);
                    target.send(i);
                }
            }));
        }
        for (Sender s : senders) {
            s.join(0);
        }
        drain(() -> answers.stream().mapToLong(StreamAnswers::outstanding).sum(), endNanos + drain.toNanos());
        answers.forEach(StreamAnswers::close);
        return answers;
    }

    /** Sends a point's requests; {@code start} is when the first may go. */
    @FunctionalInterface
    private interface Sending {
        void run(long start, PointRecorder recorder, Control control) throws Exception;
    }

    /** One point: warm-up, windows until stable, drain; {@code completions} wraps the recorder for the target. */
    private static PointResult point(String mode, double offered, int capacity, Target target, int runId,
            RunSpec spec, double sloMs, Listener listener, Function<PointRecorder, Target.Completions> completions,
            Sending sending) throws Exception {
        Listener hooks = listener == null ? Listener.NONE : listener;
        long start = System.nanoTime() + 5_000_000L;
        MachineLoad load = MachineLoad.now();
        ThreadCpu.Sampler cpu = ThreadCpu.start(Thread.currentThread());
        PointRecorder recorder = new PointRecorder(capacity, start + spec.warmupNanos(), spec.windowNanos(),
                spec.maxWindows(), sloMs, target.requestClasses(), mode.equals("open"));
        target.begin(runId, completions.apply(recorder));
        Control control = new Control(recorder.measureStartNanos() + spec.minWindows() * spec.windowNanos());
        Sender sender = Sender.start("load-" + mode + "-loop", () -> {
            try {
                sending.run(start, recorder, control);
            } finally {
                cpu.ending(); // the sender ends before the point does: its last reading is its own
            }
        });
        int windows = measure(recorder, control, spec, sampling(hooks, cpu));
        sender.join(10_000);
        long finished = drain(recorder::outstanding, System.nanoTime() + spec.drainTimeout().toNanos());
        CpuSplit split = cpu.finish(recorder.answeredTotal());
        MachineLoad end = MachineLoad.now();
        return recorder.finish(mode, offered, windows, finished, sloMs, spec.stabilityTolerance())
                .withCpu(end.selfCoresSince(load), end.otherCoresSince(load)).withCpuPerRequest(split);
    }

    /** {@code hooks}, reading every thread's CPU time as each measurement window closes. */
    private static Listener sampling(Listener hooks, ThreadCpu.Sampler cpu) {
        return new Listener() {
            @Override
            public void window(int index, double answersPerSecond) {
                cpu.sample();
                hooks.window(index, answersPerSecond);
            }

            @Override
            public void measuring() {
                cpu.sample();
                hooks.measuring();
            }

            @Override
            public void measured() {
                hooks.measured();
            }
        };
    }

    /** Waits through the windows, extending the run one window at a time until it is stable. */
    private static int measure(PointRecorder recorder, Control control, RunSpec spec, Listener listener)
            throws InterruptedException {
        int windows = spec.minWindows();
        int reported = 0;
        boolean measuring = false;
        while (true) {
            long end = control.end();
            // Report the start of the measurement and each window as it closes.
            while (System.nanoTime() < end) {
                if (!measuring && System.nanoTime() >= recorder.measureStartNanos()) {
                    listener.measuring();
                    measuring = true;
                }
                long next = recorder.measureStartNanos() + (reported + 1) * spec.windowNanos();
                if (reported < windows && System.nanoTime() >= next) {
                    listener.window(reported, recorder.windowCompletions(reported) / (spec.windowNanos() / 1e9));
                    reported++;
                }
                long wake = measuring ? Math.min(end, next) : recorder.measureStartNanos();
                sleepNanos(wake - System.nanoTime());
            }
            if (recorder.stable(windows, spec.stabilityTolerance()) || windows >= spec.maxWindows()) {
                control.finish();
                listener.measured();
                return windows;
            }
            windows++;
            control.extend(spec.windowNanos());
        }
    }

    /** Waits while requests are outstanding, until {@code deadline}; returns when it stopped waiting. */
    private static long drain(LongSupplier outstanding, long deadline) throws InterruptedException {
        while (outstanding.getAsLong() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return System.nanoTime();
    }

    /**
     * How close to a request's intended send time the sender stops parking and spins
     * ({@code -Dbench.load.spin-ns}, default 20 us). Spinning keeps the send times exact but costs
     * the load generator a share of a core that grows as the gaps between arrivals shrink toward it
     * (about 20 us per request at 22,000 requests/s), on the same two cores as the system it
     * measures; 0: park for the whole wait, so a request may go out up to the timer's slack (~50 us
     * on Linux) late, which its latency counts, being measured from the intended time.
     */
    static final long SPIN_NANOS = Long.getLong("bench.load.spin-ns", 20_000L);

    static void waitUntil(long nanos) {
        waitUntil(nanos, SPIN_NANOS);
    }

    /** Returns at or after {@code nanos} (System.nanoTime), spinning for at most the last {@code spinNanos}. */
    static void waitUntil(long nanos, long spinNanos) {
        long wait;
        while ((wait = nanos - System.nanoTime()) > 0) {
            if (wait > 200_000) {
                LockSupport.parkNanos(wait - 100_000);
            } else if (wait > spinNanos) {
                LockSupport.parkNanos(spinNanos == 0 ? wait : wait / 2);
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

    /** A daemon thread sending requests; {@link #join} rethrows what it failed with. */
    private static final class Sender {
        interface Body {
            void run() throws Exception;
        }

        private final Thread thread;
        private final AtomicReference<Throwable> failure = new AtomicReference<>();

        private Sender(String name, Body body) {
            thread = new Thread(() -> {
                try {
                    body.run();
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, name);
            thread.setDaemon(true);
        }

        static Sender start(String name, Body body) {
            Sender s = new Sender(name, body);
            s.thread.start();
            return s;
        }

        /** Waits up to {@code millis} (0: for ever) for the sender to finish, then rethrows its failure. */
        void join(long millis) throws Exception {
            thread.join(millis);
            Throwable t = failure.get();
            if (t instanceof Exception e) {
                throw e;
            }
            if (t instanceof Error e) {
                throw e;
            }
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
