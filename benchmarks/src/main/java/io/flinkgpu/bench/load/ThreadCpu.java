package io.flinkgpu.bench.load;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where the benchmark JVM's CPU goes during a point, by thread: the job's parts (source, parser,
 * operator mailbox, inference execution threads, sink), the Flink runtime, the in-process Kafka
 * broker and the load generator. Every Java thread's CPU time ({@link ThreadMXBean}) is read when
 * the point starts, at each measurement window and when it ends: a thread alive at both ends
 * counts its difference, a thread started during the point all its CPU time, and a thread that
 * ended during the point what it had used by the last reading that saw it. What no Java thread
 * accounts for (the JIT compilers and the garbage collector, native threads such as RocksDB's,
 * and threads that ended since their last reading) is {@code unattributed}: the process's CPU
 * time minus every thread's. The process's CPU time comes from the operating system in clock ticks
 * (10 ms on Linux), the threads' in nanoseconds, so {@code unattributed} is exact only to a tick or
 * two per point (and never negative).
 *
 * <p>Threads are told apart by their thread group and name: Flink runs every task in the thread
 * group {@value #FLINK_TASK_GROUP}, whose threads (and the threads they start: the Kafka source's
 * fetcher, the sink's producer, the inference executor) inherit it, and names a task thread after
 * the operators chained in it; the harness starts the broker in {@value #BROKER_GROUP}, each
 * Flink cluster in {@value #FLINK_GROUP} and the Kafka relay (no Flink) in {@value #RELAY_GROUP},
 * and names its own threads and Kafka clients
 * ({@value #LOAD_CLIENT_PREFIX}...).
 */
public final class ThreadCpu {
    /** The thread group Flink runs its tasks in (org.apache.flink.runtime.taskmanager.Task). */
    public static final String FLINK_TASK_GROUP = "Flink Task Threads";
    /** The thread group the harness starts the embedded Kafka broker in. */
    public static final String BROKER_GROUP = "bench-kafka-broker";
    /** The thread group the harness starts each local Flink cluster (and its job) in. */
    public static final String FLINK_GROUP = "bench-flink-cluster";
    /** The thread group of the Kafka relay (Kafka alone, no Flink) and its clients' threads. */
    public static final String RELAY_GROUP = "bench-kafka-relay";
    /** The client.id prefix of the harness's own Kafka producers. */
    public static final String LOAD_CLIENT_PREFIX = "bench-load-";
    /** The name of the harness's response consumer thread. */
    public static final String RESPONSES_THREAD = "bench-responses";

    /**
     * Operator names that mark a task thread as the inference operator's mailbox: the library's
     * GPU inference, the benchmarks' passthrough and per-record baselines, and the planner's name
     * for ML_PREDICT's operator (the SQL configurations).
     */
    static final List<String> OPERATOR_NAMES = List.of("GPU inference", "Passthrough", "ONNX Runtime per record",
            "MLPredictTableFunction");
    /** Thread name prefixes of inference execution threads (the library's, the per-record Async I/O pool's). */
    static final List<String> INFERENCE_THREADS = List.of("gpu-inference-", "per-record-inference-");

    /** A part of the process, in report order; {@link #key} names it in result.json. */
    public enum Part {
        JOB_SOURCE("job_source"),
        JOB_PARSER("job_parser"),
        JOB_OPERATOR("job_operator_mailbox"),
        JOB_INFERENCE("job_inference_threads"),
        JOB_SINK("job_sink"),
        JOB_OTHER("job_other"),
        FLINK_RUNTIME("flink_runtime"),
        BROKER("broker"),
        LOAD_GENERATOR("load_generator"),
        OTHER_THREADS("other_threads");

        public final String key;

        Part(String key) {
            this.key = key;
        }

        public boolean ofJob() {
            return name().startsWith("JOB_");
        }
    }

    private ThreadCpu() {}

    /**
     * The part thread {@code name} belongs to; {@code groups} are the names of its thread group and
     * the groups above it, nearest first.
     */
    public static Part classify(String name, List<String> groups) {
        if (name.startsWith("load-") || name.equals(RESPONSES_THREAD) || name.contains("| " + LOAD_CLIENT_PREFIX)) {
            return Part.LOAD_GENERATOR;
        }
        if (name.startsWith("SourceCoordinator")) {
            return Part.JOB_SOURCE; // the Kafka source's split enumerator, on the job manager
        }
        for (String prefix : INFERENCE_THREADS) {
            if (name.startsWith(prefix)) {
                // by name, whatever group: the SQL configurations' shared runtime makes its threads in the
                // group of whoever opens it first (a task, or the harness reading its batch counts)
                return Part.JOB_INFERENCE;
            }
        }
        for (String g : groups) {
            if (FLINK_TASK_GROUP.equals(g)) {
                return task(name);
            }
            if (BROKER_GROUP.equals(g)) {
                return Part.BROKER;
            }
            if (RELAY_GROUP.equals(g)) {
                // the relay is the job under test there: its producer writes the responses, the rest reads
                return name.startsWith("kafka-producer-network-thread") ? Part.JOB_SINK : Part.JOB_SOURCE;
            }
            if (FLINK_GROUP.equals(g)) {
                return Part.FLINK_RUNTIME;
            }
        }
        return Part.OTHER_THREADS;
    }

    /** The part of a thread in Flink's task thread group. */
    static Part task(String name) {
        if (name.startsWith("Source Data Fetcher")) {
            return Part.JOB_SOURCE;
        }
        for (String prefix : INFERENCE_THREADS) {
            if (name.startsWith(prefix)) {
                return Part.JOB_INFERENCE;
            }
        }
        if (name.startsWith("kafka-producer-network-thread")) {
            return Part.JOB_SINK; // the sinks' producers (the harness's are named apart)
        }
        if (name.startsWith("OutputFlusher for ") || name.startsWith("Time Trigger for ")) {
            return Part.JOB_OTHER; // network buffer flushing (the buffer timeout) and timer triggers of a task
        }
        // A task thread is named after its chain, "Source: A -> B -> C (1/1)#0": the most specific
        // operator in it names the part (with parsing and inference chained, both count as the mailbox).
        for (String op : OPERATOR_NAMES) {
            if (name.contains(op)) {
                return Part.JOB_OPERATOR;
            }
        }
        if (name.contains("Parse")) {
            return Part.JOB_PARSER;
        }
        if (name.startsWith("Source:")) {
            return Part.JOB_SOURCE;
        }
        if (name.contains("Sink") || name.contains("Writer") || name.contains("Committer")) {
            return Part.JOB_SINK;
        }
        return Part.JOB_OTHER;
    }

    /** Starts measuring; {@code driver} (the thread running the point) counts as load generator. */
    public static Sampler start(Thread driver) {
        return new Sampler(driver.getId());
    }

    /** Readings of one point; thread-safe. */
    public static final class Sampler {
        private final ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        private final boolean supported;
        private final long driver;
        private final long startNanos;
        private final long startProcess;
        private final long startCompileMs = compileMillis();
        /** Per-thread allocation counters, where the JVM keeps them. */
        private final com.sun.management.ThreadMXBean alloc;
        /** Each thread's CPU nanoseconds and bytes allocated, at the readings. */
        private final Counter cpuNanos = new Counter();
        private final Counter allocatedBytes = new Counter();
        private final Map<Long, Part> parts = new HashMap<>();
        private final java.util.Set<Long> atStart;
        /** The kernel's stall totals at the readings (null where it reports none). */
        private final Pressure.Readings pressure;

        private Sampler(long driver) {
            this.driver = driver;
            this.supported = mx.isThreadCpuTimeSupported() && mx.isThreadCpuTimeEnabled();
            this.alloc = mx instanceof com.sun.management.ThreadMXBean sun && sun.isThreadAllocatedMemorySupported()
                    && sun.isThreadAllocatedMemoryEnabled() ? sun : null;
            GcPauses.listen();
            this.pressure = Pressure.Readings.start();
            this.startProcess = processCpuNanos();
            this.startNanos = System.nanoTime();
            read(true);
            this.atStart = new java.util.HashSet<>(cpuNanos.threads());
        }

        /** Reads every live thread's CPU time now (call once per window, so that dying threads lose little). */
        public synchronized void sample() {
            read(false);
            if (pressure != null) {
                pressure.sample();
            }
        }

        /**
         * The calling thread is about to end: its CPU time so far is its last reading (a thread
         * that ends during the point otherwise counts up to the last {@link #sample}).
         */
        public synchronized void ending() {
            if (!supported) {
                return;
            }
            Thread t = Thread.currentThread();
            long id = t.getId();
            long cpu = mx.getCurrentThreadCpuTime();
            if (cpu < 0) {
                return;
            }
            cpuNanos.ending(id, cpu);
            if (alloc != null) {
                allocatedBytes.ending(id, alloc.getCurrentThreadAllocatedBytes());
            }
            parts.putIfAbsent(id, id == driver ? Part.LOAD_GENERATOR : classify(t.getName(), groups(t)));
        }

        private void read(boolean initial) {
            if (!supported) {
                return;
            }
            for (Thread t : liveThreads()) {
                long id = t.getId();
                long cpu = mx.getThreadCpuTime(id);
                if (cpu < 0) {
                    continue; // ended meanwhile
                }
                cpuNanos.read(id, cpu, initial);
                long bytes = alloc == null ? -1 : alloc.getThreadAllocatedBytes(id);
                if (bytes >= 0) {
                    allocatedBytes.read(id, bytes, initial);
                }
                if (!parts.containsKey(id) || initial) {
                    parts.put(id, id == driver ? Part.LOAD_GENERATOR : classify(t.getName(), groups(t)));
                }
            }
        }

        /** The split of the CPU used since the start over {@code answers} answered requests. */
        public synchronized CpuSplit finish(long answers) {
            read(false);
            if (pressure != null) {
                pressure.sample();
            }
            long endNanos = System.nanoTime();
            long process = processCpuNanos() - startProcess;
            if (!supported || process < 0 || startProcess < 0) {
                return null;
            }
            long[] byPart = cpuNanos.byPart(parts);
            long threads = java.util.Arrays.stream(byPart).sum();
            java.util.Set<Long> alive = new java.util.HashSet<>();
            for (Thread t : liveThreads()) {
                alive.add(t.getId());
            }
            int started = 0;
            int ended = 0;
            for (Long id : cpuNanos.threads()) {
                started += atStart.contains(id) ? 0 : 1;
                ended += alive.contains(id) ? 0 : 1;
            }
            long[] allocByPart = allocatedBytes.byPart(parts);
            double per = answers > 0 ? 1e-3 / answers : Double.NaN; // ns -> us per request
            Map<String, Double> out = new LinkedHashMap<>();
            double job = 0;
            for (Part p : Part.values()) {
                out.put(p.key, byPart[p.ordinal()] * per);
                job += p.ofJob() ? byPart[p.ordinal()] * per : 0;
            }
            Map<String, Double> bytes = new LinkedHashMap<>();
            if (alloc != null && answers > 0) {
                for (Part p : Part.values()) {
                    bytes.put(p.key, allocByPart[p.ordinal()] / (double) answers);
                }
            }
            return new CpuSplit(answers, (endNanos - startNanos) / 1e9, process * per, job,
                    out, Math.max(0, process - threads) * per, process / 1e9, started, ended,
                    startCompileMs < 0 ? Double.NaN : (compileMillis() - startCompileMs) / 1e3, bytes,
                    GcPauses.since(startNanos), pressure == null ? null : pressure.stalls());
        }

        /**
         * One per-thread counter (CPU nanoseconds, bytes allocated) over the point: a thread alive
         * at both ends counts its difference, one first seen after the start all of it (it started
         * during the point), one that ended what the last reading that saw it had.
         */
        private static final class Counter {
            /** thread id -> the counter at the first reading that saw it (0 for threads started after the start). */
            private final Map<Long, Long> first = new HashMap<>();
            private final Map<Long, Long> last = new HashMap<>();

            void read(long thread, long value, boolean initial) {
                first.putIfAbsent(thread, initial ? value : 0L);
                last.put(thread, value);
            }

            /** The thread's own last reading as it ends. */
            void ending(long thread, long value) {
                first.putIfAbsent(thread, 0L);
                last.put(thread, value);
            }

            java.util.Set<Long> threads() {
                return last.keySet();
            }

            /** What the threads of each part used, indexed by {@link Part#ordinal}. */
            long[] byPart(Map<Long, Part> parts) {
                long[] out = new long[Part.values().length];
                for (Map.Entry<Long, Long> e : last.entrySet()) {
                    Part part = parts.get(e.getKey());
                    if (part != null) {
                        out[part.ordinal()] += Math.max(0, e.getValue() - first.get(e.getKey()));
                    }
                }
                return out;
            }
        }

        /** The JVM's accumulated JIT compilation time in milliseconds, or -1 where it is not reported. */
        static long compileMillis() {
            java.lang.management.CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
            return jit != null && jit.isCompilationTimeMonitoringSupported() ? jit.getTotalCompilationTime() : -1;
        }

        private static long processCpuNanos() {
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                return os.getProcessCpuTime();
            }
            return -1;
        }
    }

    /** The live threads of this JVM. */
    static List<Thread> liveThreads() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] threads = new Thread[root.activeCount() + 64];
        int n;
        while ((n = root.enumerate(threads, true)) == threads.length) {
            threads = new Thread[threads.length * 2];
        }
        List<Thread> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(threads[i]);
        }
        return out;
    }

    /** The names of {@code t}'s thread group and the groups above it, nearest first (empty once it ended). */
    static List<String> groups(Thread t) {
        List<String> out = new ArrayList<>();
        for (ThreadGroup g = t.getThreadGroup(); g != null; g = g.getParent()) {
            out.add(g.getName());
        }
        return out;
    }

    /**
     * Runs {@code body} on a new thread of a new thread group {@code group} and waits for it, so
     * that the threads it starts (and theirs) belong to that group; rethrows what it threw.
     */
    public static <T> T inGroup(String group, java.util.concurrent.Callable<T> body) throws Exception {
        Object[] result = new Object[1];
        Throwable[] failure = new Throwable[1];
        Thread t = new Thread(new ThreadGroup(group), () -> {
            try {
                result[0] = body.call();
            } catch (Throwable e) {
                failure[0] = e;
            }
        }, group + "-starter");
        t.start();
        t.join();
        if (failure[0] instanceof Exception e) {
            throw e;
        }
        if (failure[0] instanceof Error e) {
            throw e;
        }
        @SuppressWarnings("unchecked")
        T r = (T) result[0];
        return r;
    }
}
