package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.inference.routing.ControlMessage;
import io.flinkgpu.inference.routing.ControlMessageCodec;
import io.flinkgpu.inference.routing.ModelRoute;
import io.flinkgpu.inference.routing.RouteTarget;
import io.flinkgpu.inference.routing.SubtaskCommand;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.ModelPartitioner;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The control topic is optional input: configured but missing on the broker, it must not fail
 * the job (restarts are allowed, as in production, and Flink's exception history must stay
 * empty). Requests are served by model hash meanwhile; once the topic is created and a plan
 * published, the job reads it (from the earliest offset) within the discovery interval.
 */
class ControlTopicMissingEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(3);

    static EmbeddedKafka kafka;
    static Path root;
    static FashionMnist images;
    final HttpClient http = HttpClient.newHttpClient();
    final ObjectMapper json = new ObjectMapper();

    @BeforeAll
    static void startKafka() throws Exception {
        kafka = EmbeddedKafka.start();
        root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
    }

    @AfterAll
    static void stopKafka() throws Exception {
        kafka.close();
    }

    private List<ProducerRecord<byte[], byte[]>> requests(int from, int n) {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
        JsonCodec codec = new JsonCodec();
        for (int i = from; i < from + n; i++) {
            InferenceRequest r = new InferenceRequest("req-" + i, MODEL, null,
                    List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(i % images.size()))),
                    new RequestParameters(0, 0, "it"));
            out.add(new ProducerRecord<>("unused", r.id().getBytes(StandardCharsets.UTF_8), codec.encodeRequest(r)));
        }
        return out;
    }

    @Test
    void aMissingControlTopicNeverFailsTheJobAndIsPickedUpOnceCreated() throws Exception {
        String requests = TestJobs.requests("missing");
        String responses = TestJobs.responses("missing");
        String control = "missing-control";
        Configuration config = TestJobs.config(kafka, "missing", 2, root.resolve("models"));
        config.set(InferenceJobOptions.CONTROL_TOPIC, control); // never created before the job starts
        config.set(InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL, Duration.ofSeconds(2));
        config.set(InferenceJobOptions.PARALLELISM, 2);
        config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(1));
        int fallback = ModelPartitioner.hash(MODEL, 2);
        int other = 1 - fallback;

        // restart strategy as the cluster configures it (not "none"): a failover would be retried
        // and show up only in the exception history and the restart count
        JobClient job = TestJobs.start(config, 2, "control-topic-missing");
        try {
            String jid = job.getJobID().toString();
            awaitRunning(jid);
            // a few discovery rounds (and checkpoints) with the topic missing
            long missingSince = System.nanoTime();
            awaitCompletedCheckpoints(jid, 2);

            KafkaTopics.produce(kafka.bootstrapServers(), requests, requests(0, 100));
            assertAnswered(responses, 100);
            Map<Integer, Double> counts = inferenceRequestsIn(jid, 100);
            assertThat(counts.getOrDefault(fallback, 0.0)).as("routed by model hash, no plan").isEqualTo(100.0);
            assertThat(counts.getOrDefault(other, 0.0)).isZero();
            awaitRouter(jid, m -> m.get("plansApplied") == 0 && m.get("recordsInvalid") == 0);
            while (System.nanoTime() - missingSince < Duration.ofSeconds(5).toNanos()) {
                Thread.sleep(200);
            }
            assertNoFailover(jid, "while the control topic is missing");

            // the coordinator creates the topic and publishes its first plan: the model loaded on the
            // subtask hashing would not pick, and all its requests routed there
            kafka.createTopics(1, control);
            ControlMessage plan = ControlMessage.of(1, 1, 2,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(other, 1)), "test")),
                    List.of(new SubtaskCommand(other, SubtaskCommand.Action.LOAD, MODEL, null, "first plan")),
                    "first plan");
            KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(new ProducerRecord<>("unused",
                    "plan".getBytes(StandardCharsets.UTF_8), ControlMessageCodec.encode(plan))));
            long published = System.nanoTime();
            awaitRouter(jid, m -> m.get("planEpoch") == 1 && m.get("plansApplied") == 1);
            awaitInference(jid, m -> m.get("planEpoch") == 1, other,
                    m -> m.get("commandsApplied") == 1 && m.get("modelsPinned") == 1);
            System.out.printf("control topic picked up %d ms after the plan was published%n",
                    Duration.ofNanos(System.nanoTime() - published).toMillis());

            KafkaTopics.produce(kafka.bootstrapServers(), requests, requests(100, 100));
            assertAnswered(responses, 200);
            Map<Integer, Double> after = inferenceRequestsIn(jid, 200);
            assertThat(after.getOrDefault(other, 0.0)).as("routed by the plan").isEqualTo(100.0);
            assertThat(after.getOrDefault(fallback, 0.0)).as("the hash subtask, before the plan").isEqualTo(100.0);
            assertNoFailover(jid, "after the control topic appeared");
        } finally {
            job.cancel().get();
        }
    }

    private void assertAnswered(String topic, int n) {
        List<ConsumerRecord<byte[], byte[]>> out = KafkaTopics.read(kafka.bootstrapServers(), topic,
                got -> got.size() >= n, Duration.ofSeconds(40), Duration.ofMillis(500));
        Map<String, InferenceResponse> byId = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : out) {
            InferenceResponse resp;
            try {
                resp = WireFormat.JSON.decodeResponse(r.value());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
            assertThat(resp.isError()).as("%s", resp).isFalse();
            assertThat(byId.put(resp.id(), resp)).as("duplicate %s", resp.id()).isNull();
        }
        assertThat(byId).hasSize(n);
    }

    // ---- Flink REST ---------------------------------------------------------------------

    private JsonNode get(String path) throws Exception {
        Configuration c = FLINK.getClientConfiguration();
        URI uri = URI.create("http://" + c.get(RestOptions.ADDRESS) + ":" + c.get(RestOptions.PORT) + path);
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).GET().build(), HttpResponse.BodyHandlers.ofString());
        return json.readTree(r.body());
    }

    /** No failover so far: Flink's exception history is empty and the job never restarted. */
    private void assertNoFailover(String jid, String when) throws Exception {
        JsonNode exceptions = get("/jobs/" + jid + "/exceptions");
        assertThat(exceptions.has("exceptionHistory")).as("exceptions response %s", exceptions).isTrue();
        assertThat(exceptions.path("exceptionHistory").path("entries")).as("exception history %s", when).isEmpty();
        JsonNode restarts = get("/jobs/" + jid + "/metrics?get=numRestarts");
        for (int i = 0; i < 30 && restarts.size() == 0; i++) { // until the metric fetcher has it
            Thread.sleep(200);
            restarts = get("/jobs/" + jid + "/metrics?get=numRestarts");
        }
        assertThat(restarts.size()).as("numRestarts metric %s", restarts).isEqualTo(1);
        assertThat(restarts.get(0).path("value").asDouble()).as("restarts %s", when).isZero();
        assertThat(get("/jobs/" + jid).path("state").asText()).isEqualTo("RUNNING");
    }

    private void awaitRunning(String jid) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            last = get("/jobs/" + jid);
            boolean running = last.path("state").asText().equals("RUNNING") && last.path("vertices").size() > 0;
            for (JsonNode v : last.path("vertices")) {
                running &= v.path("status").asText().equals("RUNNING");
            }
            if (running) {
                return;
            }
            JsonNode failures = get("/jobs/" + jid + "/exceptions").path("exceptionHistory").path("entries");
            if (!failures.isEmpty()) {
                throw new AssertionError("the job failed over while starting: "
                        + failures.get(0).path("stacktrace").asText().lines().limit(12).toList());
            }
            Thread.sleep(200);
        }
        throw new AssertionError("job never ran: " + last);
    }

    private void awaitCompletedCheckpoints(String jid, int n) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            last = get("/jobs/" + jid + "/checkpoints").path("counts");
            if (last.path("completed").asInt() >= n) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("fewer than " + n + " checkpoints completed: " + last);
    }

    private String vertex(String jid, String nameContains) throws Exception {
        for (JsonNode v : get("/jobs/" + jid).path("vertices")) {
            if (v.path("name").asText().contains(nameContains)) {
                return v.path("id").asText();
            }
        }
        throw new AssertionError("no vertex named like " + nameContains);
    }

    /** Per subtask: metric name suffix -> value, for metrics whose id ends with one of the suffixes. */
    private Map<Integer, Map<String, Double>> subtaskMetrics(String jid, String vid, List<String> suffixes)
            throws Exception {
        List<String> ids = new ArrayList<>();
        for (JsonNode m : get("/jobs/" + jid + "/vertices/" + vid + "/subtasks/metrics")) {
            String id = m.path("id").asText();
            if (suffixes.stream().anyMatch(id::endsWith)) {
                ids.add(id);
            }
        }
        Map<Integer, Map<String, Double>> out = new HashMap<>();
        for (int i = 0; i < 2; i++) {
            Map<String, Double> values = new HashMap<>();
            if (!ids.isEmpty()) {
                String q = URLEncoder.encode(String.join(",", ids), StandardCharsets.UTF_8);
                for (JsonNode m : get("/jobs/" + jid + "/vertices/" + vid + "/subtasks/" + i + "/metrics?get=" + q)) {
                    String id = m.path("id").asText();
                    String suffix = suffixes.stream().filter(id::endsWith).findFirst().orElseThrow();
                    values.put(suffix, m.path("value").asDouble());
                }
            }
            out.put(i, values);
        }
        return out;
    }

    private void awaitRouter(String jid, Predicate<Map<String, Double>> done) throws Exception {
        List<String> names = List.of("planEpoch", "recordsInvalid", "plansIgnoredStale", "plansApplied");
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Map<Integer, Map<String, Double>> last = Map.of();
        while (System.nanoTime() < deadline) {
            try {
                last = subtaskMetrics(jid, vertex(jid, "Plan router"),
                        names.stream().map(n -> ".control." + n).toList());
                boolean all = true;
                for (Map<String, Double> m : last.values()) {
                    Map<String, Double> byName = new HashMap<>();
                    names.forEach(n -> byName.put(n, m.getOrDefault(".control." + n, -1.0)));
                    all &= done.test(byName);
                }
                if (all) {
                    return;
                }
            } catch (AssertionError | RuntimeException e) {
                // metrics not reported yet
            }
            Thread.sleep(300);
        }
        throw new AssertionError("router never reached the expected state: " + last);
    }

    /** Waits until every inference subtask's control metrics satisfy {@code all} and {@code subtask}'s {@code one}. */
    private void awaitInference(String jid, Predicate<Map<String, Double>> all, int subtask,
            Predicate<Map<String, Double>> one) throws Exception {
        List<String> names = List.of("planEpoch", "commandsApplied", "commandsFailed", "modelsPinned");
        List<String> suffixes = names.stream().map(n -> ".gpu_inference.control." + n).toList();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Map<Integer, Map<String, Double>> last = Map.of();
        while (System.nanoTime() < deadline) {
            try {
                Map<Integer, Map<String, Double>> byName = new HashMap<>();
                subtaskMetrics(jid, vertex(jid, "GPU inference"), suffixes).forEach((i, m) -> {
                    Map<String, Double> named = new HashMap<>();
                    for (int k = 0; k < names.size(); k++) {
                        named.put(names.get(k), m.getOrDefault(suffixes.get(k), -1.0));
                    }
                    byName.put(i, named);
                });
                last = byName;
                if (byName.size() == 2 && byName.values().stream().allMatch(all) && one.test(byName.get(subtask))) {
                    return;
                }
            } catch (AssertionError | RuntimeException e) {
                // metrics not reported yet
            }
            Thread.sleep(300);
        }
        throw new AssertionError("inference subtasks never reached the expected state: " + last);
    }

    /** The inference subtasks' requestsIn for the model, once their sum reaches {@code total}. */
    private Map<Integer, Double> inferenceRequestsIn(String jid, int total) throws Exception {
        String suffix = ".gpu_inference.model." + MODEL + ".version.1.requestsIn";
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Map<Integer, Double> counts = new HashMap<>();
        while (System.nanoTime() < deadline) {
            counts.clear();
            subtaskMetrics(jid, vertex(jid, "GPU inference"), List.of(suffix))
                    .forEach((i, m) -> counts.put(i, m.getOrDefault(suffix, 0.0)));
            if (counts.values().stream().mapToDouble(Double::doubleValue).sum() >= total) {
                break;
            }
            Thread.sleep(300);
        }
        return counts;
    }
}
