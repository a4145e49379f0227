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

/**
 * Rescales a running job in place through the adaptive scheduler's resource requirements
 * (FLIP-291): {@code GET /jobs/<id>/resource-requirements} and {@code PUT} of the whole map with
 * the vertex's {@code upperBound} (and {@code lowerBound} 1) changed. The adaptive scheduler then
 * rescales the job from its latest checkpoint when the slots are there; the job id stays.
 * Vertices joined to the vertex by forward edges (in the job plan, {@code GET /jobs/<id>/plan}) get
 * the same bounds: a forward edge connects subtask i to subtask i, so Flink runs both ends at one
 * parallelism; the inference operator's routed-requests map is such a vertex, and left behind it
 * would keep routing to the old number of inference subtasks. With
 * the default scheduler the endpoint answers an error, which {@link Rescalers#withFallback} turns
 * into a {@link StopWithSavepointRescaler} rescale.
 */
public final class AdaptiveSchedulerRescaler implements Rescaler {
    private final HttpClient http;
    private final ObjectMapper json = new ObjectMapper();
    private final String baseUrl;
    private final Duration timeout;

    public AdaptiveSchedulerRescaler(String restUrl, Duration timeout) {
        this.baseUrl = restUrl.endsWith("/") ? restUrl.substring(0, restUrl.length() - 1) : restUrl;
        this.timeout = timeout;
        this.http = HttpClient.newBuilder().connectTimeout(timeout).build();
    }

    /** The current upper bound of {@code vertexId}'s parallelism. */
    public int upperBound(String jobId, String vertexId) throws IOException, InterruptedException {
        JsonNode v = requirements(jobId).get(vertexId);
        if (v == null) {
            throw new IOException("job " + jobId + " has no vertex " + vertexId + " in its resource requirements");
        }
        return v.path("parallelism").path("upperBound").asInt();
    }

    /** Asks the adaptive scheduler to run {@code vertexId} with {@code parallelism} subtasks. */
    @Override
    public void setParallelism(String jobId, String vertexId, int parallelism) throws IOException, InterruptedException {
        if (parallelism < 1) {
            throw new IllegalArgumentException("parallelism must be at least 1");
        }
        ObjectNode all = requirements(jobId);
        if (all.get(vertexId) == null) {
            throw new IOException("job " + jobId + " has no vertex " + vertexId + " in its resource requirements");
        }
        for (String id : forwardGroup(jobId, vertexId)) {
            JsonNode v = all.get(id);
            if (v instanceof ObjectNode o) {
                ObjectNode p = o.with("parallelism");
                p.put("lowerBound", 1);
                p.put("upperBound", parallelism);
            }
        }
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/jobs/" + jobId + "/resource-requirements"))
                .timeout(timeout)
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(json.writeValueAsString(all)))
                .build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() / 100 != 2) {
            throw new IOException("PUT resource-requirements answered " + r.statusCode() + ": " + r.body());
        }
    }

    /** {@code vertexId} and every vertex joined to it by a chain of forward edges, either way. */
    java.util.Set<String> forwardGroup(String jobId, String vertexId) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/jobs/" + jobId + "/plan"))
                .timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET plan answered " + r.statusCode() + ": " + r.body());
        }
        java.util.Map<String, java.util.Set<String>> forward = new java.util.HashMap<>();
        for (JsonNode node : json.readTree(r.body()).path("plan").path("nodes")) {
            String id = node.path("id").asText();
            for (JsonNode input : node.path("inputs")) {
                if ("FORWARD".equalsIgnoreCase(input.path("ship_strategy").asText())) {
                    String from = input.path("id").asText();
                    forward.computeIfAbsent(id, k -> new java.util.HashSet<>()).add(from);
                    forward.computeIfAbsent(from, k -> new java.util.HashSet<>()).add(id);
                }
            }
        }
        java.util.Set<String> group = new java.util.LinkedHashSet<>();
        java.util.Deque<String> todo = new java.util.ArrayDeque<>(java.util.List.of(vertexId));
        while (!todo.isEmpty()) {
            String id = todo.pop();
            if (group.add(id)) {
                todo.addAll(forward.getOrDefault(id, java.util.Set.of()));
            }
        }
        return group;
    }

    private ObjectNode requirements(String jobId) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri("/jobs/" + jobId + "/resource-requirements"))
                .timeout(timeout).GET().build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IOException("GET resource-requirements answered " + r.statusCode() + ": " + r.body());
        }
        JsonNode node = json.readTree(r.body());
        if (!(node instanceof ObjectNode o)) {
            throw new IOException("unexpected resource requirements: " + r.body());
        }
        return o;
    }

    private URI uri(String path) {
        return URI.create(baseUrl + path);
    }
}
