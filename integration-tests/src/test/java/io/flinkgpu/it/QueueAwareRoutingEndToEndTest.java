package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Queue-aware routing in a running job: a plan routes the CNN to both inference subtasks with equal
 * weights and a slow model (the MLP, 20 ms per batch of at most 4 on its simulated device) to
 * subtask 0 only, and the two models' requests arrive interleaved. With
 * {@code inference.routing.queue-aware} off the CNN is split exactly by the weights, half of it
 * waiting behind the MLP's backlog; on, the router sees subtask 0's backlog on the stage's queue
 * board and sends most of the CNN to subtask 1. Every request is answered once either way.
 */
class QueueAwareRoutingEndToEndTest extends KafkaAndImages {
    static final String CNN = "fashion-mnist-cnn";
    static final String MLP = "fashion-mnist-mlp";
    static final int EACH = 200;

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(2);
    static final FlinkRest REST = FlinkRest.of(FLINK);

    @Test
    void offTheWeightsSplitTheCnnEvenlyOnMostOfItAvoidsTheBackedUpSubtask() throws Exception {
        Map<Integer, Double> off = run("queue-off", false);
        assertThat(off.getOrDefault(0, 0.0)).as("round robin: %s", off).isEqualTo(EACH / 2.0);
        assertThat(off.getOrDefault(1, 0.0)).as("round robin: %s", off).isEqualTo(EACH / 2.0);

        Map<Integer, Double> on = run("queue-on", true);
        assertThat(on.getOrDefault(0, 0.0) + on.getOrDefault(1, 0.0)).isEqualTo(EACH);
        assertThat(on.getOrDefault(1, 0.0)).as("CNN requests on the idle subtask: %s", on)
                .isGreaterThanOrEqualTo(0.75 * EACH);
    }

    /** Runs the job with queue-aware routing on or off; returns the CNN's requestsIn per inference subtask. */
    private Map<Integer, Double> run(String prefix, boolean queueAware) throws Exception {
        Configuration config = TestJobs.config(kafka, prefix, 1, root.resolve("models"));
        String control = prefix + "-control";
        kafka.createTopics(1, control);
        config.set(InferenceJobOptions.CONTROL_TOPIC, control);
        config.set(InferenceJobOptions.PARALLELISM, 2);
        config.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        config.set(GpuInferenceOptions.SIMULATED_DEVICES, 2);
        config.set(GpuInferenceOptions.SIMULATED_MODEL_SPEEDS, List.of(MLP + "=20+0*b"));
        config.set(GpuInferenceOptions.MAX_BATCH_SIZE, 4);
        config.set(GpuInferenceOptions.QUEUE_AWARE_ROUTING, queueAware);
        ControlMessage plan = ControlMessage.of(1, System.currentTimeMillis(), 2, List.of(
                new ModelRoute(CNN, List.of(new RouteTarget(0, 1), new RouteTarget(1, 1)), "two replicas"),
                new ModelRoute(MLP, List.of(new RouteTarget(0, 1)), "one replica")), List.of(), "test plan");
        KafkaTopics.produce(kafka.bootstrapServers(), control, List.of(new ProducerRecord<>("unused",
                "plan".getBytes(StandardCharsets.UTF_8), ControlMessageCodec.encode(plan))));
        JobClient job = TestJobs.start(config, 1, prefix);
        try {
            String jid = job.getJobID().toString();
            REST.awaitSubtaskMetrics(jid, "Plan router", 1, List.of(".control.planEpoch"), -1,
                    m -> m.get(0).get("planEpoch") == 1, Duration.ofSeconds(60), "the plan was never applied");
            List<ProducerRecord<byte[], byte[]>> cnn = TestJobs.imageRequests(images, CNN, 0, EACH);
            List<ProducerRecord<byte[], byte[]>> mlp = TestJobs.imageRequests(images, MLP, EACH, EACH);
            List<ProducerRecord<byte[], byte[]>> interleaved = new ArrayList<>();
            for (int i = 0; i < EACH; i++) {
                interleaved.add(mlp.get(i));
                interleaved.add(cnn.get(i));
            }
            KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests(prefix), interleaved);
            TestJobs.assertAnsweredOnce(kafka, TestJobs.responses(prefix), 2 * EACH, Duration.ofMinutes(2),
                    Duration.ofSeconds(1));
            return REST.pollSubtaskMetric(jid, "GPU inference", 2,
                    ".gpu_inference.model." + CNN + ".version.1.requestsIn", 0,
                    m -> m.values().stream().mapToDouble(Double::doubleValue).sum() >= EACH, Duration.ofSeconds(30));
        } finally {
            job.cancel().get();
        }
    }
}
