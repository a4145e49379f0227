package io.flinkgpu.coordinator.realize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.service.CoordinatorService;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.kafka.common.KafkaException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code coordinator.kafka.properties.*}: read from the configuration, handed to the producer, owned keys refused. */
class KafkaPlanRealizerPropertiesTest {
    private static final String P = CoordinatorOptions.KAFKA_PROPERTIES.key() + ".";

    @Test
    void thePrefixedPropertiesAreReadWithoutThePrefix() {
        Configuration c = new Configuration();
        c.setString(P + "security.protocol", "SASL_SSL");
        c.setString(P + "sasl.jaas.config", "${file:/run/secrets/kafka.properties:sasl.jaas.config}");
        c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, "broker:9093");
        assertThat(CoordinatorOptions.kafkaClientProperties(c)).containsExactly(
                Map.entry("sasl.jaas.config", "${file:/run/secrets/kafka.properties:sasl.jaas.config}"),
                Map.entry("security.protocol", "SASL_SSL"));
        assertThat(CoordinatorOptions.all()).containsKey(CoordinatorOptions.KAFKA_PROPERTIES.key());
    }

    @Test
    void thePropertiesReachTheProducer() {
        // an unknown protocol is only noticed by the producer itself
        assertThatThrownBy(() -> new KafkaPlanRealizer("localhost:1", "control", Duration.ofSeconds(1),
                        Map.of("security.protocol", "NOT_A_PROTOCOL")))
                .isInstanceOf(KafkaException.class)
                .hasStackTraceContaining("NOT_A_PROTOCOL");
    }

    @Test
    void keysTheRealizerOwnsAreRefusedNamingTheKeyNotTheValue() {
        for (String key : KafkaPlanRealizer.REFUSED_PROPERTIES.keySet()) {
            assertThatThrownBy(() -> new KafkaPlanRealizer("localhost:1", "control", Duration.ofSeconds(1),
                            Map.of(key, "secret-looking-value")))
                    .as(key)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("coordinator.kafka.properties." + key)
                    .hasMessageNotContaining("secret-looking-value");
        }
    }

    @Test
    void theServiceRefusesToStartWithARefusedKey(@TempDir Path state) {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.STATE_DIR, state.toString());
        c.set(CoordinatorOptions.ADMIN_PORT, -1);
        c.setString(P + "acks", "1");
        assertThatThrownBy(() -> CoordinatorService.start(c))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("coordinator.kafka.properties.acks");
    }
}
