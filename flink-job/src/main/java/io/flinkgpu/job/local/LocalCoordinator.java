package io.flinkgpu.job.local;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.service.CoordinatorService;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJobOptions;
import java.io.IOException;
import java.math.BigDecimal;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.math.RoundingMode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.config.Configurator;

/**
 * The scheduler coordinator of {@code --coordinator}, in the local default's JVM: the same
 * {@link CoordinatorService} that {@code coordinator run} starts, against the local cluster's REST
 * API and the embedded broker, with its RocksDB state in a temporary folder (deleted on
 * {@link #close}), its admin API on a free port of 127.0.0.1 and a random token.
 *
 * <p>Settings that make it act within seconds of a load change, for this run only (every one can
 * be overridden with {@code -Dcoordinator.<key>=...}; the cluster-wide defaults are unchanged):
 * a cycle every 2 s; Flink's REST metrics refreshed every second
 * ({@code metrics.fetcher.update-interval}, 10 s by default) with the collector's 300 ms settle
 * below that; a 10 s scale-in window (30 s by default) and moves allowed 15 s apart (2 min), so
 * the shifting traffic's 20 s phases are followed.
 */
final class LocalCoordinator implements AutoCloseable {
    static final Duration INTERVAL = Duration.ofSeconds(2);
    static final Duration METRIC_FETCH_INTERVAL = Duration.ofSeconds(1);
    static final Duration METRICS_SETTLE = Duration.ofMillis(300);
    static final Duration SCALE_IN_WINDOW = Duration.ofSeconds(10);
    static final Duration MIN_MOVE_INTERVAL = Duration.ofSeconds(15);
    static final Duration REVERSAL_WINDOW = Duration.ofSeconds(60);
    /** The simulated GPUs' per-sample time is chosen so that the traffic needs this much device time in all. */
    static final double TARGET_DEVICE_SECONDS = 0.9;
    /**
     * Loggers quieted while the coordinator runs: the summary shows its plans and decisions, which
     * its own log and the job's plan gates (one line per plan and gate, four here) would repeat
     * between the summary lines. The subtasks' LOAD/UNLOAD lines stay.
     */
    private static final Map<String, Level> QUIET = Map.of(
            "io.flinkgpu.coordinator", Level.ERROR,
            "io.flinkgpu.contract.control.ControlPlanState", Level.WARN);

    /** What {@link #configureJob} set: the control topic, and the devices in words for the banner. */
    record JobSettings(String controlTopic, String devices) {}

    private final CoordinatorService service;
    private final Path stateDir;
    private final String token;
    private final String bind;
    private final Duration interval;
    private final Map<String, Level> previousLevels;
    private final AtomicBoolean closed = new AtomicBoolean();

    private LocalCoordinator(CoordinatorService service, Path stateDir, String token, String bind, Duration interval,
            Map<String, Level> previousLevels) {
        this.service = service;
        this.stateDir = stateDir;
        this.token = token;
        this.bind = bind;
        this.interval = interval;
        this.previousLevels = previousLevels;
    }

