package io.flinkgpu.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.stream.StreamSupport;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * An answer leaves the job on the thread that produced it: the responses sink is chained to GPU
 * inference (and at parallelism 1 to the source and parser too), so no answer is serialized,
 * buffered for {@code inference.buffer-timeout} or handed to another thread on its way out.
 */
class JobChainingTest {
    private static List<String> vertices(int jobParallelism, int inferenceParallelism, String controlTopic) {
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.BOOTSTRAP_SERVERS, "localhost:1");
        c.set(InferenceJobOptions.PARALLELISM, inferenceParallelism);
        c.set(InferenceJobOptions.CONTROL_TOPIC, controlTopic);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(jobParallelism);
        InferenceJob.build(env, c);
        Iterable<JobVertex> vs = env.getStreamGraph().getJobGraph().getVertices();
        return StreamSupport.stream(vs.spliterator(), false).map(JobVertex::getName).toList();
    }

    private static String vertexWith(List<String> vertices, String operator) {
        return vertices.stream().filter(v -> v.contains(operator)).findFirst().orElseThrow(
                () -> new AssertionError(operator + " is in no vertex of " + vertices));
    }

    @Test
    void atParallelismOneARequestAndItsAnswerStayInOneChain() {
        List<String> vs = vertices(1, 1, "");
        String chain = vertexWith(vs, "GPU inference");
        assertThat(chain).contains("Kafka requests", "Parse", "Kafka responses: Writer", "Kafka error responses: Writer");
    }

    @Test
    void routedToSeveralSubtasksTheResponsesSinkStaysChainedToInference() {
        List<String> vs = vertices(1, 2, "");
        assertThat(vertexWith(vs, "GPU inference")).contains("Kafka responses: Writer").doesNotContain("Parse");
        assertThat(vertexWith(vs, "Parse")).contains("Kafka error responses: Writer");
    }

    @Test
    void underTheControlTopicTheResponsesSinkStaysChainedToInference() {
        List<String> vs = vertices(1, 2, "control");
        assertThat(vertexWith(vs, "GPU inference")).contains("Kafka responses: Writer");
    }
}
