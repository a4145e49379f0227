package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The driver against in-memory targets: latency is counted from the intended send time, so a
 * stall anywhere (in the system or in the sender itself) shows in the tail instead of being
 * hidden by requests that were simply sent later.
 */
class LoadDriverTest {
    static final RunSpec SPEC = new RunSpec(Duration.ofMillis(200), Duration.ofMillis(400), 3, 3,
            Duration.ofSeconds(2), 0.5);

    private final ScheduledExecutorService server = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        server.shutdownNow();
    }

    /** Answers every request after {@code serviceMillis}. */
    final class DelayTarget implements Target {
        final long serviceMillis;
        volatile Completions completions;

        DelayTarget(long serviceMillis) {
            this.serviceMillis = serviceMillis;
        }

        @Override
        public void begin(int runId, Completions c) {
            completions = c;
        }

        @Override
        public void send(int seq) {
            Completions c = completions;
            server.schedule(() -> c.complete(seq, System.nanoTime(), false, 1, 0, 0), serviceMillis,
                    TimeUnit.MILLISECONDS);
        }
    }

    @Test
    void aFastSystemMeetsItsSloAndAnswersTheOfferedRate() throws Exception {
        // A generous SLO: CI machines may be busy; only a stall of seconds would fail this.
        PointResult p = LoadDriver.openLoop(new DelayTarget(1), 1, 500, SPEC, 2000, 7, null);
        assertThat(p.mode()).isEqualTo("open");
        assertThat(p.lost()).isZero();
        assertThat(p.sent()).isBetween(450L, 750L); // ~600 expected in 1.2 s
        assertThat(p.p50()).isBetween(0.9, 1000.0);
        assertThat(p.attainment()).isGreaterThan(0.99);
        assertThat(p.throughput()).isBetween(350.0, 650.0);
        assertThat(p.pass()).isTrue();
        assertThat(p.cdf()).isNotEmpty();
    }

    @Test
    void aStalledSenderShowsUpInTheTail() throws Exception {
        // The target blocks the sender once for 300 ms (e.g. a full producer buffer). With latency
        // counted from the actual send time, only that one request would look slow; counted from
        // the intended time, every request scheduled during the stall waited too.
        AtomicBoolean stalled = new AtomicBoolean();
        DelayTarget inner = new DelayTarget(1);
        Target stalling = new Target() {
            @Override
            public void begin(int runId, Completions c) {
                inner.begin(runId, c);
            }

            @Override
            public void send(int seq) throws Exception {
                if (seq == 300 && stalled.compareAndSet(false, true)) {
                    Thread.sleep(300);
                }
                inner.send(seq);
            }
        };
        PointResult p = LoadDriver.openLoop(stalling, 1, 1000, SPEC, 50, 7, null);
        // ~300 of ~1200 measured requests were due during the stall: latencies up to 300 ms.
        assertThat(p.max()).isGreaterThan(250);
        assertThat(p.p90()).isGreaterThan(50);
        assertThat(p.attainment()).isLessThan(0.9);
        assertThat(p.pass()).isFalse();
        // the sender's own lag says so: sent late by up to the stall, answered fast from the actual send
        assertThat(p.sendLag()).isNotNull();
        assertThat(p.sendLag().requests()).isEqualTo(p.sent());
        assertThat(p.sendLag().lagMax()).isGreaterThan(250);
        assertThat(p.sendLag().lagP99()).isGreaterThan(50);
        assertThat(p.sendLag().fromSendP99()).isLessThan(p.sendLag().lagMax()).isLessThan(p.p99());
    }

    @Test
    void aStalledConsumerShowsUpInTheTail() throws Exception {
        // The system stops answering for 300 ms, then answers everything it holds.
        long stallStart = System.nanoTime() + 600_000_000L;
        long stallEnd = stallStart + 300_000_000L;
        Target target = new Target() {
            volatile Completions completions;

            @Override
            public void begin(int runId, Completions c) {
                completions = c;
            }

            @Override
            public void send(int seq) {
                Completions c = completions;
                long now = System.nanoTime();
                long delay = now >= stallStart && now < stallEnd ? stallEnd - now : 1_000_000L;
                server.schedule(() -> c.complete(seq, System.nanoTime(), false, 1, 0, 0), delay,
                        TimeUnit.NANOSECONDS);
            }
        };
        PointResult p = LoadDriver.openLoop(target, 1, 1000, SPEC, 50, 3, null);
        assertThat(p.max()).isGreaterThan(250);
        assertThat(p.p90()).isGreaterThan(50);
        assertThat(p.pass()).isFalse();
        // here the sender was on time: the tail is there from the actual send as well
        assertThat(p.sendLag().fromSendP99()).isGreaterThan(50);
        assertThat(p.sendLag().lagMax()).isLessThan(250);
    }

    @Test
    void unansweredRequestsAreLostAndMissTheSlo() throws Exception {
        Target blackHole = new Target() {
            @Override
            public void begin(int runId, Completions c) {}

            @Override
            public void send(int seq) {}
        };
        RunSpec quickDrain = new RunSpec(Duration.ofMillis(100), Duration.ofMillis(200), 3, 3,
                Duration.ofMillis(100), 0.5);
        PointResult p = LoadDriver.openLoop(blackHole, 1, 200, quickDrain, 50, 3, null);
        assertThat(p.lost()).isEqualTo(p.sent()).isPositive();
        assertThat(p.attainment()).isZero();
        assertThat(p.throughput()).isZero();
        assertThat(p.pass()).isFalse();
    }

    @Test
    void closedLoopKeepsTheGivenNumberOutstanding() throws Exception {
        PointResult p = LoadDriver.closedLoop(new DelayTarget(10), 1, 2, SPEC, 50, null);
        assertThat(p.mode()).isEqualTo("closed");
        // 2 outstanding, >= 10 ms each: at most ~200 answers/s (fewer on a busy machine).
        assertThat(p.throughput()).isBetween(5.0, 210.0);
        assertThat(p.p50()).isGreaterThanOrEqualTo(9.0);
        assertThat(p.sendLag()).as("a closed loop sends when an answer lets it: never late").isNull();
    }

    @Test
    void theListenerHearsWhenTheMeasurementStartsAndEnds() throws Exception {
        AtomicInteger measuring = new AtomicInteger();
        AtomicInteger measured = new AtomicInteger();
        AtomicInteger windows = new AtomicInteger();
        long[] startedAt = new long[1];
        long before = System.nanoTime();
        LoadDriver.Listener listener = new LoadDriver.Listener() {
            @Override
            public void measuring() {
                measuring.incrementAndGet();
                startedAt[0] = System.nanoTime();
            }

            @Override
            public void window(int index, double answersPerSecond) {
                windows.incrementAndGet();
            }

            @Override
            public void measured() {
                assertThat(measuring.get()).isEqualTo(1);
                measured.incrementAndGet();
            }
        };
        LoadDriver.closedLoop(new DelayTarget(1), 1, 2, SPEC, 50, listener);
        assertThat(measuring.get()).isEqualTo(1);
        assertThat(measured.get()).isEqualTo(1);
        assertThat(windows.get()).isBetween(1, SPEC.minWindows());
        assertThat(startedAt[0] - before).isGreaterThanOrEqualTo(SPEC.warmupNanos());
    }

    @Test
    void aTimedRunReportsEveryRequestOfEveryStream() throws Exception {
        AtomicBoolean refused = new AtomicBoolean();
        Target refusing = new Target() {
            volatile Completions completions;

            @Override
            public void begin(int runId, Completions c) {
                completions = c;
            }

            @Override
            public void send(int seq) {
                Completions c = completions;
                if (seq % 2 == 1) { // every other request is refused, the rest never answered
                    server.schedule(() -> c.complete(seq, System.nanoTime(), "OVERLOADED", 1, 0, 0), 1,
                            TimeUnit.MILLISECONDS);
                    refused.set(true);
                }
            }
        };
        long start = System.nanoTime() + 50_000_000L;
        long end = start + 500_000_000L;
        List<StreamAnswers> answers = LoadDriver.timed(List.of(
                new LoadDriver.Stream(new DelayTarget(2), 1, ArrivalSchedule.Rate.constant(400), new Random(1)),
                new LoadDriver.Stream(refusing, 2, ArrivalSchedule.Rate.constant(100), new Random(2))),
                start, end, Duration.ofMillis(300));
        StreamAnswers ok = answers.get(0);
        assertThat(ok.sent()).isBetween(120, 300); // ~200 in 0.5 s
        assertThat(ok.answered()).isEqualTo(ok.sent());
        assertThat(ok.errors()).isZero();
        for (int i = 0; i < ok.sent(); i++) {
            assertThat(ok.intendedNanos(i)).isBetween(start, end - 1);
            assertThat(ok.latencyNanos(i)).isGreaterThanOrEqualTo(2_000_000L);
            assertThat(ok.errorCode(i)).isNull();
        }
        StreamAnswers half = answers.get(1);
        assertThat(refused.get()).isTrue();
        assertThat(half.answered()).isEqualTo(half.sent() / 2);
        assertThat(half.outstanding()).isEqualTo(half.sent() - half.sent() / 2);
        assertThat(half.answered(0)).isFalse();
        assertThat(half.answered(1)).isTrue();
        assertThat(half.errorCode(1)).isEqualTo("OVERLOADED");
    }

    @Test
    void warmUpRequestsAndDuplicatesAreExcluded() {
        long start = 1_000_000_000L;
        PointRecorder r = new PointRecorder(10, start + 100, 1000, 3, 10);
        r.sending(0, start); // warm-up
        r.sending(1, start + 200);
        r.complete(0, start + 5_000_000, false, 1, 0, 0);
        r.complete(1, start + 1_200, false, 1, 0, 0);
        r.complete(1, start + 1_300, false, 1, 0, 0); // duplicate
        PointResult p = r.finish("open", 1, 3, start + 3_000, 10, 0.1);
        assertThat(p.sent()).isEqualTo(1);
        assertThat(p.answered()).isEqualTo(1);
        assertThat(p.duplicates()).isEqualTo(1);
    }

    @Test
    void eachAnswersTimeIsSplitIntoQueuedInferenceAndOutsideTheOperator() {
        long start = 1_000_000_000L;
        PointRecorder r = new PointRecorder(200, start, 1_000_000_000L, 3, 1000);
        for (int i = 0; i < 100; i++) {
            r.sending(i, start);
            // 10 ms end to end: 1 ms queued, 2 ms inference, 7 ms outside; the last one 40 ms outside
            long outsideMs = i == 99 ? 40 : 7;
            r.complete(i, start + (3 + outsideMs) * 1_000_000L, false, 1, 1.0, 2.0);
        }
        r.sending(100, start);
        r.complete(100, start + 5_000_000L, true, 0, Double.NaN, Double.NaN); // an error carries no timings
        PointResult.StageTail t = r.finish("open", 1, 3, start + 3_000_000_000L, 1000, 0.1).stages();
        assertThat(t.requests()).isEqualTo(100);
        assertThat(t.queueP99()).isCloseTo(1.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(t.inferenceP50()).isCloseTo(2.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(t.outsideP50()).isCloseTo(7.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(t.outsideP99()).isCloseTo(7.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(r.finish("open", 1, 3, start + 3_000_000_000L, 1000, 0.1).max()).isCloseTo(43.0,
                org.assertj.core.data.Offset.offset(0.05));
        PointRecorder none = new PointRecorder(10, start, 1_000_000_000L, 3, 1000);
        none.sending(0, start);
        none.complete(0, start + 1_000_000L, false, 0, Double.NaN, Double.NaN);
        assertThat(none.finish("open", 1, 3, start + 3_000_000_000L, 1000, 0.1).stages()).as("no timings").isNull();
    }

    @Test
    void aRecorderWithoutSendTimesRefusesThemAndReportsNoLateness() {
        long start = 1_000_000_000L;
        PointRecorder closed = new PointRecorder(10, start, 1_000_000_000L, 3, 1000, RequestClasses.NONE, false);
        closed.sending(0, start);
        assertThatThrownBy(() -> closed.sent(0, start + 1_000L)).isInstanceOf(IllegalStateException.class);
        closed.complete(0, start + 2_000_000L, false, 1, 0, 0);
        PointResult p = closed.finish("closed", 1, 3, start + 3_000_000_000L, 1000, 0.1);
        assertThat(p.answered()).isEqualTo(1);
        assertThat(p.p50()).isCloseTo(2.0, org.assertj.core.data.Offset.offset(0.01));
        assertThat(p.sendLag()).isNull();
        // the same answer with a send time recorded: latency from the send is the later instant's
        PointRecorder open = new PointRecorder(10, start, 1_000_000_000L, 3, 1000, RequestClasses.NONE, true);
        open.sending(0, start);
        open.sent(0, start + 1_000_000L);
        open.complete(0, start + 2_000_000L, false, 1, 0, 0);
        PointResult q = open.finish("open", 1, 3, start + 3_000_000_000L, 1000, 0.1);
        assertThat(q.sendLag()).isNotNull();
        assertThat(q.sendLag().fromSendP99()).isCloseTo(1.0, org.assertj.core.data.Offset.offset(0.01));
    }

    @Test
    void anOpenPointIsJudgedAgainstTheRateItsScheduleHeld() {
        // a 50/s point over 4 s whose Poisson sample held 177 arrivals, every one answered: 44 answers/s is
        // 88% of the nominal rate but all of what was sent
        long start = 1_000_000_000L;
        PointRecorder r = new PointRecorder(400, start, 1_000_000_000L, 4, 1000);
        for (int i = 0; i < 177; i++) {
            long at = start + i * (4_000_000_000L / 177);
            r.sending(i, at);
            r.complete(i, at + 5_000_000L, false, 1, 0, 0);
        }
        PointResult p = r.finish("open", 50, 4, start + 5_000_000_000L, 1000, 0.1);
        assertThat(p.throughput()).isLessThan(0.9 * 50);
        assertThat(p.pass()).as("against the nominal rate").isFalse();
        assertThat(p.withScheduledRate(177 / 4.0).pass()).as("against what the schedule held").isTrue();
        assertThat(p.withScheduledRate(177 / 4.0).scheduledRate()).isEqualTo(177 / 4.0);
        // the same answers from a schedule that held 220 arrivals: the system fell behind
        assertThat(p.withScheduledRate(220 / 4.0).pass()).isFalse();
        // a schedule above the nominal rate never makes the bar higher than the offered rate
        assertThat(PointResult.passes("open", 10, 1000, 1, 45.5, 50, 60)).isTrue();
        assertThat(PointResult.passes("closed", 10, 1000, 1, 1, 50, 60)).isTrue();
    }

    @Test
    void theArrivalsOfAScheduleInAPeriodAreCounted() {
        ArrivalSchedule s = ArrivalSchedule.poisson(1000, 10_000_000_000L, 7);
        int all = LoadDriver.scheduledIn(s, 0, 10_000_000_000L);
        assertThat(all).isEqualTo(s.size());
        int first = LoadDriver.scheduledIn(s, 0, 5_000_000_000L);
        assertThat(first + LoadDriver.scheduledIn(s, 5_000_000_000L, 10_000_000_000L)).isEqualTo(all);
        assertThat(first).isBetween(4_700, 5_300);
    }

    @Test
    void stabilityNeedsThreeWindowsWithinTolerance() {
        assertThat(PointRecorder.isStable(new long[] {50, 100, 105, 98}, 4, 0.1)).isTrue();
        assertThat(PointRecorder.isStable(new long[] {100, 100, 140, 98}, 4, 0.1)).isFalse();
        assertThat(PointRecorder.isStable(new long[] {100, 100}, 2, 0.1)).isFalse();
    }

    @Test
    void latenciesAreAlsoKeptPerRequestClassLostOnesIncluded() {
        long start = 1_000_000_000L;
        // even requests are class 0 ("short"), odd ones class 1 ("long")
        RequestClasses classes = new RequestClasses(java.util.List.of("short", "long"), seq -> seq % 2);
        PointRecorder r = new PointRecorder(100, start, 1_000_000_000L, 3, 1000, classes);
        for (int i = 0; i < 40; i++) {
            r.sending(i, start);
        }
        for (int i = 0; i < 38; i++) { // 38 and 39 are never answered
            long latency = i % 2 == 0 ? 2_000_000L : 20_000_000L; // 2 ms short, 20 ms long
            r.complete(i, start + latency, false, 1, 0, 0);
        }
        PointResult p = r.finish("open", 40, 3, start + 50_000_000L, 1000, 0.1);
        assertThat(p.classes()).extracting(PointResult.ClassLatency::name).containsExactly("short", "long");
        PointResult.ClassLatency shortOnes = p.classNamed("short");
        PointResult.ClassLatency longOnes = p.classNamed("long");
        assertThat(shortOnes.requests()).isEqualTo(20);
        assertThat(longOnes.requests()).isEqualTo(20);
        assertThat(shortOnes.p50()).isCloseTo(2.0, org.assertj.core.api.Assertions.within(0.01));
        assertThat(longOnes.p50()).isCloseTo(20.0, org.assertj.core.api.Assertions.within(0.05));
        // the lost request of each class counts with the latency it had reached (50 ms): it is each p99
        assertThat(shortOnes.p99()).isCloseTo(50.0, org.assertj.core.api.Assertions.within(0.1));
        assertThat(longOnes.p99()).isCloseTo(50.0, org.assertj.core.api.Assertions.within(0.1));
        // the overall histogram is the mix
        assertThat(p.p50()).isBetween(2.0, 20.1);
    }

    @Test
    void aRecorderWithoutClassesReportsNone() {
        PointRecorder r = new PointRecorder(10, 0, 1000, 3, 10);
        r.sending(0, 1);
        r.complete(0, 2, false, 1, 0, 0);
        assertThat(r.finish("open", 1, 3, 10, 10, 0.1).classes()).isEmpty();
        assertThat(new RequestClasses(java.util.List.of("a"), seq -> 5).of(0)).isEqualTo(-1); // out of range
    }

    @Test
    void waitingNeverReturnsEarlyAndWithoutSpinningParksForTheWait() {
        java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
        for (long spin : new long[] {0, 20_000}) {
            for (long d : new long[] {0, 5_000, 50_000, 150_000, 1_000_000}) {
                long deadline = System.nanoTime() + d;
                LoadDriver.waitUntil(deadline, spin);
                assertThat(System.nanoTime()).as("spin %d, wait %d ns", spin, d).isGreaterThanOrEqualTo(deadline);
            }
        }
        long cpu0 = threads.getCurrentThreadCpuTime();
        long wall0 = System.nanoTime();
        for (int i = 0; i < 200; i++) {
            LoadDriver.waitUntil(System.nanoTime() + 150_000, 0);
        }
        long cpu = threads.getCurrentThreadCpuTime() - cpu0;
        long wall = System.nanoTime() - wall0;
        assertThat(cpu).as("CPU %d ns of %d ns waited", cpu, wall).isLessThan(wall / 2);
    }
}
