package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class KafkaResponsesTest {
    private static long parse(String key) {
        return KafkaResponses.parse(key.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aRequestKeyNamesItsRunAndSequenceNumber() {
        assertThat(KafkaResponses.run(parse("r12-345"))).isEqualTo(12);
        assertThat(KafkaResponses.seq(parse("r12-345"))).isEqualTo(345);
        assertThat(KafkaResponses.run(parse("r-3-7"))).isEqualTo(-3);
        assertThat(KafkaResponses.seq(parse("r-3-7"))).isEqualTo(7);
        assertThat(KafkaResponses.run(parse("r0-0"))).isZero();
    }

    @Test
    void otherKeysAreNoRequestKeys() {
        assertThat(KafkaResponses.parse(null)).isEqualTo(KafkaResponses.NOT_A_REQUEST_KEY);
        assertThat(parse("warmup-1")).isEqualTo(KafkaResponses.NOT_A_REQUEST_KEY);
        assertThat(parse("r12")).isEqualTo(KafkaResponses.NOT_A_REQUEST_KEY);
    }
}
