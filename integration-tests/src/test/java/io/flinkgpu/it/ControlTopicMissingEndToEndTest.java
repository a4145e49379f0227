package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.inference.operator.ModelPartitioner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The control topic is optional input: configured but missing on the broker, it must not fail
 * the job (restarts are allowed, as in production, and Flink's exception history must stay
 * empty). Requests are served by model hash meanwhile; once the topic is created and a plan
 * published, the job reads it (from the earliest offset) within the discovery interval.
 */
class ControlTopicMissingEndToEndTest extends KafkaAndImages {
    static final String MODEL = "fashion-mnist-cnn";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(3);
    static final FlinkRest REST = FlinkRest.of(FLINK);
    static final List<String> ROUTER_METRICS = List.of(".control.planEpoch", ".control.recordsInvalid",
            ".control.plansIgnoredStale", ".control.plansApplied");
    static final List<String> INFERENCE_METRICS = List.of(".gpu_inference.control.planEpoch",
            ".gpu_inference.control.commandsApplied", ".gpu_inference.control.commandsFailed",
            ".gpu_inference.control.modelsPinned");
    static final String REQUESTS_IN = ".gpu_inference.model." + MODEL + ".version.1.requestsIn";

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

            KafkaTopics.produce(kafka.bootstrapServers(), requests, TestJobs.imageRequests(images, MODEL, 0, 100));
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

            KafkaTopics.produce(kafka.bootstrapServers(), requests, TestJobs.imageRequests(images, MODEL, 100, 100));
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
        TestJobs.assertAnsweredOnce(kafka, topic, n, Duration.ofSeconds(40), Duration.ofMillis(500));
    }

    /** No failover so far: Flink's exception history is empty and the job never restarted. */
    private void assertNoFailover(String jid, String when) throws Exception {
        JsonNode exceptions = REST.exceptions(jid);
        assertThat(exceptions.has("exceptionHistory")).as("exceptions response %s", exceptions).isTrue();
        assertThat(exceptions.path("exceptionHistory").path("entries")).as("exception history %s", when).isEmpty();
        JsonNode restarts = REST.json("/jobs/" + jid + "/metrics?get=numRestarts");
        for (int i = 0; i < 30 && restarts.size() == 0; i++) { // until the metric fetcher has it
            Thread.sleep(200);
            restarts = REST.json("/jobs/" + jid + "/metrics?get=numRestarts");
        }
        assertThat(restarts.size()).as("numRestarts metric %s", restarts).isEqualTo(1);
        assertThat(restarts.get(0).path("value").asDouble()).as("restarts %s", when).isZero();
        assertThat(REST.json("/jobs/" + jid).path("state").asText()).isEqualTo("RUNNING");
    }

    private void awaitRunning(String jid) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        JsonNode last = null;
        while (System.nanoTime() < deadline) {
            last = REST.json("/jobs/" + jid);
            boolean running = last.path("state").asText().equals("RUNNING") && last.path("vertices").size() > 0;
            for (JsonNode v : last.path("vertices")) {
                running &= v.path("status").asText().equals("RUNNING");
            }
            if (running) {
                return;
            }
            JsonNode failures = REST.exceptionHistory(jid);
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
            last = REST.json("/jobs/" + jid + "/checkpoints").path("counts");
            if (last.path("completed").asInt() >= n) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("fewer than " + n + " checkpoints completed: " + last);
    }

    private void awaitRouter(String jid, Predicate<Map<String, Double>> done) throws Exception {
        REST.awaitSubtaskMetrics(jid, "Plan router", 2, ROUTER_METRICS, -1, m -> m.values().stream().allMatch(done),
                Duration.ofSeconds(30), "router never reached the expected state");
    }

    /** Waits until every inference subtask's control metrics satisfy {@code all} and {@code subtask}'s {@code one}. */
    private void awaitInference(String jid, Predicate<Map<String, Double>> all, int subtask,
            Predicate<Map<String, Double>> one) throws Exception {
        REST.awaitSubtaskMetrics(jid, "GPU inference", 2, INFERENCE_METRICS, -1,
                m -> m.size() == 2 && m.values().stream().allMatch(all) && one.test(m.get(subtask)),
                Duration.ofSeconds(30), "inference subtasks never reached the expected state");
    }

    /** The inference subtasks' requestsIn for the model, once their sum reaches {@code total}. */
    private Map<Integer, Double> inferenceRequestsIn(String jid, int total) throws Exception {
        return REST.pollSubtaskMetric(jid, "GPU inference", 2, REQUESTS_IN, 0,
                m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= total, Duration.ofSeconds(20));
    }
}
