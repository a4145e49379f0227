package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.bench.load.ThreadCpu.Part;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

/** Threads are grouped into the job's parts, the broker and the load generator by group and name. */
class ThreadCpuTest {
    private static final List<String> TASK = List.of(ThreadCpu.FLINK_TASK_GROUP, ThreadCpu.FLINK_GROUP, "main", "system");
    private static final List<String> BROKER = List.of(ThreadCpu.BROKER_GROUP, "main", "system");
    private static final List<String> CLUSTER = List.of(ThreadCpu.FLINK_GROUP, "main", "system");
    private static final List<String> MAIN = List.of("main", "system");

    @Test
    void flinkTaskThreadsAreGroupedByTheOperatorsInTheirNames() {
        String chain = "Source: Kafka requests -> Parse -> GPU inference -> Refused requests (1/1)#0";
        assertThat(ThreadCpu.classify(chain, TASK)).isEqualTo(Part.JOB_OPERATOR);
        assertThat(ThreadCpu.classify("Source: Kafka requests -> Parse -> Passthrough (no inference) -> Refused "
                + "requests (1/1)#0", TASK)).isEqualTo(Part.JOB_OPERATOR);
        assertThat(ThreadCpu.classify("Source: Kafka requests -> Map ONNX Runtime per record (1/1)#0", TASK))
                .isEqualTo(Part.JOB_OPERATOR);
        // the SQL configurations: the planner chains the Kafka table, ML_PREDICT and the sink in one task
        String sql = "Source: requests[1] -> MLPredictTableFunction[2] -> Calc[3] -> responses[4]: Writer -> "
                + "responses[4]: Committer (1/1)#0";
        assertThat(ThreadCpu.classify(sql, TASK)).isEqualTo(Part.JOB_OPERATOR);
        assertThat(ThreadCpu.classify("Source Data Fetcher for Source: requests[1] (1/1)#0", TASK))
                .isEqualTo(Part.JOB_SOURCE);
        assertThat(ThreadCpu.classify("gpu-inference-shared-cpu:0-1", TASK)).isEqualTo(Part.JOB_INFERENCE);
        // the shared runtime's threads count as inference's even when the harness opened it first
        assertThat(ThreadCpu.classify("gpu-inference-shared-cpu:0-1", List.of("main", "system")))
                .isEqualTo(Part.JOB_INFERENCE);
        assertThat(ThreadCpu.classify("Source Data Fetcher for " + chain, TASK)).isEqualTo(Part.JOB_SOURCE);
        assertThat(ThreadCpu.classify("Source: Kafka requests -> Parse (1/1)#0", TASK)).isEqualTo(Part.JOB_PARSER);
        assertThat(ThreadCpu.classify("Source: Kafka requests (1/1)#0", TASK)).isEqualTo(Part.JOB_SOURCE);
        assertThat(ThreadCpu.classify("gpu-inference-0-1", TASK)).isEqualTo(Part.JOB_INFERENCE);
        assertThat(ThreadCpu.classify("per-record-inference-1", TASK)).isEqualTo(Part.JOB_INFERENCE);
        assertThat(ThreadCpu.classify("Kafka responses: Writer -> Kafka responses: Committer (1/1)#0", TASK))
                .isEqualTo(Part.JOB_SINK);
        assertThat(ThreadCpu.classify("kafka-producer-network-thread | producer-2", TASK)).isEqualTo(Part.JOB_SINK);
        assertThat(ThreadCpu.classify("OutputFlusher for " + chain, TASK)).isEqualTo(Part.JOB_OTHER);
        assertThat(ThreadCpu.classify("Time Trigger for " + chain, List.of("Triggers", ThreadCpu.FLINK_TASK_GROUP)))
                .isEqualTo(Part.JOB_OTHER);
        assertThat(ThreadCpu.classify("AsyncOperations-thread-1", TASK)).isEqualTo(Part.JOB_OTHER);
        assertThat(ThreadCpu.classify("SourceCoordinator-Source: Kafka requests", CLUSTER)).isEqualTo(Part.JOB_SOURCE);
    }

