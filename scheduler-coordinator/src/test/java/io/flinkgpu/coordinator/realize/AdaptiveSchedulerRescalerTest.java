package io.flinkgpu.coordinator.realize;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.collect.InferenceJobFixture;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Rescaling the inference vertex through the REST API of a MiniCluster with the adaptive scheduler. */
class AdaptiveSchedulerRescalerTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(() -> {
        Configuration c = new Configuration();
        c.set(JobManagerOptions.SCHEDULER, JobManagerOptions.SchedulerType.Adaptive);
        // rescale at once: no cooldown, no waiting for resources to stabilise or for a checkpoint
        c.set(JobManagerOptions.SCHEDULER_EXECUTING_COOLDOWN_AFTER_RESCALING, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_EXECUTING_RESOURCE_STABILIZATION_TIMEOUT, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_SUBMISSION_RESOURCE_STABILIZATION_TIMEOUT, Duration.ZERO);
        c.set(JobManagerOptions.SCHEDULER_RESCALE_TRIGGER_MAX_DELAY, Duration.ofMillis(100));
        return new MiniClusterResourceConfiguration.Builder()
                .setConfiguration(c)
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(3)
                .build();
    });

    @Test
    void adaptiveSchedulerRescalesTheInferenceVertexToTheRequestedParallelism() throws Exception {
        Configuration c = FLINK.getClientConfiguration();
        String rest = "http://" + c.get(RestOptions.ADDRESS) + ":" + c.get(RestOptions.PORT);
        JobClient job = InferenceJobFixture.start(StreamExecutionEnvironment.getExecutionEnvironment());
        try {
            String jid = job.getJobID().toString();
            String vid = inferenceVertex(rest, jid);
            assertThat(awaitParallelism(rest, jid, vid, 2)).isEqualTo(2);
            AdaptiveSchedulerRescaler rescaler = new AdaptiveSchedulerRescaler(rest, Duration.ofSeconds(5));
            rescaler.setParallelism(jid, vid, 1);
            assertThat(rescaler.upperBound(jid, vid)).isEqualTo(1);
            assertThat(awaitParallelism(rest, jid, vid, 1)).isEqualTo(1);
            rescaler.setParallelism(jid, vid, 2);
            assertThat(awaitParallelism(rest, jid, vid, 2)).isEqualTo(2);
        } finally {
            job.cancel().get();
        }
    }

    private static JsonNode get(String url) throws Exception {
        HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url)).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        return new ObjectMapper().readTree(r.body());
    }

    private static String inferenceVertex(String rest, String jid) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            for (JsonNode v : get(rest + "/jobs/" + jid).path("vertices")) {
                if (v.path("name").asText().contains("GPU inference")) {
                    return v.path("id").asText();
                }
            }
            Thread.sleep(200);
        }
        throw new AssertionError("no inference vertex");
    }

    /** The vertex's parallelism once it equals {@code want} and the job runs, or the last seen. */
    private static int awaitParallelism(String rest, String jid, String vid, int want) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
        int seen = -1;
        while (System.nanoTime() < deadline) {
            JsonNode job = get(rest + "/jobs/" + jid);
            for (JsonNode v : job.path("vertices")) {
                if (v.path("id").asText().equals(vid)) {
                    seen = v.path("parallelism").asInt();
                    if (seen == want && "RUNNING".equals(v.path("status").asText())) {
                        return seen;
                    }
                }
            }
            Thread.sleep(300);
        }
        return seen;
    }
}
