package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.contract.placement.SlotLayout;
import io.flinkgpu.coordinator.realize.AdaptiveSchedulerRescaler;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
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
 * Devices of different speed get different numbers of slots ({@code inference.device.slot-weights}):
 * the Kafka job on two simulated GPUs weighted 3:1, built with two inference subtasks (one per GPU)
 * and rescaled to four by the adaptive scheduler as the coordinator's rescaler does, runs three
 * subtasks on sim:0 and one on sim:1 (each subtask learns the new parallelism at restart and picks
 * its device by {@link SlotLayout}); a plan that places the model on sim:1, routing it to the
 * subtask the layout puts there, has every request answered by that subtask.
 */
class SlotWeightsEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String REQUESTS_IN = ".gpu_inference.model." + MODEL + ".version.1.requestsIn";
    static final List<Double> WEIGHTS = List.of(3.0, 1.0);

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
                .setNumberSlotsPerTaskManager(4)
                .build();
    });
    static final FlinkRest REST = FlinkRest.of(FLINK);

    @Test
    void threeToOneAtFourRunsThreeSubtasksOnTheFastDeviceAndRoutesDeviceOnesModelToItsSubtask() throws Exception {
        Path root = FashionMnist.findRoot();
        FashionMnist images = FashionMnist.load(root);
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            Configuration config = TestJobs.config(kafka, "slots", 1, root.resolve("models"));
            String control = "slots-control";
            kafka.createTopics(1, control);
            config.set(InferenceJobOptions.CONTROL_TOPIC, control);
            config.set(InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL, Duration.ofSeconds(1));
            config.set(InferenceJobOptions.PARALLELISM, 2);
            config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(1));
            config.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
            config.set(GpuInferenceOptions.SIMULATED_DEVICES, 2);
            config.set(GpuInferenceOptions.DEVICE_SLOT_WEIGHTS, WEIGHTS);
            JobClient job = TestJobs.start(config, 1, "slot-weights");
            try {
                String jid = job.getJobID().toString();
                awaitParallelism(jid, 2);
                assertThat(awaitDevices(jid, 2)).as("at 2: one subtask per device").containsExactly(0, 1);

                String vertex = REST.vertexId(jid, "GPU inference");
                new AdaptiveSchedulerRescaler(REST.baseUrl(), Duration.ofSeconds(10)).setParallelism(jid, vertex, 4);
                awaitParallelism(jid, 4);
                List<Integer> devices = awaitDevices(jid, 4);
                assertThat(devices).as("the layout of 3:1 at 4").containsExactly(0, 1, 0, 0);
                assertThat(devices.stream().filter(d -> d == 0).count()).as("subtasks on sim:0").isEqualTo(3);
                assertThat(devices.stream().filter(d -> d == 1).count()).as("subtasks on sim:1").isEqualTo(1);

                // the model placed on device 1: the plan routes it to the subtasks the layout puts there
                List<Integer> onDeviceOne = SlotLayout.of(WEIGHTS).subtasksOf(1, 4);
                assertThat(onDeviceOne).containsExactly(1);
                List<RouteTarget> targets = onDeviceOne.stream().map(s -> new RouteTarget(s, 1)).toList();
                ControlMessage plan = ControlMessage.of(1, System.currentTimeMillis(), 4,
                        List.of(new ModelRoute(MODEL, targets, "held by sim:1")), List.of(), "model on sim:1");
                KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(new ProducerRecord<>("unused",
                        "plan".getBytes(StandardCharsets.UTF_8), ControlMessageCodec.encode(plan))));
                REST.awaitSubtaskMetrics(jid, "Plan router", 1, List.of(".control.planEpoch"), -1,
                        m -> m.get(0).get("planEpoch") == 1, Duration.ofSeconds(60), "the plan was never applied");

                KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests("slots"),
                        TestJobs.imageRequests(images, MODEL, 0, 100));
                TestJobs.assertAnsweredOnce(kafka, TestJobs.responses("slots"), 100, Duration.ofMinutes(1),
                        Duration.ofMillis(500));
                Map<Integer, Double> counts = REST.pollSubtaskMetric(jid, "GPU inference", 4, REQUESTS_IN, 0,
                        m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= 100, Duration.ofSeconds(30));
                assertThat(counts.getOrDefault(1, 0.0)).as("answered on sim:1's subtask: %s", counts).isEqualTo(100.0);
                assertThat(counts.getOrDefault(0, 0.0) + counts.getOrDefault(2, 0.0) + counts.getOrDefault(3, 0.0))
                        .isZero();
            } finally {
                job.cancel().get();
            }
        }
    }

    /**
     * The simulated device each of the {@code parallelism} inference subtasks registered its device
     * metrics under ({@code gpu_inference.device.sim_<d>.healthy}), once every subtask reports one.
     */
    private static List<Integer> awaitDevices(String jid, int parallelism) throws Exception {
        List<String> suffixes = List.of(deviceSuffix(0), deviceSuffix(1));
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        Map<Integer, Map<String, Double>> last = Map.of();
        while (System.nanoTime() < deadline) {
            try {
                last = REST.subtaskMetrics(jid, REST.vertexId(jid, "GPU inference"), parallelism, suffixes);
            } catch (AssertionError | java.io.IOException e) { // restarting after the rescale
                Thread.sleep(300);
                continue;
            }
            List<Integer> devices = new ArrayList<>();
            for (int s = 0; s < parallelism; s++) {
                Map<String, Double> m = last.getOrDefault(s, Map.of());
                if (m.size() == 1) {
                    devices.add(m.containsKey(deviceSuffix(0)) ? 0 : 1);
                }
            }
            if (devices.size() == parallelism) {
                return devices;
            }
            Thread.sleep(300);
        }
        throw new AssertionError("not every subtask reported one device: " + last);
    }

    private static String deviceSuffix(int device) {
        return "." + MetricNames.DEVICE + ".sim_" + device + "." + MetricNames.HEALTHY;
    }

    private static void awaitParallelism(String jid, int parallelism) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        String last = "";
        while (System.nanoTime() < deadline) {
            java.util.Optional<com.fasterxml.jackson.databind.JsonNode> v;
            try {
                v = REST.vertex(jid, "GPU inference");
            } catch (AssertionError | java.io.IOException e) {
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