    @Test
    void theBrokerTheRuntimeAndTheLoadGeneratorAreToldApart() {
        assertThat(ThreadCpu.classify("data-plane-kafka-request-handler-0", BROKER)).isEqualTo(Part.BROKER);
        assertThat(ThreadCpu.classify("kafka-0-raft-io-thread", BROKER)).isEqualTo(Part.BROKER);
        assertThat(ThreadCpu.classify("flink-pekko.actor.default-dispatcher-8", CLUSTER)).isEqualTo(Part.FLINK_RUNTIME);
        // the harness's producer, named by its client.id, even though created on the main thread
        assertThat(ThreadCpu.classify("kafka-producer-network-thread | bench-load-2", MAIN))
                .isEqualTo(Part.LOAD_GENERATOR);
        assertThat(ThreadCpu.classify(ThreadCpu.RESPONSES_THREAD, MAIN)).isEqualTo(Part.LOAD_GENERATOR);
        assertThat(ThreadCpu.classify("load-open-loop", MAIN)).isEqualTo(Part.LOAD_GENERATOR);
        assertThat(ThreadCpu.classify("Reference Handler", List.of("system"))).isEqualTo(Part.OTHER_THREADS);
        assertThat(ThreadCpu.classify("main", MAIN)).isEqualTo(Part.OTHER_THREADS);
    }

    @Test
    void theKafkaRelaysProducerIsItsSinkAndEveryOtherThreadOfItsItsSource() {
        List<String> relay = List.of(ThreadCpu.RELAY_GROUP, "main", "system");
        assertThat(ThreadCpu.classify("kafka-producer-network-thread | kafka-relay-producer", relay))
                .isEqualTo(Part.JOB_SINK);
        assertThat(ThreadCpu.classify("kafka-relay", relay)).isEqualTo(Part.JOB_SOURCE);
        assertThat(ThreadCpu.classify("kafka-coordinator-heartbeat-thread | bench-3", relay))
                .isEqualTo(Part.JOB_SOURCE);
        // the same producer thread name outside the relay's group is no part of the job
        assertThat(ThreadCpu.classify("kafka-producer-network-thread | kafka-relay-producer", MAIN))
                .isEqualTo(Part.OTHER_THREADS);
    }

    @Test
    void aThreadStartedDuringThePointCountsAllItsCpuInItsGroupsPart() throws Exception {
        ThreadCpu.Sampler sampler = ThreadCpu.start(Thread.currentThread());
        CountDownLatch done = new CountDownLatch(1);
        long[] used = new long[1];
        // a thread started in the broker's group, as the harness starts the broker, and still alive at the end
        Thread burner = brokerLikeThread("broker-like-worker", () -> used[0] = burn(200_000_000L), done);
        while (used[0] == 0) {
            Thread.sleep(5);
        }
        sampler.sample();
        CpuSplit split = sampler.finish(100);
        done.countDown();
        burner.join();
        assertThat(split).isNotNull();
        assertThat(split.answers()).isEqualTo(100);
        // 200 ms of CPU over 100 requests: about 2,000 us each
        assertThat(split.part("broker")).isGreaterThanOrEqualTo(used[0] / 1e3 / 100 * 0.99);
        assertThat(split.threadsStarted()).isGreaterThanOrEqualTo(1);
        double sum = split.unattributedUs();
        for (Part p : Part.values()) {
            assertThat(split.part(p.key)).isGreaterThanOrEqualTo(0);
            sum += split.part(p.key);
        }
        // the process's CPU time comes in 10 ms clock ticks: two ticks over 100 requests of slack
        assertThat(sum).isCloseTo(split.processUs(), within(2 * 10_000.0 / 100));
        assertThat(split.jobUs()).isLessThanOrEqualTo(split.processUs());
    }

