package io.flinkgpu.job.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/** The in-process broker's topic life cycle: what a benchmark creates it can delete again. */
class EmbeddedKafkaTest {

    @Test
    void deletesTopicsThatHoldRecordsAndKeepsTheOthers() throws Exception {
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            kafka.createTopics(1, "written", "empty", "kept");
            Properties p = kafka.clientProperties();
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                producer.send(new ProducerRecord<>("written", new byte[3136])).get();
            }
            assertThat(kafka.topicNames()).contains("written", "empty", "kept");

            kafka.deleteTopics("written", "empty");

            assertThat(kafka.topicNames()).contains("kept").doesNotContain("written", "empty");
        }
    }
}
