package io.flinkgpu.contract.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class PassThroughPropertiesTest {
    private static final String PREFIX = "inference.kafka.properties";
    private static final Map<String, String> REFUSED = Map.of(
            "bootstrap.servers", "set inference.kafka.bootstrap-servers instead",
            "key.deserializer", "the job reads raw bytes");

    @Test
    void takesTheEntriesUnderThePrefixWithoutIt() {
        Map<String, String> config = Map.of(
                PREFIX + ".security.protocol", "SASL_PLAINTEXT",
                PREFIX + ".sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required;",
                PREFIX + ".linger.ms", "7",
                "inference.kafka.bootstrap-servers", "broker:9092",
                "inference.kafka.propertiesX", "not under the prefix");
        assertThat(PassThroughProperties.read(config, PREFIX, REFUSED)).containsExactly(
                Map.entry("linger.ms", "7"),
                Map.entry("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required;"),
                Map.entry("security.protocol", "SASL_PLAINTEXT"));
        assertThat(PassThroughProperties.read(Map.of(), PREFIX, REFUSED)).isEmpty();
    }

    @Test
    void refusesOwnedKeysNamingEveryKeyAndWhyButNoValue() {
        Map<String, String> config = Map.of(
                PREFIX + ".bootstrap.servers", "elsewhere:9092",
                PREFIX + ".key.deserializer", "com.example.Secret",
                PREFIX + ".sasl.jaas.config", "password=\"hunter2\"");
        assertThatThrownBy(() -> PassThroughProperties.read(config, PREFIX, REFUSED))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(PREFIX + ".bootstrap.servers (set inference.kafka.bootstrap-servers instead)")
                .hasMessageContaining(PREFIX + ".key.deserializer (the job reads raw bytes)")
                .hasMessageNotContaining("elsewhere")
                .hasMessageNotContaining("hunter2")
                .hasMessageNotContaining("com.example");
    }

    @Test
    void refusesThePrefixAsOneValue() {
        assertThatThrownBy(() -> PassThroughProperties.read(Map.of(PREFIX, "sasl.jaas.config:secret"), PREFIX,
                        REFUSED))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(PREFIX + ".<property>")
                .hasMessageNotContaining("secret");
    }
}
