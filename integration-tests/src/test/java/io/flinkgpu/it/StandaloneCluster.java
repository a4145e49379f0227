package io.flinkgpu.it;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.Stream;

/**
 * A Flink session cluster of separate JVMs started with {@code deploy/standalone/start-cluster.sh}
 * (one JobManager, N TaskManagers) on free ports, with its own run directory (pid files, logs,
 * tmp dirs, checkpoints, savepoints) under a fresh temp directory; and a client for Flink's REST
 * API as a user would use it. {@link #close()} stops the processes with the stop script and then
 * kills, by recorded pid, anything still alive; a JVM shutdown hook does the same if the test JVM
 * dies first.
 */
final class StandaloneCluster implements AutoCloseable {
    static final String JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint";
    static final String TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner";

    private static final ObjectMapper JSON = new ObjectMapper();

    final Path repoRoot;
    final Path runDir;
    final int restPort;
    final int rpcPort;
    final String prometheusPorts;
    final Path checkpoints;
    final Path savepoints;
    private final List<String> options = new ArrayList<>();
    private final Map<String, ProcessHandle> started = new LinkedHashMap<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Thread shutdownHook;

    private StandaloneCluster(Path repoRoot, Path runDir, Map<String, String> extraOptions) throws IOException {
        this.repoRoot = repoRoot;
        this.runDir = runDir;
        this.restPort = freePort();
        this.rpcPort = freePort();
        int promBase = freePortRange(6);
        this.prometheusPorts = promBase + "-" + (promBase + 5);
        this.checkpoints = Files.createDirectories(runDir.resolve("checkpoints"));
        this.savepoints = Files.createDirectories(runDir.resolve("savepoints"));
        Map<String, String> o = new LinkedHashMap<>();
        o.put("rest.port", String.valueOf(restPort));
        o.put("jobmanager.rpc.port", String.valueOf(rpcPort));
        o.put("metrics.reporter.prom.port", prometheusPorts);
        o.put("execution.checkpointing.dir", checkpoints.toUri().toString());
        o.put("execution.checkpointing.savepoint-dir", savepoints.toUri().toString());
        o.putAll(extraOptions);
        o.forEach((k, v) -> options.add("-D" + k + "=" + v));
        shutdownHook = new Thread(() -> {
            killAll();
            deleteQuietly(runDir);
        }, "standalone-cluster-shutdown");
        Runtime.getRuntime().addShutdownHook(shutdownHook);
    }

    /** Starts 1 JobManager and {@code taskManagers} TaskManagers and waits until they registered. */
    static StandaloneCluster start(Path repoRoot, int taskManagers, Map<String, String> extraOptions) throws Exception {
        Path runDir = Files.createTempDirectory("fgi-standalone-");
        StandaloneCluster cluster = new StandaloneCluster(repoRoot, runDir, extraOptions);
        try {
            List<String> command = new ArrayList<>(List.of("bash", "deploy/standalone/start-cluster.sh",
                    "-n", String.valueOf(taskManagers)));
            command.addAll(cluster.options);
            cluster.script(command, Duration.ofMinutes(3));
        } catch (Exception | AssertionError e) {
            cluster.close();
            throw e;
        }
        return cluster;
    }

    /** Starts one more TaskManager ({@code taskmanager-<index>}); does not wait for its registration. */
    void startTaskManager(int index) throws Exception {
        List<String> command = new ArrayList<>(List.of("bash", "deploy/standalone/start-taskmanager.sh",
                String.valueOf(index)));
        command.addAll(options);
        script(command, Duration.ofMinutes(1));
    }

