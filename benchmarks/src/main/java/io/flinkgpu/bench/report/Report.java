package io.flinkgpu.bench.report;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import io.flinkgpu.bench.run.BenchmarkRunner;
import io.flinkgpu.bench.run.BenchmarkRunner.ConfigResult;
import io.flinkgpu.bench.run.BenchmarkRunner.ScenarioResult;
import io.flinkgpu.bench.run.BenchmarkSettings;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.scenario.Scenarios;
import io.flinkgpu.bench.sut.Ceiling;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/** The run's result file (JSON), report (Markdown + PNG plots) and, when published, summary.json. */
public final class Report {
    public static final String RESULT_FILE = "result.json";
    public static final String REPORT_FILE = "report.md";
    public static final String SUMMARY_FILE = "summary.json";

    private Report() {}

    public static ObjectMapper mapper() {
        // NaN (e.g. no batch size for a per-record point) is written as the string "NaN": still valid JSON.
        return new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                .registerModule(new com.fasterxml.jackson.databind.module.SimpleModule().addSerializer(
                        java.time.Duration.class, com.fasterxml.jackson.databind.ser.std.ToStringSerializer.instance));
    }

    /** Writes result.json, report.md and the plots to {@code dir}; returns the result document. */
    public static Map<String, Object> write(Path dir, String runId, BenchmarkSettings settings, String command,
            String reproduce, Instant started, BenchmarkRunner runner, List<ScenarioResult> results,
            Map<String, String> userOptions) throws IOException {
        Files.createDirectories(dir);
        List<Map<String, Object>> targets = Targets.evaluate(results, runId,
                "simulated".equalsIgnoreCase(userOptions.getOrDefault("inference.device.type", "")), userOptions);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("run_id", runId);
        doc.put("mode", settings.mode());
        doc.put("started", started.toString());
        doc.put("finished", Instant.now().toString());
        doc.put("command_line", command);
        doc.put("reproduce", reproduce);
        doc.put("machine", machine());
        doc.put("versions", versions());
        doc.put("settings", settings);
        doc.put("user_options", userOptions);
        // what a configuration without its own option ran with, so that a report of this run made under
        // later defaults reads the run's
        doc.put("operator_defaults", Map.of(GpuInferenceOptions.MAX_BATCH_SIZE.key(),
                String.valueOf(GpuInferenceOptions.MAX_BATCH_SIZE.defaultValue())));
        doc.put("kafka_floor_closed_loop", runner.kafkaEcho);
        List<Map<String, Object>> scenarios = new ArrayList<>();
        for (ScenarioResult s : results) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", s.scenario.name());
            m.put("model", s.scenario.model());
            m.put("description", s.scenario.description());
            m.put("slo_p99_ms", s.scenario.sloMs());
            m.put("slo_rationale", s.scenario.sloRationale());
            m.put("facts", s.scenario.facts());
            m.put("ceiling", s.ceiling);
            m.put("codec_per_request", s.codec);
            Map<String, Object> configs = new LinkedHashMap<>();
            for (ConfigResult r : s.configs.values()) {
                Map<String, Object> c = new LinkedHashMap<>();
                c.put("description", r.config.description());
                c.put("role", r.config.role());
                c.put("options", r.config.options());
                c.put("goodput", r.goodput());
                PointResult atGoodput = r.sweep == null ? null : r.sweep.atGoodput();
                c.put("cpu_us_per_request_at_goodput", atGoodput == null ? null : atGoodput.cpuPerRequest());
                c.put("unloaded_closed_loop_1", r.unloaded);
                c.put("sweep", r.sweep == null ? List.of() : r.sweep.points());
                c.put("extra_points", r.extra);
                c.put("failure", r.failure);
                configs.put(r.config.name(), c);
            }
            m.put("configs", configs);
            m.put("best_batching_config", s.best);
            List<String> plots = Plots.write(s, dir);
            m.put("plots", plots);
            scenarios.add(m);
        }
        doc.put("scenarios", scenarios);
        long points = 0;
        long contended = 0;
        long compiling = 0;
        for (ScenarioResult s : results) {
            for (ConfigResult r : s.configs.values()) {
                for (PointResult p : r.openPoints()) {
                    points++;
                    contended += p.contended() ? 1 : 0;
                    compiling += p.compiling() ? 1 : 0;
                }
            }
        }
        doc.put("load_points", points);
        doc.put("contended_load_points", contended);
        doc.put("compiling_load_points", compiling);
        doc.put("jvm_warm_up", runner.warmUps);
        doc.put("targets", targets);
        mapper().writeValue(dir.resolve(RESULT_FILE).toFile(), doc);
        Files.writeString(dir.resolve(REPORT_FILE), markdown(doc, results, targets, runner));
        return doc;
    }

    /**
     * Copies the run's files to {@code publishDir/<mode>/} and writes its summary; returns the
     * summary's path ({@link #summaryFile}).
     */
    public static Path publish(Path runDir, Path publishDir, Map<String, Object> doc) throws IOException {
        String mode = (String) doc.get("mode");
        Path target = publishDir.resolve(mode);
        Files.createDirectories(target);
        try (var files = Files.list(runDir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, target.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return publishSummary(publishDir, doc);
    }

    private static Path publishSummary(Path publishDir, Map<String, Object> doc) throws IOException {
        String mode = (String) doc.get("mode");
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("generated_by", "io.flinkgpu.bench.BenchmarkMain (never edited by hand)");
        summary.put("generated_at", Instant.now().toString());
        summary.put("run_id", doc.get("run_id"));
        summary.put("mode", mode);
        Path result = publishDir.resolve(mode).resolve(RESULT_FILE).toAbsolutePath();
        Path cwd = Path.of("").toAbsolutePath();
        summary.put("result_file", (result.startsWith(cwd) ? cwd.relativize(result) : result).toString());
        summary.put("reproduce", doc.get("reproduce"));
        summary.put("machine", doc.get("machine"));
        Object contended = doc.get("contended_load_points");
        if (contended instanceof Number n && n.longValue() > 0) {
            summary.put("warning", n + " of " + doc.get("load_points") + " load points ran while other processes used "
                    + "more than " + PointResult.CONTENDED_OTHER_CORES + " cores: these numbers understate the "
                    + "system; rerun on an idle machine");
        }
        Path file = summaryFile(publishDir, mode);
        boolean beside = !file.equals(publishDir.resolve(SUMMARY_FILE));
        summary.put("targets", mergedTargets(publishDir.resolve(SUMMARY_FILE), doc.get("targets"), beside));
        mapper().writeValue(file.toFile(), summary);
        if (beside) {
            System.out.println("summary.json of this " + mode + " run: " + file + " (" + publishDir.resolve(SUMMARY_FILE)
                    + " stays the full run's)");
        }
        return file;
    }

    /**
     * Where a run's summary goes: {@code DIR/summary.json}, unless that file is a full run's and
     * this run is not one; then {@code DIR/<mode>/summary.json} beside the run's files, so that a
     * quick run published to the same folder never replaces the full run's targets. It still
     * carries the other tools' targets from {@code DIR/summary.json}, so it reads alone.
     */
    static Path summaryFile(Path publishDir, String mode) throws IOException {
        Path top = publishDir.resolve(SUMMARY_FILE);
        if (!"full".equals(mode) && Files.isRegularFile(top)
                && "full".equals(mapper().readValue(top.toFile(), Map.class).get("mode"))) {
            return publishDir.resolve(mode).resolve(SUMMARY_FILE);
        }
        return top;
    }

    /** The scenarios whose targets this harness writes (the inference scenarios, and "all" for run-wide ones). */
    static final Set<String> HARNESS_SCENARIOS = java.util.stream.Stream.concat(Scenarios.NAMES.stream(),
            java.util.stream.Stream.of(Targets.ALL_SCENARIOS)).collect(java.util.stream.Collectors.toUnmodifiableSet());

    /**
     * This run's targets, after the existing summary's targets of every other scenario (written
     * by other runs or by the QoS, cache and coordinator tools; each carries its own run).
     */
    static List<Object> mergedTargets(Path summaryFile, Object runTargets) throws IOException {
        return mergedTargets(summaryFile, runTargets, false);
    }

    /**
     * As {@link #mergedTargets(Path, Object)}; with {@code otherToolsOnly} (a summary written beside
     * a full run's, see {@link #summaryFile}) the existing summary gives only the other tools'
     * targets, never an earlier harness run's targets of scenarios this run did not measure: such a
     * summary describes its own run and the tools around it.
     */
    @SuppressWarnings("unchecked")
    static List<Object> mergedTargets(Path summaryFile, Object runTargets, boolean otherToolsOnly) throws IOException {
        List<Object> mine = runTargets instanceof List<?> l ? (List<Object>) l : List.of();
        Set<Object> scenarios = new HashSet<>();
        for (Object t : mine) {
            scenarios.add(((Map<String, Object>) t).get("scenario"));
        }
        List<Object> out = new ArrayList<>();
        if (Files.isRegularFile(summaryFile)) {
            Map<String, Object> existing = mapper().readValue(summaryFile.toFile(), Map.class);
            if (existing.get("targets") instanceof List<?> old) {
                for (Object t : old) {
                    if (t instanceof Map<?, ?> m && !scenarios.contains(m.get("scenario"))
                            && !(otherToolsOnly && HARNESS_SCENARIOS.contains(m.get("scenario")))) {
                        out.add(t);
                    }
                }
            }
        }
        out.addAll(mine);
        return out;
    }

    /**
     * Publishes an earlier run from its result.json (e.g. to add the contention count to a
     * result written before it existed), recounting contended points from the file itself.
     */
    @SuppressWarnings("unchecked")
    public static void republish(Path runDir, Path publishDir) throws IOException {
        Map<String, Object> doc = mapper().readValue(runDir.resolve(RESULT_FILE).toFile(), Map.class);
        long points = 0;
        long contended = 0;
        for (Object s : (List<Object>) doc.get("scenarios")) {
            for (Object c : ((Map<String, Object>) ((Map<String, Object>) s).get("configs")).values()) {
                Map<String, Object> config = (Map<String, Object>) c;
                List<Object> all = new ArrayList<>((List<Object>) config.get("sweep"));
                all.addAll(((Map<String, Object>) config.get("extra_points")).values());
                for (Object p : all) {
                    points++;
                    Object other = ((Map<String, Object>) p).get("otherCores");
                    if (other instanceof Number n && n.doubleValue() > PointResult.CONTENDED_OTHER_CORES) {
                        contended++;
                    }
                }
            }
        }
        doc.put("load_points", points);
        doc.put("contended_load_points", contended);
        Path target = publishDir.resolve((String) doc.get("mode"));
        if (!target.toAbsolutePath().normalize().equals(runDir.toAbsolutePath().normalize())) {
            publish(runDir, publishDir, doc);
        } else {
            publishSummary(publishDir, doc);
        }
    }

    static Map<String, Object> machine() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("nproc", Runtime.getRuntime().availableProcessors());
        try {
            var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
            m.put("memory_bytes", os.getTotalMemorySize());
        } catch (ClassCastException e) {
            m.put("memory_bytes", null);
        }
        m.put("max_heap_bytes", Runtime.getRuntime().maxMemory());
        m.putAll(cpuInfo());
        m.put("java_version", System.getProperty("java.version"));
        m.put("java_vendor", System.getProperty("java.vendor"));
        m.put("jvm_args", ManagementFactory.getRuntimeMXBean().getInputArguments());
        m.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                + System.getProperty("os.arch"));
        return m;
    }

    /**
     * The vector instruction sets that ONNX Runtime's CPU kernels choose among, in the order a
     * machine block lists those it has: two hosts with the same model name ("AMD EPYC") but
     * different sets run the same model at different speeds.
     */
    static final List<String> VECTOR_FLAGS = List.of("sse4_2", "avx", "avx2", "fma", "avx_vnni", "avx512f",
            "avx512bw", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8");

    /**
     * From /proc/cpuinfo's lines: {@code cpu} (the first processor's model name, "unknown" where
     * none), {@code cpu_mhz} (its clock as the kernel reports it, null where none) and {@code
     * cpu_vector_flags} (of {@link #VECTOR_FLAGS}, those its flags name).
     */
    static Map<String, Object> cpuInfo(List<String> cpuinfo) {
        String model = "unknown";
        Double mhz = null;
        List<String> vector = new ArrayList<>();
        boolean flagsSeen = false;
        for (String line : cpuinfo) {
            int colon = line.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String key = line.substring(0, colon).trim();
            String value = line.substring(colon + 1).trim();
            if (key.equals("model name") && model.equals("unknown")) {
                model = value;
            } else if (key.equals("cpu MHz") && mhz == null) {
                try {
                    mhz = Double.parseDouble(value);
                } catch (NumberFormatException e) {
                    // left out
                }
            } else if (key.equals("flags") && !flagsSeen) {
                flagsSeen = true;
                Set<String> flags = new HashSet<>(List.of(value.split("\\s+")));
                VECTOR_FLAGS.stream().filter(flags::contains).forEach(vector::add);
            }
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cpu", model);
        m.put("cpu_mhz", mhz);
        m.put("cpu_vector_flags", vector);
        return m;
    }

    /** The machine block's CPU for a report: model, clock and vector instruction sets where recorded. */
    static String cpuLine(Map<String, Object> machine) {
        StringBuilder line = new StringBuilder(String.valueOf(machine.get("cpu")));
        if (machine.get("cpu_mhz") instanceof Number mhz) {
            line.append(", ").append(Math.round(mhz.doubleValue())).append(" MHz");
        }
        if (machine.get("cpu_vector_flags") instanceof List<?> flags && !flags.isEmpty()) {
            line.append(", ").append(flags.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(" ")));
        }
        return line.toString();
    }

    private static Map<String, Object> cpuInfo() {
        try {
            return cpuInfo(Files.readAllLines(Path.of("/proc/cpuinfo")));
        } catch (IOException e) {
            return cpuInfo(List.of()); // not Linux
        }
    }

    static Map<String, Object> versions() {
        Map<String, Object> v = new LinkedHashMap<>();
        v.put("flink", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        v.put("kafka_clients", org.apache.kafka.common.utils.AppInfoParser.getVersion());
        try {
            v.put("onnxruntime", ai.onnxruntime.OrtEnvironment.getEnvironment().getVersion());
        } catch (Exception | LinkageError e) {
            v.put("onnxruntime", "unavailable: " + e);
        }
        String project = Report.class.getPackage().getImplementationVersion();
        v.put("project", project == null ? "0.1.0-SNAPSHOT" : project);
        v.put("git", git("describe", "--always", "--dirty"));
        return v;
    }

    /** The working tree's commit (with "-dirty" when it has uncommitted changes), or "unknown". */
    static String git(String... args) {
        try {
            String[] cmd = new String[args.length + 1];
            cmd[0] = "git";
            System.arraycopy(args, 0, cmd, 1, args.length);
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
            return p.waitFor() == 0 ? out : "unknown";
        } catch (IOException | InterruptedException e) {
            return "unknown";
        }
    }

    /**
     * A point's "KB/req process / job" and "GC pauses / longest ms" cells: heap allocated per
     * request by the whole JVM and by the job's threads, and the collector's pauses during the
     * point ("-" where the run did not measure them: runs before these fields).
     */
    static String memoryCells(io.flinkgpu.bench.load.CpuSplit split) {
        String bytes = split == null || Double.isNaN(split.allocatedBytes()) ? "-"
                : f(split.allocatedBytes() / 1024, 1) + " / " + f(split.jobAllocatedBytes() / 1024, 1);
        io.flinkgpu.bench.load.GcPauses.Summary gc = split == null ? null : split.gcPauses();
        String pauses = gc == null ? "-" : gc.count() + " / " + f(gc.longestMs(), 0);
        return bytes + " | " + pauses;
    }

    private static String f(double v, int digits) {
        if (Double.isNaN(v) || Double.isInfinite(v)) {
            return "-";
        }
        return String.format(Locale.ROOT, "%." + digits + "f", v);
    }

    /**
     * CPU-microseconds per answered request at each configuration's goodput, by thread: the job's
     * parts, the Flink runtime, the broker, the load generator, other threads and what no Java
     * thread accounts for.
     */
    static void cpuTable(StringBuilder md, ScenarioResult s) {
        boolean any = false;
        for (ConfigResult r : s.configs.values()) {
            PointResult g = r.sweep == null ? null : r.sweep.atGoodput();
            any |= g != null && g.cpuPerRequest() != null;
        }
        if (!any) {
            return;
        }
        md.append("CPU-microseconds per answered request at goodput, by thread (see docs/BENCHMARKS.md, "
                + "\"CPU per request\"):\n\n| configuration | goodput req/s | process | job |");
        for (io.flinkgpu.bench.load.ThreadCpu.Part part : io.flinkgpu.bench.load.ThreadCpu.Part.values()) {
            md.append(' ').append(part.key).append(" |");
        }
        md.append(" unattributed |\n|---|---:|---:|---:|");
        for (int i = 0; i <= io.flinkgpu.bench.load.ThreadCpu.Part.values().length; i++) {
            md.append("---:|");
        }
        md.append('\n');
        for (ConfigResult r : s.configs.values()) {
            PointResult g = r.sweep == null ? null : r.sweep.atGoodput();
            io.flinkgpu.bench.load.CpuSplit c = g == null ? null : g.cpuPerRequest();
            if (c == null) {
                continue;
            }
            md.append("| ").append(r.config.name()).append(" | ").append(f(r.goodput(), 0)).append(" | ")
                    .append(f(c.processUs(), 0)).append(" | ").append(f(c.jobUs(), 0)).append(" |");
            for (io.flinkgpu.bench.load.ThreadCpu.Part part : io.flinkgpu.bench.load.ThreadCpu.Part.values()) {
                md.append(' ').append(f(c.part(part.key), 0)).append(" |");
            }
            md.append(' ').append(f(c.unattributedUs(), 0)).append(" |\n");
        }
        md.append('\n');
    }

    @SuppressWarnings("unchecked")
    static String markdown(Map<String, Object> doc, List<ScenarioResult> results, List<Map<String, Object>> targets,
            BenchmarkRunner runner) {
        StringBuilder md = new StringBuilder();
        Map<String, Object> machine = (Map<String, Object>) doc.get("machine");
        md.append("# Benchmark run ").append(doc.get("run_id")).append(" (").append(doc.get("mode")).append(" mode)\n\n");
        md.append("Reproduce: `").append(doc.get("reproduce")).append("`\n\n");
        md.append("Machine: ").append(machine.get("nproc")).append(" CPUs (").append(cpuLine(machine)).append("), ")
                .append(f(((Number) machine.get("memory_bytes")).doubleValue() / (1L << 30), 1)).append(" GiB, Java ")
                .append(machine.get("java_version")).append(", ").append(machine.get("os")).append(". Versions: ")
                .append(doc.get("versions")).append(". Everything (Kafka broker, Flink MiniCluster, load generator) "
                        + "runs in one JVM on this machine.\n\n");
        if (!runner.warmUps.isEmpty()) {
            md.append("JVM warm-up, not measured: before each scenario's first measurement the job with its default "
                    + "options ran, in the first scenario open loop for ").append(runner.settings().jvmWarmup().toSeconds())
                    .append(" s, then in closed-loop phases alternating low load and saturated batches until the "
                            + "JIT compilers were busy for at most ")
                    .append(PointResult.COMPILING_CORES).append(" cores over both phases of a round, so that no "
                            + "configuration pays for compiling the code they share:");
            for (BenchmarkRunner.WarmUp w : runner.warmUps) {
                md.append(" ").append(w.scenario()).append(" ").append(f(w.seconds(), 0)).append(" s, ")
                        .append(w.phases()).append(w.phases() == 1 ? " phase" : " phases").append(" of ")
                        .append(w.lowOutstanding()).append(" and ").append(w.outstanding()).append(" outstanding, ")
                        .append(w.settled() ? "settled" : "**not settled**").append(" (last round ")
                        .append(f(w.lastCompilerCores(), 2)).append(" cores);");
            }
            md.setLength(md.length() - 1);
            md.append(".\n\n");
        }
        if (runner.kafkaEcho != null) {
            md.append("Kafka floor (produce -> consume on one topic, one request at a time): p50 ")
                    .append(f(runner.kafkaEcho.p50(), 2)).append(" ms, p99 ").append(f(runner.kafkaEcho.p99(), 2))
                    .append(" ms. The job's path has two such hops.\n\n");
        }
        // counted once, for result.json
        Object contended = doc.get("contended_load_points");
        Object compiling = doc.get("compiling_load_points");
        Object points = doc.get("load_points");
        md.append("Contention: ").append(contended).append(" of ").append(points).append(" load points ran while other "
                + "processes used more than ").append(PointResult.CONTENDED_OTHER_CORES).append(" cores (marked "
                + "**contended** below; their numbers understate what this machine can do). ").append(compiling)
                .append(" of ").append(points).append(" ran while the JIT compilers were busy for more than ")
                .append(PointResult.COMPILING_CORES).append(" cores (marked **compiling** below; the same).\n\n");
        for (ScenarioResult s : results) {
            md.append("## ").append(s.scenario.name()).append("\n\n").append(s.scenario.description()).append(".\n\n");
            md.append("SLO: p99 <= ").append(f(s.scenario.sloMs(), 0)).append(" ms end to end. ")
                    .append(s.scenario.sloRationale()).append("\n\n");
            if (!s.ceiling.isEmpty()) {
                md.append("### Ceiling (in-process, 1 intra-op thread)\n\n");
                md.append("| batch | raw ONNX Runtime samples/s | batch p50 ms | via OnnxModel.run samples/s | "
                        + "OnnxModel / raw |\n|---:|---:|---:|---:|---:|\n");
                for (Ceiling.Point p : s.ceiling) {
                    if (!p.path().equals("raw")) {
                        continue;
                    }
                    Ceiling.Point lib = null;
                    for (Ceiling.Point q : s.ceiling) {
                        if (q.path().equals("onnxmodel") && q.batch() == p.batch()) {
                            lib = q;
                        }
                    }
                    md.append("| ").append(p.batch()).append(" | ").append(f(p.samplesPerSecond(), 0)).append(" | ")
                            .append(f(p.p50Ms(), 3)).append(" | ")
                            .append(lib == null ? "-" : f(lib.samplesPerSecond(), 0)).append(" | ")
                            .append(lib == null ? "-" : f(lib.samplesPerSecond() / p.samplesPerSecond(), 2))
                            .append(p.contended() ? " **contended**" : "").append(" |\n");
                }
                md.append("\nCodec cost per request (in-process): ").append(s.codec).append("\n\n");
            }
            md.append("### Configurations\n\n");
            md.append("| configuration | goodput req/s | p50 / p99 ms at goodput | attainment | mean batch | "
                    + "queue / inference ms | unloaded p50 / p99 ms |\n|---|---:|---:|---:|---:|---:|---:|\n");
            for (ConfigResult r : s.configs.values()) {
                PointResult g = r.sweep == null ? null : r.sweep.atGoodput();
                md.append("| ").append(r.config.name()).append(r.config.name().equals(s.best) ? " **(best)**" : "")
                        .append(" | ").append(f(r.goodput(), 0)).append(" | ")
                        .append(g == null ? "-" : f(g.p50(), 2) + " / " + f(g.p99(), 2)).append(" | ")
                        .append(g == null ? "-" : f(100 * g.attainment(), 2) + "%").append(" | ")
                        .append(g == null ? "-" : f(g.meanBatch(), 1)).append(" | ")
                        .append(g == null ? "-" : f(g.meanQueueMs(), 2) + " / " + f(g.meanInferenceMs(), 2))
                        .append(" | ")
                        .append(r.unloaded == null ? "-" : f(r.unloaded.p50(), 2) + " / " + f(r.unloaded.p99(), 2))
                        .append(" |\n");
            }
            md.append("\n");
            cpuTable(md, s);
            for (ConfigResult r : s.configs.values()) {
                md.append("- `").append(r.config.name()).append("`: ").append(r.config.description());
                if (r.failure != null) {
                    md.append(" — **failed**: ").append(r.failure);
                }
                md.append("\n");
            }
            md.append("\n### Every point\n\n| configuration | offered/s | answered/s | p50 | p99 | p99.9 | max | "
                    + "attainment | mean batch | queue ms mean / p99 | inference ms mean / p99 | outside ms p50 / p99 | "
                    + "sent late ms p99 / max | p99 from the actual send | "
                    + "stable | pass | CPU bench / other | CPU us/req process / job | KB/req process / job | "
                    + "GC pauses / longest ms |\n"
                    + "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|\n");
            for (ConfigResult r : s.configs.values()) {
                for (PointResult p : r.openPoints()) {
                    md.append("| ").append(r.config.name()).append(" | ").append(f(p.offered(), 0)).append(" | ")
                            .append(f(p.throughput(), 0)).append(" | ").append(f(p.p50(), 2)).append(" | ")
                            .append(f(p.p99(), 2)).append(" | ").append(f(p.p999(), 2)).append(" | ")
                            .append(f(p.max(), 1)).append(" | ").append(f(100 * p.attainment(), 2)).append("% | ")
                            .append(f(p.meanBatch(), 1)).append(" | ").append(f(p.meanQueueMs(), 2))
                            .append(p.stages() == null ? "" : " / " + f(p.stages().queueP99(), 2)).append(" | ")
                            .append(f(p.meanInferenceMs(), 2))
                            .append(p.stages() == null ? "" : " / " + f(p.stages().inferenceP99(), 2)).append(" | ")
                            .append(p.stages() == null ? "-" : f(p.stages().outsideP50(), 2) + " / "
                                    + f(p.stages().outsideP99(), 2)).append(" | ")
                            .append(p.sendLag() == null ? "-" : f(p.sendLag().lagP99(), 2) + " / "
                                    + f(p.sendLag().lagMax(), 1)).append(" | ")
                            .append(p.sendLag() == null ? "-" : f(p.sendLag().fromSendP99(), 2)).append(" | ")
                            .append(p.stable() ? "yes" : "no")
                            .append(" | ").append(p.pass() ? "yes" : "**no**").append(" | ")
                            .append(f(p.benchmarkCores(), 2)).append(" / ").append(f(p.otherCores(), 2))
                            .append(p.contended() ? " **contended**" : "")
                            .append(p.compiling() ? " **compiling**" : "").append(" | ")
                            .append(p.cpuPerRequest() == null ? "-" : f(p.cpuPerRequest().processUs(), 0) + " / "
                                    + f(p.cpuPerRequest().jobUs(), 0)).append(" | ")
                            .append(memoryCells(p.cpuPerRequest())).append(" |\n");
                }
            }
            md.append("\n### Plots\n\n");
            for (String plot : Plots.files(s)) {
                md.append("![").append(plot).append("](").append(plot).append(")\n\n");
            }
        }
        md.append("## Targets\n\n| scenario | target | configuration | measured | goal | pass | detail |\n"
                + "|---|---|---|---:|---|---|---|\n");
        for (Map<String, Object> t : targets) {
            Object m = t.get("measured");
            Object pass = t.get("pass");
            md.append("| ").append(t.get("scenario")).append(" | ").append(t.get("target")).append(" | ")
                    .append(t.getOrDefault("config", "-")).append(" | ")
                    .append(m instanceof Number n ? f(n.doubleValue(), 3) : "-").append(" | ")
                    .append(t.get("goal") == null ? "-" : t.get("goal")).append(" | ")
                    .append(pass == null ? "n/a" : ((Boolean) pass ? "yes" : "**no**")).append(" | ")
                    .append(t.getOrDefault("detail", "")).append(" |\n");
        }
        return md.toString();
    }
}
