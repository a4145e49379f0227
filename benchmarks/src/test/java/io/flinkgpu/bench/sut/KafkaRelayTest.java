package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.flink.configuration.Configuration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** Kafka alone on a real broker: answers as the passthrough does, and reports what it could not answer. */
class KafkaRelayTest {
    @Test
    @Timeout(180)
    void itAnswersEveryRequestAsThePassthroughDoesAndFailsOnARecordThatDoesNotDecode(@TempDir Path repo)
            throws Exception {
        ImageScenario scenario = new ImageScenario(FashionMnist.findRoot());
        scenario.prepare(repo);
        BinaryCodec codec = new BinaryCodec();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            JobTopics topics = JobTopics.prefixed("relay-test");
            kafka.createTopics(1, topics.requests(), topics.responses());
            Configuration c = topics.jobConfiguration(kafka.bootstrapServers(), "earliest", repo);
            KafkaRelay relay = KafkaRelay.start(c);
            List<ConsumerRecord<byte[], byte[]>> answers = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = KafkaClients.producer(kafka.bootstrapServers());
                    KafkaConsumer<byte[], byte[]> consumer = consumer(kafka.bootstrapServers())) {
                producer.send(new ProducerRecord<>(topics.requests(), "junk".getBytes(StandardCharsets.UTF_8),
                        new byte[] {1, 2, 3})).get();
                for (int seq = 0; seq < 3; seq++) {
                    InferenceRequest request = scenario.request("r1-" + seq, seq);
                    producer.send(new ProducerRecord<>(topics.requests(), request.id().getBytes(StandardCharsets.UTF_8),
                            codec.encodeRequest(request))).get();
                }
                consumer.subscribe(List.of(topics.responses()));
                long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
                while (answers.size() < 3 && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(answers::add);
                }
            }
            assertThat(answers).hasSize(3);
            for (int seq = 0; seq < 3; seq++) {
                ConsumerRecord<byte[], byte[]> record = answers.get(seq);
                assertThat(new String(record.key(), StandardCharsets.UTF_8)).isEqualTo("r1-" + seq);
                InferenceResponse response = codec.decodeResponse(record.value());
                assertThat(response.isError()).as("%s", response.error()).isFalse();
                assertThat(response.id()).isEqualTo("r1-" + seq);
                assertThat(response.output("logits").shape()).containsExactly(1, 10);
                assertThat(response.output("logits").asFloats()).containsOnly(0f);
            }
            // the record that did not decode was not answered, and the relay says so when it stops
            assertThatThrownBy(relay::close).hasMessageContaining("1 records on the requests topic did not decode");
        }
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("group.id", "relay-test-reader");
        p.setProperty("auto.offset.reset", "earliest");
        return new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }
}
