package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.test.junit5.MiniClusterExtension;

/**
 * Flink's REST API as the tests read it: paths as JSON, a job's vertices, its subtasks' metrics
 * (once, or polled until they satisfy a condition) and its exception history.
 */
final class FlinkRest {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private final Supplier<String> baseUrl;

    /** The REST API at {@code baseUrl}, such as {@code http://localhost:8081}. */
    FlinkRest(String baseUrl) {
        this(() -> baseUrl);
    }

    private FlinkRest(Supplier<String> baseUrl) {
        this.baseUrl = baseUrl;
    }

    /** The REST API of the extension's MiniCluster; its address is looked up on use, once the cluster runs. */
    static FlinkRest of(MiniClusterExtension flink) {
        return new FlinkRest(() -> {
            Configuration c = flink.getClientConfiguration();
            return "http://" + c.get(RestOptions.ADDRESS) + ":" + c.get(RestOptions.PORT);
        });
    }

    static FlinkRest onLocalhost(int port) {
        return new FlinkRest("http://localhost:" + port);
    }

    String baseUrl() {
        return baseUrl.get();
    }

    /** GET {@code path}, which must answer 200, as JSON. */
    JsonNode json(String path) throws IOException, InterruptedException {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(baseUrl() + path))
                .timeout(Duration.ofSeconds(10)).GET().build(), HttpResponse.BodyHandlers.ofString());
        assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
        return MAPPER.readTree(r.body());
    }

    /** The id of the one job the cluster runs, once /jobs/overview shows it RUNNING. */
    String awaitOnlyRunningJob(Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        JsonNode overview = null;
        while (System.nanoTime() < deadline) {
            overview = json("/jobs/overview");
            JsonNode jobs = overview.path("jobs");
            if (jobs.size() == 1 && "RUNNING".equals(jobs.get(0).path("state").asText())) {
                return jobs.get(0).path("jid").asText();
            }
            Thread.sleep(250);
        }
        throw new AssertionError("no single RUNNING job after " + timeout + ": " + overview);
    }

    /** The job's first vertex whose name contains {@code nameContains}. */
    Optional<JsonNode> vertex(String jobId, String nameContains) throws IOException, InterruptedException {
        for (JsonNode v : json("/jobs/" + jobId).path("vertices")) {
            if (v.path("name").asText().contains(nameContains)) {
                return Optional.of(v);
            }
        }
        return Optional.empty();
    }

    String vertexId(String jobId, String nameContains) throws IOException, InterruptedException {
        return vertex(jobId, nameContains).orElseThrow(() -> new AssertionError("no vertex named like " + nameContains))
                .path("id").asText();
    }

    /**
     * Per subtask {@code 0 .. parallelism - 1} of the vertex: suffix -> value, for the metrics whose
     * id ends with one of {@code suffixes} (a suffix no metric has yet is left out).
     */
    Map<Integer, Map<String, Double>> subtaskMetrics(String jobId, String vertexId, int parallelism,
            List<String> suffixes) throws IOException, InterruptedException {
        String vertex = "/jobs/" + jobId + "/vertices/" + vertexId + "/subtasks/";
        List<String> ids = new ArrayList<>();
        for (JsonNode m : json(vertex + "metrics")) {
            String id = m.path("id").asText();
            if (suffixes.stream().anyMatch(id::endsWith)) {
                ids.add(id);
            }
        }
        Map<Integer, Map<String, Double>> out = new HashMap<>();
        for (int i = 0; i < parallelism; i++) {
            Map<String, Double> values = new HashMap<>();
            if (!ids.isEmpty()) {
                String q = URLEncoder.encode(String.join(",", ids), StandardCharsets.UTF_8);
                for (JsonNode m : json(vertex + i + "/metrics?get=" + q)) {
                    String id = m.path("id").asText();
                    String suffix = suffixes.stream().filter(id::endsWith).findFirst().orElseThrow();
                    values.put(suffix, m.path("value").asDouble());
                }
            }
            out.put(i, values);
        }
        return out;
    }

    /**
     * Reads {@link #subtaskMetrics} of the job's vertex named like {@code vertexName} every 300 ms until
     * {@code done} holds for them, and returns them; fails with {@code failure} and the last read if
     * {@code timeout} passes first. Each subtask's values are keyed by metric name, the part of the
     * suffix after its last dot ({@code ".control.planEpoch"}: {@code planEpoch}), and read
     * {@code missing} where not reported yet. A read that fails (the job is starting, its vertex is not
     * there yet) counts as not done.
     */
    Map<Integer, Map<String, Double>> awaitSubtaskMetrics(String jobId, String vertexName, int parallelism,
            List<String> suffixes, double missing, Predicate<Map<Integer, Map<String, Double>>> done, Duration timeout,
            String failure) throws IOException, InterruptedException {
        Polled<Map<Integer, Map<String, Double>>> polled = poll(() -> {
            Map<Integer, Map<String, Double>> byName = new HashMap<>();
            subtaskMetrics(jobId, vertexId(jobId, vertexName), parallelism, suffixes).forEach((i, values) -> {
                Map<String, Double> named = new HashMap<>();
                for (String suffix : suffixes) {
                    named.put(suffix.substring(suffix.lastIndexOf('.') + 1), values.getOrDefault(suffix, missing));
                }
                byName.put(i, named);
            });
            return byName;
        }, true, done, timeout);
        if (!polled.done()) {
            throw new AssertionError(failure + ": " + polled.last());
        }
        return polled.last();
    }

    /**
     * Per subtask of the job's vertex named like {@code vertexName}, the value of the metric whose id
     * ends with {@code suffix} ({@code missing} where not reported yet), read every 300 ms until
     * {@code done} holds for them or {@code timeout} passes: the last read either way. A read that
     * fails is not retried.
     */
    Map<Integer, Double> pollSubtaskMetric(String jobId, String vertexName, int parallelism, String suffix,
            double missing, Predicate<Map<Integer, Double>> done, Duration timeout)
            throws IOException, InterruptedException {
        return poll(() -> {
            Map<Integer, Double> values = new HashMap<>();
            subtaskMetrics(jobId, vertexId(jobId, vertexName), parallelism, List.of(suffix))
                    .forEach((i, m) -> values.put(i, m.getOrDefault(suffix, missing)));
            return values;
        }, false, done, timeout).last();
    }

    private interface Read<T> {
        T read() throws IOException, InterruptedException;
    }

    private record Polled<T>(T last, boolean done) {}

    /** The last value read (empty if none) and whether it satisfied {@code done}. */
    private static <K, V> Polled<Map<K, V>> poll(Read<Map<K, V>> read, boolean retryFailedReads,
            Predicate<Map<K, V>> done, Duration timeout) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<K, V> last = Map.of();
        while (System.nanoTime() < deadline) {
            try {
                last = read.read();
                if (done.test(last)) {
                    return new Polled<>(last, true);
                }
            } catch (AssertionError | RuntimeException e) {
                if (!retryFailedReads) {
                    throw e;
                }
            }
            Thread.sleep(300);
        }
        return new Polled<>(last, false);
    }

    /** The job's {@code /exceptions}: its exception history and root exception. */
    JsonNode exceptions(String jobId) throws IOException, InterruptedException {
        return json("/jobs/" + jobId + "/exceptions");
    }

    /** The entries of the job's exception history: one for each failure (and restart) so far. */
    JsonNode exceptionHistory(String jobId) throws IOException, InterruptedException {
        return exceptions(jobId).path("exceptionHistory").path("entries");
    }

    /** The job is RUNNING, with an empty exception history and no root exception. */
    void assertRunningWithoutExceptions(String jobId) throws IOException, InterruptedException {
        JsonNode job = json("/jobs/" + jobId);
        assertThat(job.path("state").asText()).as("job %s", job).isEqualTo("RUNNING");
        JsonNode exceptions = exceptions(jobId);
        assertThat(exceptions.path("exceptionHistory").path("entries").size())
                .as("exceptions %s", exceptions).isZero();
        assertThat(exceptions.path("root-exception").isMissingNode() || exceptions.path("root-exception").isNull())
                .as("exceptions %s", exceptions).isTrue();
    }
}
