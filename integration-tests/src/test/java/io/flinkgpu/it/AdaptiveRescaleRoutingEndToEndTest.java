package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.coordinator.realize.AdaptiveSchedulerRescaler;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Routing after a rescale by the adaptive scheduler (the coordinator's default way to change the
 * inference parallelism, which does not rebuild the job): the job is built with two inference
 * subtasks, rescaled to three through the REST API as the coordinator's rescaler does, and a plan
 * for three subtasks that routes the model to the new subtask 2 is followed. A router that knew
 * only the parallelism the job was built with would have dropped that target and hashed.
 */
class AdaptiveRescaleRoutingEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String REQUESTS_IN = ".gpu_inference.model." + MODEL + ".version.1.requestsIn";

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(() -> {
        Configuration c = new Configuration();
        c.set(JobManagerOptions.SCHEDULER, JobManagerOptions.SchedulerType.Adaptive);
        c.set(JobManagerOptions.SCHEDULER_EXECUTING_COOLDOWN_AFTER_RESCALING, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_EXECUTING_RESOURCE_STABILIZATION_TIMEOUT, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_SUBMISSION_RESOURCE_STABILIZATION_TIMEOUT, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_RESCALE_TRIGGER_MAX_DELAY, Duration.ofMillis(100));
        c.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(300));
        return new MiniClusterResourceConfiguration.Builder()
                .setConfiguration(c)
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(3)
                .build();
    });
    static final FlinkRest REST = FlinkRest.of(FLINK);

    @Test
    void aPlanForTheRescaledJobRoutesToItsNewSubtask() throws Exception {
        Path root = FashionMnist.findRoot();
        FashionMnist images = FashionMnist.load(root);
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            Configuration config = TestJobs.config(kafka, "rescale", 1, root.resolve("models"));
            String control = "rescale-control";
            kafka.createTopics(1, control);
            config.set(InferenceJobOptions.CONTROL_TOPIC, control);
            config.set(InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL, Duration.ofSeconds(1));
            config.set(InferenceJobOptions.PARALLELISM, 2);
            config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(1));
            JobClient job = TestJobs.start(config, 1, "adaptive-rescale-routing");
            try {
                String jid = job.getJobID().toString();
                awaitParallelism(jid, 2); // also waits until the job graph is there
                String vertex = REST.vertexId(jid, "GPU inference");
                new AdaptiveSchedulerRescaler(REST.baseUrl(), Duration.ofSeconds(10)).setParallelism(jid, vertex, 3);
                awaitParallelism(jid, 3);
                assertThat(REST.vertex(jid, "Routed requests").orElseThrow().path("parallelism").asInt())
                        .as("the forward-joined routed-requests map rescaled with it").isEqualTo(3);

                ControlMessage plan = ControlMessage.of(1, System.currentTimeMillis(), 3,
                        List.of(new ModelRoute(MODEL, List.of(new RouteTarget(2, 1)), "the new subtask")), List.of(),
                        "after the rescale to 3");
                KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(new ProducerRecord<>("unused",
                        "plan".getBytes(StandardCharsets.UTF_8), ControlMessageCodec.encode(plan))));
                REST.awaitSubtaskMetrics(jid, "Plan router", 1, List.of(".control.planEpoch"), -1,
                        m -> m.get(0).get("planEpoch") == 1, Duration.ofSeconds(60), "the plan was never applied");

                KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests("rescale"),
                        TestJobs.imageRequests(images, MODEL, 0, 100));
                TestJobs.assertAnsweredOnce(kafka, TestJobs.responses("rescale"), 100, Duration.ofMinutes(1),
                        Duration.ofMillis(500));
                Map<Integer, Double> counts = REST.pollSubtaskMetric(jid, "GPU inference", 3, REQUESTS_IN, 0,
                        m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= 100, Duration.ofSeconds(30));
                assertThat(counts.getOrDefault(2, 0.0)).as("routed to the new subtask by the plan: %s", counts).isEqualTo(100.0);
                assertThat(counts.getOrDefault(0, 0.0) + counts.getOrDefault(1, 0.0)).isZero();
            } finally {
                job.cancel().get();
            }
        }
    }

    private static void awaitParallelism(String jid, int parallelism) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            java.util.Optional<com.fasterxml.jackson.databind.JsonNode> v;
            try {
                v = REST.vertex(jid, "GPU inference");
            } catch (AssertionError | java.io.IOException e) { // the job is not known to the REST API yet
                last = e.getMessage();
                Thread.sleep(200);
                continue;
            }
            last = v.map(n -> n.path("parallelism").asInt() + " " + n.path("status").asText()).orElse("no vertex yet");
            if (v.isPresent() && v.get().path("parallelism").asInt() == parallelism
                    && "RUNNING".equals(v.get().path("status").asText())) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("the inference vertex never ran at parallelism " + parallelism + ": " + last);
    }
}