    /**
     * Points the job at the control topic and, unless {@code userKeys} (the -D options) say
     * otherwise, puts it on {@link LocalDefault#COORDINATOR_DEVICES} simulated GPUs fast enough
     * for {@code rate} with room to spare only when a hot model is spread over both, and makes
     * the cluster's REST API refresh metrics every second.
     */
    static JobSettings configureJob(Configuration config, Set<String> userKeys, double rate) {
        String topic = config.getOptional(InferenceJobOptions.CONTROL_TOPIC).filter(t -> !t.isBlank())
                .orElse(LocalDefault.DEFAULT_CONTROL_TOPIC);
        config.set(InferenceJobOptions.CONTROL_TOPIC, topic);
        if (!userKeys.contains(GpuInferenceOptions.DEVICE_TYPE.key())) {
            config.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        }
        if (!userKeys.contains(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL.key())) {
            config.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, METRIC_FETCH_INTERVAL);
        }
        String devices;
        if ("simulated".equalsIgnoreCase(config.get(GpuInferenceOptions.DEVICE_TYPE))) {
            if (!userKeys.contains(GpuInferenceOptions.SIMULATED_DEVICES.key())) {
                config.set(GpuInferenceOptions.SIMULATED_DEVICES, LocalDefault.COORDINATOR_DEVICES);
            }
            if (!userKeys.contains(GpuInferenceOptions.SIMULATED_SPEED.key())) {
                config.set(GpuInferenceOptions.SIMULATED_SPEED, "1+" + perSampleMillis(rate) + "*b");
            }
            int count = config.get(GpuInferenceOptions.SIMULATED_DEVICES);
            StringBuilder ids = new StringBuilder();
            for (int i = 0; i < count; i++) {
                ids.append(i == 0 ? "" : ", ").append("sim:").append(i);
            }
            devices = count + " simulated GPU" + (count == 1 ? "" : "s") + " (" + ids + "), "
                    + config.get(GpuInferenceOptions.SIMULATED_SPEED) + " ms per batch of b, "
                    + config.get(GpuInferenceOptions.SIMULATED_MEMORY).getMebiBytes() + " MiB each";
        } else {
            devices = "device type " + config.get(GpuInferenceOptions.DEVICE_TYPE);
        }
        return new JobSettings(topic, devices);
    }

    /** ms per sample so that {@code rate} requests/s need {@link #TARGET_DEVICE_SECONDS} device-s/s. */
    static String perSampleMillis(double rate) {
        double ms = Math.max(0.01, Math.min(50, 1000 * TARGET_DEVICE_SECONDS / rate));
        return BigDecimal.valueOf(ms).setScale(2, RoundingMode.HALF_UP).stripTrailingZeros().toPlainString();
    }

    /**
     * Starts the coordinator for {@code jobId} on the cluster at {@code restUrl}; {@code userOptions}
     * entries starting with {@code coordinator.} override the local settings.
     */
    static LocalCoordinator start(JobSettings job, Map<String, String> userOptions, String restUrl,
            String bootstrapServers, String jobId) throws Exception {
        Path stateDir = Files.createTempDirectory("flink-gpu-inference-coordinator");
        byte[] secret = new byte[12];
        new SecureRandom().nextBytes(secret);
        String token = HexFormat.of().formatHex(secret);

        Configuration c = new Configuration();
        c.set(CoordinatorOptions.REST_URL, restUrl);
        c.set(CoordinatorOptions.JOB_ID, jobId);
        c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, bootstrapServers);
        c.set(CoordinatorOptions.CONTROL_TOPIC, job.controlTopic());
        c.set(CoordinatorOptions.STATE_DIR, stateDir.toString());
        c.set(CoordinatorOptions.ADMIN_BIND, "127.0.0.1");
        c.set(CoordinatorOptions.ADMIN_PORT, 0);
        c.set(CoordinatorOptions.ADMIN_TOKEN, token);
        c.set(CoordinatorOptions.INTERVAL, INTERVAL);
        c.set(CoordinatorOptions.METRICS_SETTLE, METRICS_SETTLE);
        c.set(CoordinatorOptions.SCALE_IN_WINDOW, SCALE_IN_WINDOW);
        c.set(CoordinatorOptions.MIN_MOVE_INTERVAL, MIN_MOVE_INTERVAL);
        c.set(CoordinatorOptions.REVERSAL_WINDOW, REVERSAL_WINDOW);
        userOptions.forEach((k, v) -> {
            if (k.startsWith("coordinator.")) {
                c.setString(k, v);
            }
        });
        Map<String, Level> previous = new java.util.HashMap<>();
        QUIET.forEach((logger, level) -> {
            previous.put(logger, LogManager.getLogger(logger).getLevel());
            Configurator.setLevel(logger, level);
        });
        try {
            CoordinatorService service = CoordinatorService.start(c);
            return new LocalCoordinator(service, stateDir, c.getOptional(CoordinatorOptions.ADMIN_TOKEN).orElse(token),
                    c.get(CoordinatorOptions.ADMIN_BIND), c.get(CoordinatorOptions.INTERVAL), previous);
        } catch (Exception | Error e) {
            Configurator.setLevel(previous);
            delete(stateDir);
            throw e;
        }
    }

    /**
     * Waits until every task of {@code jobId} runs (Flink REST {@code /jobs/<id>}), at most
     * {@code timeout}: traffic sent earlier would queue up behind the deployment, and the
     * simulated GPUs, busy by design, would take long to work such a backlog off.
     */
    static void awaitTasksRunning(String restUrl, String jobId, Duration timeout) throws InterruptedException {
        HttpClient http = HttpClient.newBuilder()
                .connectTimeout(Duration.ofSeconds(2)).build();
        ObjectMapper json = new ObjectMapper();
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() < deadline) {
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(
                                URI.create(restUrl + "/jobs/" + jobId)).timeout(Duration.ofSeconds(5)).GET()
                        .build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    JsonNode job = json.readTree(r.body());
                    String state = job.path("state").asText();
                    if (state.equals("FAILED") || state.equals("CANCELED") || state.equals("FINISHED")) {
                        return; // nothing to wait for; the job's own state tells the rest
                    }
                    boolean all = job.path("vertices").size() > 0;
                    for (JsonNode v : job.path("vertices")) {
                        all &= v.path("status").asText().equals("RUNNING");
                    }
                    if (all) {
                        return;
                    }
                }
            } catch (IOException e) {
                // the REST endpoint is starting
            }
            Thread.sleep(200);
        }
    }

    CoordinatorService service() {
        return service;
    }

    String token() {
        return token;
    }

    /** The admin API's {@code /api/status}, or a note that the API is off. */
    String statusUrl() {
        int port = service.adminPort();
        return port < 0 ? "admin API off (coordinator.admin.port -1)" : service.adminScheme() + "://" + bind + ":" + port
                + "/api/status";
    }

    String intervalSeconds() {
        return BigDecimal.valueOf(interval.toMillis(), 3).stripTrailingZeros().toPlainString();
    }

    /** Stops the coordinator and deletes its state folder; safe to call more than once. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            service.close();
        } catch (Exception e) {
            // shutting down anyway
        } finally {
            delete(stateDir);
            Configurator.setLevel(previousLevels);
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // a temporary folder: left for the OS
                }
            });
        } catch (IOException e) {
            // a temporary folder: left for the OS
        }
    }
}
