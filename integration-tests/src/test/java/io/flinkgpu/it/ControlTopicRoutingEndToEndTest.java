package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.inference.operator.ModelPartitioner;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The job reads the scheduler coordinator's plans from the control topic: requests follow the
 * plan's routing table (checked through the inference subtasks' own metrics), bad and stale
 * control records are counted and ignored, a newer plan takes over, and nothing is lost.
 */
class ControlTopicRoutingEndToEndTest extends KafkaAndImages {
    static final String MODEL = "fashion-mnist-cnn";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(3);
    static final FlinkRest REST = FlinkRest.of(FLINK);
    static final List<String> ROUTER_METRICS = List.of(".control.planEpoch", ".control.recordsInvalid",
            ".control.plansIgnoredStale", ".control.plansApplied");
    /** The inference operator's control metrics, and its device's modelsLoaded. */
    static final List<String> INFERENCE_METRICS = List.of(".gpu_inference.control.planEpoch",
            ".gpu_inference.control.commandsApplied",
            ".gpu_inference.control.commandsFailed", ".gpu_inference.control.modelsPinned", ".modelsLoaded");
    static final String REQUESTS_IN = ".gpu_inference.model." + MODEL + ".version.1.requestsIn";

    static ControlMessage plan(long epoch, RouteTarget... targets) {
        return plan(epoch, List.of(), targets);
    }

    static ControlMessage plan(long epoch, List<SubtaskCommand> commands, RouteTarget... targets) {
        return ControlMessage.of(epoch, epoch, 2, List.of(new ModelRoute(MODEL, List.of(targets), "test")), commands,
                "test plan " + epoch);
    }

    static ProducerRecord<byte[], byte[]> record(byte[] value) {
        return new ProducerRecord<>("unused", "plan".getBytes(StandardCharsets.UTF_8), value);
    }

    @Test
    void requestsFollowThePlanOnTheControlTopicAndBadOrStaleRecordsAreIgnored() throws Exception {
        String requests = "route-requests";
        String responses = "route-responses";
        String control = "route-control";
        Configuration config = TestJobs.config(kafka, "route", 2, root.resolve("models"));
        kafka.createTopics(1, control);
        int fallback = ModelPartitioner.hash(MODEL, 2);
        int other = 1 - fallback;
        // garbage, the plan (epoch 5: everything to the subtask hashing would not pick, and the model
        // loaded ahead of traffic on the other one), a stale plan
        List<SubtaskCommand> preload = List.of(
                new SubtaskCommand(fallback, SubtaskCommand.Action.LOAD, MODEL, null, "standby replica"));
        KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(
                record("{not a plan".getBytes(StandardCharsets.UTF_8)),
                record(ControlMessageCodec.encode(plan(5, preload, new RouteTarget(other, 1)))),
                record(ControlMessageCodec.encode(plan(3, new RouteTarget(fallback, 1))))));

