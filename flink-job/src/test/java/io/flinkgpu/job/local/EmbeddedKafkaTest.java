package io.flinkgpu.job.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
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

    @Test
    void boundedTopicsKeepTheirLast256MibPerPartitionAndOthersKeepTheBrokerDefault() throws Exception {
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            kafka.createTopics(2, EmbeddedKafka.BOUNDED_RETENTION, "bounded");
            kafka.createTopics(1, "unbounded");
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers()))) {
                ConfigResource bounded = new ConfigResource(ConfigResource.Type.TOPIC, "bounded");
                ConfigResource unbounded = new ConfigResource(ConfigResource.Type.TOPIC, "unbounded");
                Map<ConfigResource, Config> configs =
                        admin.describeConfigs(List.of(bounded, unbounded)).all().get(30, TimeUnit.SECONDS);
                assertThat(configs.get(bounded).get("retention.bytes").value()).isEqualTo("268435456");
                assertThat(configs.get(bounded).get("segment.bytes").value()).isEqualTo("33554432");
                assertThat(configs.get(unbounded).get("retention.bytes").value()).isEqualTo("-1");
                assertThat(admin.describeTopics(List.of("bounded")).allTopicNames().get(30, TimeUnit.SECONDS)
                        .get("bounded").partitions()).hasSize(2);
            }
        }
    }
}