    @Test
    void aThreadThatEndsDuringThePointKeepsWhatTheLastReadingSaw() throws Exception {
        ThreadCpu.Sampler sampler = ThreadCpu.start(Thread.currentThread());
        CountDownLatch sampled = new CountDownLatch(1);
        long[] used = new long[1];
        Thread t = new Thread(() -> {
            used[0] = burn(100_000_000L);
            try {
                sampled.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "load-short-lived");
        t.start();
        while (used[0] == 0) {
            Thread.sleep(5);
        }
        sampler.sample(); // sees the thread with its 100 ms
        sampled.countDown();
        t.join();
        CpuSplit split = sampler.finish(10);
        assertThat(split.threadsEnded()).isGreaterThanOrEqualTo(1);
        assertThat(split.part("load_generator")).isGreaterThanOrEqualTo(used[0] / 1e3 / 10 * 0.99);
    }

    @Test
    void aThreadThatReportsItsEndKeepsAllItsCpu() throws Exception {
        ThreadCpu.Sampler sampler = ThreadCpu.start(Thread.currentThread());
        CountDownLatch sampled = new CountDownLatch(1);
        long[] used = new long[2];
        Thread t = new Thread(() -> {
            used[0] = burn(50_000_000L);
            try {
                sampled.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            used[1] = burn(80_000_000L); // after the last sample: only its own last reading sees this
            sampler.ending();
        }, "load-sender-like");
        t.start();
        while (used[0] == 0) {
            Thread.sleep(5);
        }
        sampler.sample();
        sampled.countDown();
        t.join();
        CpuSplit split = sampler.finish(10);
        assertThat(split.part("load_generator")).isGreaterThanOrEqualTo((used[0] + used[1]) / 1e3 / 10 * 0.99);
    }

    /** Spins until this thread has used {@code nanos} of CPU; returns what it used. */
    private static long burn(long nanos) {
        var mx = java.lang.management.ManagementFactory.getThreadMXBean();
        long start = mx.getCurrentThreadCpuTime();
        long x = 0;
        while (mx.getCurrentThreadCpuTime() - start < nanos) {
            for (int i = 0; i < 10_000; i++) {
                x += i * 31L ^ x;
            }
        }
        if (x == 42) {
            System.out.print("");
        }
        return mx.getCurrentThreadCpuTime() - start;
    }

    @Test
    void theJitCompilersTimeDuringAPointIsMeasured() {
        ThreadCpu.Sampler sampler = ThreadCpu.start(Thread.currentThread());
        long sum = 0;
        for (int i = 0; i < 20_000_000; i++) {
            sum += onlyCalledHere(i); // hot, and compiled nowhere else: C1 and then C2 compile it now
        }
        CpuSplit split = sampler.finish(10);
        assertThat(sum).isNotZero();
        assertThat(split.compileSeconds()).isGreaterThan(0).isLessThan(split.seconds() * 4);
        assertThat(split.compilerCores()).isCloseTo(split.compileSeconds() / split.seconds(), within(1e-9));
    }

    private static long onlyCalledHere(int i) {
        return (i * 31L) ^ (i >>> 3) + (i % 7);
    }
    @Test
    void eachPartsAllocationIsCountedPerRequest() throws Exception {
        ThreadCpu.Sampler sampler = ThreadCpu.start(Thread.currentThread());
        CountDownLatch done = new CountDownLatch(1);
        long[] kept = new long[1];
        // a broker-like thread allocates 64 MiB in 1 KiB arrays and stays alive to the end
        Thread allocator = brokerLikeThread("broker-like-allocator", () -> {
            long sum = 0;
            for (int i = 0; i < 64 * 1024; i++) {
                byte[] b = new byte[1024];
                b[i % 1024] = (byte) i;
                sum += b[(i * 7) % 1024];
            }
            kept[0] = sum == Long.MIN_VALUE ? 0 : 1;
        }, done);
        while (kept[0] == 0) {
            Thread.sleep(5);
        }
        CpuSplit split = sampler.finish(1000);
        done.countDown();
        allocator.join();
        assertThat(split.allocatedBytesPerRequest()).containsOnlyKeys(
                java.util.Arrays.stream(Part.values()).map(p -> p.key).toArray(String[]::new));
        // 64 MiB of arrays (each with a 16-byte header) over 1,000 requests
        assertThat(split.allocatedBytesPerRequest().get("broker")).isGreaterThanOrEqualTo(64.0 * 1024 * 1024 / 1000);
        assertThat(split.allocatedBytesPerRequest().values()).allMatch(v -> v >= 0);
        assertThat(split.allocatedBytes()).isGreaterThanOrEqualTo(split.allocatedBytesPerRequest().get("broker"));
        assertThat(split.jobAllocatedBytes()).isLessThan(split.allocatedBytesPerRequest().get("broker"));
        assertThat(split.gcPauses()).isNotNull();
    }

    /**
     * Starts a thread in the broker's thread group, as the harness starts the broker, that runs
     * {@code work} and then stays alive until {@code done}.
     */
    private static Thread brokerLikeThread(String name, Runnable work, CountDownLatch done) throws Exception {
        return ThreadCpu.inGroup(ThreadCpu.BROKER_GROUP, () -> {
            Thread t = new Thread(() -> {
                work.run();
                try {
                    done.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, name);
            t.start();
            return t;
        });
    }
}