    private void script(List<String> command, Duration timeout) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(repoRoot.toFile()).redirectErrorStream(true);
        pb.environment().put("FLINK_RUN_DIR", runDir.toString());
        pb.environment().put("FLINK_START_TIMEOUT", String.valueOf(timeout.toSeconds() - 10));
        Process p = pb.start();
        String out;
        try {
            out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            boolean done = p.waitFor(timeout.toSeconds(), TimeUnit.SECONDS);
            if (!done) {
                p.destroyForcibly();
            }
            recordPids();
        }
        System.out.print(out.lines().map(l -> "[cluster] " + l + "\n").reduce("", String::concat));
        if (p.exitValue() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed (" + p.exitValue() + "):\n" + out
                    + "\n" + logTails());
        }
    }

    /** Remembers every process the scripts started (pid files), to kill them whatever happens. */
    private synchronized void recordPids() throws IOException {
        try (Stream<Path> files = Files.list(runDir)) {
            for (Path f : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".pid"))::iterator) {
                String name = f.getFileName().toString().replace(".pid", "");
                long pid = Long.parseLong(Files.readString(f).trim());
                ProcessHandle.of(pid).ifPresent(h -> started.putIfAbsent(name + "@" + pid, h));
            }
        }
    }

    /** The pid of a process started by the scripts, e.g. "taskmanager-1". */
    long pid(String name) throws IOException {
        return Long.parseLong(Files.readString(runDir.resolve(name + ".pid")).trim());
    }

    /** kill -9 of one TaskManager; returns when the process is gone. */
    void killTaskManager(String name) throws Exception {
        long pid = pid(name);
        ProcessHandle handle = ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException(name + " not running"));
        String cmd = handle.info().commandLine().orElse("");
        if (!cmd.contains(TASKMANAGER_MAIN) || !cmd.contains(runDir.toString())) {
            throw new IllegalStateException("pid " + pid + " is not " + name + " of this cluster: " + cmd);
        }
        Process kill = new ProcessBuilder("kill", "-9", String.valueOf(pid)).inheritIO().start();
        kill.waitFor(10, TimeUnit.SECONDS);
        handle.onExit().get(10, TimeUnit.SECONDS);
    }

    String rest() {
        return "http://localhost:" + restPort;
    }

    // ---- REST API --------------------------------------------------------------------------------

    JsonNode get(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(rest() + path)).timeout(Duration.ofSeconds(10))
                .GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("GET " + path + " -> " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }

    JsonNode post(String path, Object body) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(rest() + path)).timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("POST " + path + " -> " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }

    /** POST /jars/upload (multipart, as the web UI and curl -F do); returns the jar id. */
    String uploadJar(Path jar) throws IOException, InterruptedException {
        String boundary = "----fgi" + UUID.randomUUID();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        body.write(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\""
                + jar.getFileName() + "\"\r\nContent-Type: application/x-java-archive\r\n\r\n")
                .getBytes(StandardCharsets.UTF_8));
        body.write(Files.readAllBytes(jar));
        body.write(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(rest() + "/jars/upload"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray())).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("upload -> " + r.statusCode() + ": " + r.body());
        }
        String filename = JSON.readTree(r.body()).path("filename").asText();
        return filename.substring(filename.lastIndexOf('/') + 1);
    }

    /** POST /jars/<id>/run; returns the job id. */
    String runJar(String jarId, String entryClass, int parallelism, String savepoint, List<String> programArgs)
            throws IOException, InterruptedException {
        ObjectNode body = JSON.createObjectNode();
        body.putPOJO("programArgsList", programArgs);
        body.put("parallelism", parallelism);
        if (entryClass != null) {
            body.put("entryClass", entryClass);
        }
        if (savepoint != null) {
            body.put("savepointPath", savepoint);
        }
        return post("/jars/" + jarId + "/run", body).path("jobid").asText();
    }

    /** The job's status, with every subtask's status, as "RUNNING" only when all subtasks run. */
    String jobState(String jobId) throws IOException, InterruptedException {
        JsonNode job = get("/jobs/" + jobId);
        String state = job.path("state").asText();
        if (!state.equals("RUNNING")) {
            return state;
        }
        for (JsonNode v : job.path("vertices")) {
            if (!v.path("status").asText().equals("RUNNING")) {
                return "RUNNING(" + v.path("name").asText() + ": " + v.path("status").asText() + ")";
            }
        }
        return "RUNNING";
    }

    /**
     * When the job last failed (epoch millis, from its exception history), or -1. A restart can be
     * over before anyone polls the job's state; the history keeps the failure.
     */
    long lastFailureMillis(String jobId) throws IOException, InterruptedException {
        long last = -1;
        for (JsonNode entry : get("/jobs/" + jobId + "/exceptions").path("exceptionHistory").path("entries")) {
            last = Math.max(last, entry.path("timestamp").asLong(-1));
        }
        return last;
    }

    void awaitJob(String jobId, Predicate<String> state, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        String last = "?";
        while (System.nanoTime() < deadline) {
            try {
                last = jobState(jobId);
                if (state.test(last)) {
                    return;
                }
                if (last.equals("FAILED")) {
                    throw new AssertionError("job " + jobId + " failed: " + get("/jobs/" + jobId + "/exceptions"));
                }
            } catch (IOException e) {
                last = e.toString();
            }
            Thread.sleep(200);
        }
        throw new AssertionError("job " + jobId + " still " + last + " after " + timeout + "\n" + logTails());
    }

    long completedCheckpoints(String jobId) throws IOException, InterruptedException {
        return get("/jobs/" + jobId + "/checkpoints").path("counts").path("completed").asLong();
    }

    /** Stop-with-savepoint (no drain): returns the savepoint's path. */
    String stopWithSavepoint(String jobId, Duration timeout) throws Exception {
        ObjectNode body = JSON.createObjectNode();
        body.put("drain", false);
        body.put("targetDirectory", savepoints.toUri().toString());
        String trigger = post("/jobs/" + jobId + "/stop", body).path("request-id").asText();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            JsonNode status = get("/jobs/" + jobId + "/savepoints/" + trigger);
            if (status.path("status").path("id").asText().equals("COMPLETED")) {
                JsonNode op = status.path("operation");
                if (op.has("failure-cause")) {
                    throw new AssertionError("stop-with-savepoint failed: " + op.path("failure-cause"));
                }
                return op.path("location").asText();
            }
            Thread.sleep(200);
        }
        throw new AssertionError("no savepoint after " + timeout);
    }

    void cancel(String jobId) {
        try {
            http.send(HttpRequest.newBuilder(URI.create(rest() + "/jobs/" + jobId + "?mode=cancel"))
                    .method("PATCH", HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
            awaitJob(jobId, s -> s.equals("CANCELED") || s.equals("FINISHED") || s.equals("FAILED"), Duration.ofSeconds(30));
        } catch (Exception | AssertionError e) {
            System.out.println("cancel " + jobId + ": " + e);
        }
    }

    /** Cancels every job that is not finished yet (a failed scenario must not hold slots for the next). */
    void cancelAllJobs() throws IOException, InterruptedException {
        for (JsonNode j : get("/jobs/overview").path("jobs")) {
            String state = j.path("state").asText();
            if (!state.equals("FINISHED") && !state.equals("CANCELED") && !state.equals("FAILED")) {
                cancel(j.path("jid").asText());
            }
        }
    }

    /** Vertex id whose name contains {@code name}. */
    String vertex(String jobId, String name) throws IOException, InterruptedException {
        for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
            if (v.path("name").asText().contains(name)) {
                return v.path("id").asText();
            }
        }
        throw new IllegalStateException("no vertex named " + name);
    }

    /** Where each subtask of the job runs: "vertex name[subtask]" -> TaskManager resource id (e.g. taskmanager-2). */
    Map<String, String> placement(String jobId) throws IOException, InterruptedException {
        Map<String, String> out = new LinkedHashMap<>();
        for (JsonNode v : get("/jobs/" + jobId).path("vertices")) {
            for (JsonNode s : get("/jobs/" + jobId + "/vertices/" + v.path("id").asText()).path("subtasks")) {
                out.put(v.path("name").asText() + "[" + s.path("subtask").asInt() + "]", s.path("taskmanager-id").asText());
            }
        }
        return out;
    }

    /** The TaskManager (resource id, e.g. taskmanager-2) running the subtask of that vertex that read the most. */
    String busiestTaskManager(String jobId, String vertexName) throws IOException, InterruptedException {
        JsonNode subtasks = get("/jobs/" + jobId + "/vertices/" + vertex(jobId, vertexName)).path("subtasks");
        JsonNode best = null;
        for (JsonNode s : subtasks) {
            if (best == null || s.path("metrics").path("read-records").asLong() > best.path("metrics").path("read-records").asLong()) {
                best = s;
            }
        }
        return best == null ? null : best.path("taskmanager-id").asText();
    }

    /**
     * Sum over the subtasks of a vertex of the metric whose id ends with {@code suffix}. The REST
     * API answers from a cache that a request refreshes in the background (at most every
     * metrics.fetcher.update-interval), so this asks, waits past that interval, and asks again.
     */
    Optional<Double> metricSum(String jobId, String vertexName, String suffix) throws IOException, InterruptedException {
        String vid = vertex(jobId, vertexName);
        String base = "/jobs/" + jobId + "/vertices/" + vid + "/subtasks/metrics";
        get(base);
        Thread.sleep(1500);
        for (JsonNode m : get(base)) {
            String id = m.path("id").asText();
            if (id.endsWith(suffix)) {
                get(base + "?get=" + id + "&agg=sum");
                Thread.sleep(1500);
                JsonNode values = get(base + "?get=" + id + "&agg=sum");
                if (values.size() > 0) {
                    return Optional.of(values.get(0).path("sum").asDouble());
                }
            }
        }
        return Optional.empty();
    }

    /** Concatenated TaskManager logs (for assertions on what the operators logged). */
    String taskManagerLogs() throws IOException {
        StringBuilder sb = new StringBuilder();
        try (Stream<Path> files = Files.list(runDir.resolve("log"))) {
            for (Path f : (Iterable<Path>) files.filter(f -> f.getFileName().toString().matches("taskmanager-\\d+\\.log"))
                    .sorted()::iterator) {
                sb.append(Files.readString(f));
            }
        }
        return sb.toString();
    }

    String logTails() {
        StringBuilder sb = new StringBuilder();
        try (Stream<Path> files = Files.list(runDir.resolve("log"))) {
            for (Path f : (Iterable<Path>) files.sorted()::iterator) {
                List<String> lines = Files.readAllLines(f, StandardCharsets.ISO_8859_1);
                sb.append("---- ").append(f.getFileName()).append(" (last 25 lines)\n");
                lines.subList(Math.max(0, lines.size() - 25), lines.size()).forEach(l -> sb.append(l).append('\n'));
            }
        } catch (IOException | UncheckedIOException e) {
            sb.append("(no logs: ").append(e).append(")");
        }
        return sb.toString();
    }

    @Override
    public void close() {
        try {
            ProcessBuilder pb = new ProcessBuilder("bash", "deploy/standalone/stop-cluster.sh")
                    .directory(repoRoot.toFile()).redirectErrorStream(true);
            pb.environment().put("FLINK_RUN_DIR", runDir.toString());
            pb.environment().put("FLINK_STOP_TIMEOUT", "10");
            Process p = pb.start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            p.waitFor(30, TimeUnit.SECONDS);
            System.out.print(out.lines().map(l -> "[cluster] " + l + "\n").reduce("", String::concat));
        } catch (IOException e) {
            System.out.println("stop-cluster.sh: " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        killAll();
        keepLogs();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // already shutting down
        }
        deleteQuietly(runDir);
    }

    /** Copies the processes' logs to target/standalone-cluster-logs/ (the run dir is deleted). */
    private void keepLogs() {
        Path to = Path.of("target", "standalone-cluster-logs", runDir.getFileName().toString());
        try (Stream<Path> files = Files.list(runDir.resolve("log"))) {
            Files.createDirectories(to);
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.copy(f, to.resolve(f.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            System.out.println("cluster logs kept in " + to.toAbsolutePath());
        } catch (IOException | UncheckedIOException e) {
            System.out.println("could not keep the cluster logs: " + e);
        }
    }

    /** Kills, by the pids recorded at start, every process of this cluster that is still alive. */
    private synchronized void killAll() {
        for (ProcessHandle h : started.values()) {
            if (h.isAlive()) {
                h.destroyForcibly();
            }
        }
        for (ProcessHandle h : started.values()) {
            try {
                h.onExit().get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                // best effort
            }
        }
    }

    static void deleteQuietly(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort
                }
            });
        } catch (IOException | UncheckedIOException e) {
            // best effort
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        }
    }

    /** The first of {@code n} consecutive free ports, above the ephemeral-port range's usual start. */
    static int freePortRange(int n) throws IOException {
        java.util.Random random = new java.util.Random();
        for (int attempt = 0; attempt < 100; attempt++) {
            int base = 20000 + random.nextInt(12000);
            boolean free = true;
            for (int p = base; p < base + n && free; p++) {
                try (ServerSocket s = new ServerSocket(p)) {
                    s.setReuseAddress(true);
                } catch (IOException e) {
                    free = false;
                }
            }
            if (free) {
                return base;
            }
        }
        throw new IOException("no " + n + " consecutive free ports");
    }
}
