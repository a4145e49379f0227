package io.flinkgpu.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/** {@code inference.kafka.properties.*}: what passes to the job's Kafka clients and what is refused at build time. */
class KafkaClientPropertiesTest {
    private static final String P = InferenceJob.KAFKA_PROPERTIES_PREFIX;

    @Test
    void passesEveryPrefixedPropertyWithoutThePrefix() {
        Configuration config = new Configuration();
        config.setString(P + "security.protocol", "SASL_SSL");
        config.setString(P + "sasl.mechanism", "PLAIN");
        config.setString(P + "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                + "username=\"job\" password=\"${file:/run/secrets/kafka.properties:password}\";");
        config.setString(P + "linger.ms", "20");
        config.set(InferenceJobOptions.BOOTSTRAP_SERVERS, "broker:9093");
        assertThat(InferenceJob.kafkaClientProperties(config))
                .containsOnlyKeys("security.protocol", "sasl.mechanism", "sasl.jaas.config", "linger.ms")
                .containsEntry("linger.ms", "20")
                .containsEntry("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required "
                        + "username=\"job\" password=\"${file:/run/secrets/kafka.properties:password}\";");
        assertThat(InferenceJob.kafkaClientProperties(new Configuration())).isEmpty();
    }

    @Test
    void theJobIsNotBuiltWithAPropertyThatWouldBreakIt() {
        for (String key : InferenceJob.REFUSED_KAFKA_PROPERTIES.keySet()) {
            Configuration config = new Configuration();
            config.setString(P + key, "secret-looking-value");
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            assertThatThrownBy(() -> InferenceJob.build(env, config))
                    .as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(P + key)
                    .hasMessageNotContaining("secret-looking-value");
        }
    }

    @Test
    void refusedKeysPointAtTheJobsOwnOption() {
        Configuration config = new Configuration();
        config.setString(P + "bootstrap.servers", "elsewhere:9092");
        config.setString(P + "group.id", "other");
        config.setString(P + "max.request.size", "10");
        assertThatThrownBy(() -> InferenceJob.kafkaClientProperties(config))
                .hasMessageContaining(InferenceJobOptions.BOOTSTRAP_SERVERS.key())
                .hasMessageContaining(InferenceJobOptions.GROUP_ID.key())
                .hasMessageContaining(InferenceJobOptions.MAX_RECORD_SIZE.key())
                .hasMessageNotContaining("elsewhere");
    }

    @Test
    void theOptionAsOneValueIsRefused() {
        Configuration config = new Configuration();
        config.set(InferenceJobOptions.KAFKA_PROPERTIES, Map.of("security.protocol", "SASL_SSL"));
        assertThatThrownBy(() -> InferenceJob.kafkaClientProperties(config))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(P + "<property>");
    }

    @Test
    void aJobWithPassThroughPropertiesBuilds() {
        Configuration config = new Configuration();
        config.setString(P + "security.protocol", "SASL_PLAINTEXT");
        config.setString(P + "linger.ms", "20");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        InferenceJob.build(env, config);
        assertThat(env.getStreamGraph().getStreamNodes()).isNotEmpty();
    }
}
