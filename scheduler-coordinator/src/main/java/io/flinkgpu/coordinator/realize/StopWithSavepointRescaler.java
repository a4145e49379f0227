package io.flinkgpu.coordinator.realize;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Rescales the job by restarting it, where the adaptive scheduler is not running: stop the job
 * with a savepoint ({@code POST /jobs/<id>/stop}, no drain), wait for it, and run the uploaded job
 * jar again from that savepoint ({@code POST /jars/<jar>/run}) with
 * {@code --inference.parallelism N} (the job builds its router and inference operator with it).
 * Nothing accepted is lost: queued and in-flight requests are in the savepoint, and the Kafka
 * source resumes from its offsets. The job id changes; a coordinator without a fixed
 * {@code coordinator.flink.job-id} finds the new one at its next collection.
 */
public final class StopWithSavepointRescaler implements Rescaler {
    private static final Logger LOG = LoggerFactory.getLogger(StopWithSavepointRescaler.class);
    static final String PARALLELISM_ARG = "--inference.parallelism";

    private final HttpClient http;
    private final ObjectMapper json = new ObjectMapper();
    private final String baseUrl;
    private final String jarId;
    private final List<String> programArgs;
    private final String savepointDir;
    private final Duration timeout;
    private final Duration savepointTimeout;
    private volatile String lastJobId;

    public StopWithSavepointRescaler(String restUrl, String jarId, List<String> programArgs, String savepointDir,
            Duration timeout, Duration savepointTimeout) {
        if (jarId == null || jarId.isBlank()) {
            throw new IllegalArgumentException("stop-with-savepoint rescaling needs coordinator.parallelism.jar-id");
        }
        this.baseUrl = restUrl.endsWith("/") ? restUrl.substring(0, restUrl.length() - 1) : restUrl;
        this.jarId = jarId;
        this.programArgs = List.copyOf(programArgs);
        this.savepointDir = savepointDir;
        this.timeout = timeout;
        this.savepointTimeout = savepointTimeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    /** The job id of the last resubmission, or null. */
    public String lastJobId() {
        return lastJobId;
    }

    @Override
    public void setParallelism(String jobId, String vertexId, int parallelism) throws IOException, InterruptedException {
        if (parallelism < 1) {
            throw new IllegalArgumentException("parallelism must be at least 1");
        }
        ObjectNode stop = json.createObjectNode();
        stop.put("drain", false);
        if (!savepointDir.isEmpty()) {
            stop.put("targetDirectory", savepointDir);
        }
        String trigger = post("/jobs/" + jobId + "/stop", stop).path("request-id").asText();
        String savepoint = awaitSavepoint(jobId, trigger);
        LOG.info("Stopped job {} with savepoint {}; resubmitting jar {} at inference parallelism {}", jobId, savepoint,
                jarId, parallelism);
        ObjectNode run = json.createObjectNode();
        run.put("savepointPath", savepoint);
        run.putPOJO("programArgsList", withParallelism(programArgs, parallelism));
        String newJob = post("/jars/" + jarId + "/run", run).path("jobid").asText();
        if (newJob.isEmpty()) {
            throw new IOException("POST /jars/" + jarId + "/run returned no job id");
        }
        lastJobId = newJob;
        LOG.info("Job {} runs at inference parallelism {} (was {})", newJob, parallelism, jobId);
    }

    /** {@code args} with {@code --inference.parallelism N} set (replacing any earlier value). */
    public static List<String> withParallelism(List<String> args, int parallelism) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals(PARALLELISM_ARG)) {
                i++; // skip its value
            } else if (!a.startsWith(PARALLELISM_ARG + "=")) {
                out.add(a);
            }
        }
        out.add(PARALLELISM_ARG);
        out.add(String.valueOf(parallelism));
        return out;
    }

    private String awaitSavepoint(String jobId, String trigger) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + savepointTimeout.toNanos();
        while (System.nanoTime() < deadline) {
            JsonNode status = get("/jobs/" + jobId + "/savepoints/" + trigger);
            if ("COMPLETED".equals(status.path("status").path("id").asText())) {
                JsonNode op = status.path("operation");
                if (op.has("failure-cause")) {
                    throw new IOException("stop-with-savepoint of " + jobId + " failed: "
                            + op.path("failure-cause").path("stack-trace").asText().lines().findFirst().orElse(""));
                }
                return op.path("location").asText();
            }
            Thread.sleep(250);
        }
        throw new IOException("no savepoint of " + jobId + " within " + savepointTimeout);
    }

    private JsonNode get(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(timeout).GET()
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("GET " + path + " answered " + r.statusCode() + ": " + r.body());
        }
        return json.readTree(r.body());
    }

    private JsonNode post(String path, JsonNode body) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(baseUrl + path)).timeout(timeout)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(body))).build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("POST " + path + " answered " + r.statusCode() + ": " + r.body());
        }
        return json.readTree(r.body());
    }
}