        config.set(InferenceJobOptions.CONTROL_TOPIC, control);
        config.set(InferenceJobOptions.PARALLELISM, 2);
        config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(2));
        // the exact split of the plan's weights (queue-aware routing is QueueAwareRoutingEndToEndTest's)
        config.set(io.flinkgpu.inference.operator.GpuInferenceOptions.QUEUE_AWARE_ROUTING, false);
        JobClient job = start(config, null);
        String savepoint;
        try {
            String jid = job.getJobID().toString();
            awaitRouter(jid, m -> m.get("planEpoch") == 5 && m.get("recordsInvalid") == 1
                    && m.get("plansIgnoredStale") == 1 && m.get("plansApplied") == 1);
            // the LOAD command: the fallback subtask holds the model before any request reaches it;
            // the invalid and the stale record were judged once, at the gate (above)
            Map<Integer, Map<String, Double>> subtasks = awaitInference(jid,
                    m -> m.get("planEpoch") == 5, fallback,
                    m -> m.get("commandsApplied") == 1 && m.get("modelsPinned") == 1 && m.get("modelsLoaded") == 1);
            assertThat(subtasks.get(other).get("modelsLoaded")).as("no command, no traffic yet").isZero();

            KafkaTopics.produce(kafka.bootstrapServers(), requests, TestJobs.imageRequests(images, MODEL, 0, 300));
            assertAnswered(responses, 300);
            Map<Integer, Double> counts = inferenceRequestsIn(jid, 300);
            assertThat(counts.getOrDefault(other, 0.0)).as("routed by the plan").isEqualTo(300.0);
            assertThat(counts.getOrDefault(fallback, 0.0)).as("the hash subtask").isZero();

            // a newer plan spreads the model evenly
            KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(
                    record(ControlMessageCodec.encode(plan(6, new RouteTarget(0, 1), new RouteTarget(1, 1))))));
            awaitRouter(jid, m -> m.get("planEpoch") == 6);
            KafkaTopics.produce(kafka.bootstrapServers(), requests, TestJobs.imageRequests(images, MODEL, 300, 400));
            assertAnswered(responses, 700);
            Map<Integer, Double> after = inferenceRequestsIn(jid, 700);
            assertThat(after.getOrDefault(fallback, 0.0)).isBetween(198.0, 202.0);
            assertThat(after.getOrDefault(other, 0.0) - 300).isBetween(198.0, 202.0);
            savepoint = job.stopWithSavepoint(false, tmp.toString(), SavepointFormatType.CANONICAL).get();
        } catch (Throwable t) {
            job.cancel();
            throw t;
        }

        // restored from the savepoint, the control source resumes after the plans it has read:
        // the router still follows epoch 6, from its broadcast state (hash routing would send all to one)
        JobClient restored = start(config, savepoint);
        try {
            String jid = restored.getJobID().toString();
            KafkaTopics.produce(kafka.bootstrapServers(), requests, TestJobs.imageRequests(images, MODEL, 700, 200));
            assertAnswered(responses, 900);
            Map<Integer, Double> counts = inferenceRequestsIn(jid, 200);
            assertThat(counts.getOrDefault(0, 0.0)).isBetween(98.0, 102.0);
            assertThat(counts.getOrDefault(1, 0.0)).isBetween(98.0, 102.0);
            // the plan came from state: the restored router applied no control record
            awaitRouter(jid, m -> m.get("planEpoch") == 6 && m.get("plansApplied") == 0);
            // and the inference subtasks restored their epoch and pinned models from theirs
            awaitInference(jid, m -> m.get("planEpoch") == 6 && m.get("commandsApplied") == 0, fallback,
                    m -> m.get("modelsPinned") == 1 && m.get("modelsLoaded") == 1);
        } finally {
            restored.cancel().get();
        }
    }

    @org.junit.jupiter.api.io.TempDir
    static Path tmp;

    private static JobClient start(Configuration config, String savepoint) throws Exception {
        Configuration envConfig = new Configuration();
        if (savepoint != null) {
            envConfig.set(org.apache.flink.configuration.StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(envConfig);
        env.setParallelism(2);
        InferenceJob.build(env, config);
        return env.executeAsync("control-routing");
    }

    private void assertAnswered(String topic, int n) {
        TestJobs.assertAnsweredOnce(kafka, topic, n, Duration.ofMinutes(2), Duration.ofSeconds(1));
    }

    private void awaitRouter(String jid, Predicate<Map<String, Double>> done) throws Exception {
        REST.awaitSubtaskMetrics(jid, "Plan router", 2, ROUTER_METRICS, -1, m -> m.values().stream().allMatch(done),
                Duration.ofSeconds(60), "router never reached the expected state");
    }

    /**
     * Waits until every inference subtask's control metrics satisfy {@code all} and subtask
     * {@code subtask}'s satisfy {@code one}; returns each subtask's metrics by short name.
     */
    private Map<Integer, Map<String, Double>> awaitInference(String jid, Predicate<Map<String, Double>> all,
            int subtask, Predicate<Map<String, Double>> one) throws Exception {
        return REST.awaitSubtaskMetrics(jid, "GPU inference", 2, INFERENCE_METRICS, -1,
                m -> m.values().stream().allMatch(all) && one.test(m.get(subtask)),
                Duration.ofSeconds(60), "inference subtasks never reached the expected state");
    }

    /** The inference subtasks' requestsIn for the model, once their sum reaches {@code total}. */
    private Map<Integer, Double> inferenceRequestsIn(String jid, int total) throws Exception {
        return REST.pollSubtaskMetric(jid, "GPU inference", 2, REQUESTS_IN, 0,
                m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= total, Duration.ofSeconds(30));
    }
}
