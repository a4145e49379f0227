package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.PlanSigner;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.ModelPartitioner;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A job with a verify key applies the plan the coordinator's realizer signed with the matching
 * key and refuses what anyone else wrote to the control topic with a plain producer: a bare plan
 * and a plan signed with another key, both of a newer epoch that would send every request to the
 * other subtask and unload the model. Refusals are counted; neither the router nor the inference
 * subtasks ever move past the signed epoch.
 */
class SignedControlTopicEndToEndTest extends KafkaAndImages {
    static final String MODEL = ControlTopicRoutingEndToEndTest.MODEL;
    static final String KEY = "end-to-end-signing-key-0123456789";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(3);
    static final FlinkRest REST = FlinkRest.of(FLINK);
    static final List<String> ROUTER_METRICS = List.of(".control.planEpoch", ".control.plansApplied",
            ".control.plansRefusedUnsigned", ".control.plansRefusedBadSignature", ".control.recordsInvalid");

    static ControlMessage plan(long epoch, int target, List<SubtaskCommand> commands) {
        return ControlMessage.of(epoch, epoch, 2, List.of(new ModelRoute(MODEL, List.of(new RouteTarget(target, 1)),
                "test")), commands, "test plan " + epoch);
    }

    @Test
    void theSignedPlanIsAppliedAndForgedOnesAreRefused() throws Exception {
        String control = "signed-control";
        Configuration config = TestJobs.config(kafka, "signed", 2, root.resolve("models"));
        kafka.createTopics(1, control);
        config.set(InferenceJobOptions.CONTROL_TOPIC, control);
        config.set(InferenceJobOptions.PARALLELISM, 2);
        config.setString(GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX + "k1", KEY);
        int hash = ModelPartitioner.hash(MODEL, 2);
        int planned = 1 - hash;

        // the coordinator's realizer, signing as the coordinator's options tell it to
        Configuration coordinator = new Configuration();
        coordinator.set(CoordinatorOptions.SIGNING_KEY_ID, "k1");
        coordinator.set(CoordinatorOptions.SIGNING_KEY, KEY);
        try (KafkaPlanRealizer realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), control,
                Duration.ofSeconds(20)).signedBy(CoordinatorOptions.planSigner(coordinator).orElseThrow())) {
            realizer.publish(plan(5, planned, List.of(new SubtaskCommand(planned, SubtaskCommand.Action.LOAD, MODEL,
                    null, "ahead of traffic"))));
        }
        // forgeries from a plain producer: newer epochs, everything to the hash subtask, the model unloaded
        List<SubtaskCommand> unload = List.of(new SubtaskCommand(planned, SubtaskCommand.Action.UNLOAD, MODEL, null,
                "forged"));
        PlanSigner attacker = new PlanSigner("k1", "not-the-coordinators-key-0123".getBytes(StandardCharsets.UTF_8));
        KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(
                record(ControlMessageCodec.encode(plan(8, hash, unload))),
                record(attacker.sign(plan(9, hash, unload)))));

        JobClient job = TestJobs.start(config, 2, "signed-control");
        try {
            String jid = job.getJobID().toString();
            REST.awaitSubtaskMetrics(jid, "Plan router", 2, ROUTER_METRICS, -1, m -> m.values().stream().allMatch(
                    v -> v.get("planEpoch") == 5 && v.get("plansApplied") == 1 && v.get("plansRefusedUnsigned") == 1
                            && v.get("plansRefusedBadSignature") == 1 && v.get("recordsInvalid") == 0),
                    Duration.ofSeconds(60), "router never reached the expected state");
            // the inference subtasks got the signed plan (its LOAD ran) and nothing after it
            Map<Integer, Map<String, Double>> inference = REST.awaitSubtaskMetrics(jid, "GPU inference", 2,
                    List.of(".gpu_inference.control.planEpoch", ".gpu_inference.control.modelsPinned"), -1,
                    m -> m.values().stream().allMatch(v -> v.get("planEpoch") == 5)
                            && m.get(planned).get("modelsPinned") == 1,
                    Duration.ofSeconds(60), "inference subtasks never applied the signed plan");
            assertThat(inference.get(hash).get("modelsPinned")).isZero();

            KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests("signed"),
                    TestJobs.imageRequests(images, MODEL, 0, 100));
            TestJobs.assertAnsweredOnce(kafka, TestJobs.responses("signed"), 100, Duration.ofMinutes(2),
                    Duration.ofSeconds(1));
            Map<Integer, Double> counts = REST.pollSubtaskMetric(jid, "GPU inference", 2,
                    ".gpu_inference.model." + MODEL + ".version.1.requestsIn", 0,
                    m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= 100, Duration.ofSeconds(30));
            assertThat(counts.getOrDefault(planned, 0.0)).as("routed by the signed plan").isEqualTo(100.0);
            assertThat(counts.getOrDefault(hash, 0.0)).as("where the forgeries would send them").isZero();
        } finally {
            job.cancel().get();
        }
    }

    static ProducerRecord<byte[], byte[]> record(byte[] value) {
        return new ProducerRecord<>("unused", "plan".getBytes(StandardCharsets.UTF_8), value);
    }
}
