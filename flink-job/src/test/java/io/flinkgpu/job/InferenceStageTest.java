package io.flinkgpu.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import java.util.List;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.junit.jupiter.api.Test;

/** A replacement inference stage runs between the job's own source, parser and sinks. */
class InferenceStageTest {
    static final class Echo implements MapFunction<InferenceRequest, InferenceResponse> {
        private static final long serialVersionUID = 1L;

        @Override
        public InferenceResponse map(InferenceRequest r) {
            return InferenceResponse.success(r.id(), r.modelName(), "1", List.of(), null);
        }
    }

    private static Configuration config() {
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.BOOTSTRAP_SERVERS, "localhost:1");
        return c;
    }

    private static List<String> operators(StreamExecutionEnvironment env) {
        return env.getStreamGraph().getStreamNodes().stream().map(StreamNode::getOperatorName).toList();
    }

    @Test
    void theStageReplacesGpuInferenceAndTheRestOfTheJobStays() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        InferenceJob.build(env, config(),
                requests -> requests.map(new Echo(), InferenceTypes.RESPONSE).uid("echo").name("Echo stage"));
        List<String> names = operators(env);
        assertThat(names).contains("Echo stage").noneMatch(n -> n.contains("GPU inference"));
        assertThat(names).anyMatch(n -> n.contains("Kafka requests")).contains("Parse")
                .anyMatch(n -> n.contains("Kafka responses")).anyMatch(n -> n.contains("Kafka dead letters"));
        assertThat(env.getCheckpointConfig().isCheckpointingEnabled()).isTrue();

        StreamExecutionEnvironment real = StreamExecutionEnvironment.getExecutionEnvironment();
        InferenceJob.build(real, config());
        assertThat(operators(real)).anyMatch(n -> n.contains("GPU inference")).doesNotContain("Echo stage");
    }

    @Test
    void aStageCannotRunUnderTheControlTopic() {
        Configuration c = config();
        c.set(InferenceJobOptions.CONTROL_TOPIC, "control");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        assertThatThrownBy(() -> InferenceJob.build(env, c,
                requests -> requests.map(new Echo(), InferenceTypes.RESPONSE)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(InferenceJobOptions.CONTROL_TOPIC.key());
    }
}
