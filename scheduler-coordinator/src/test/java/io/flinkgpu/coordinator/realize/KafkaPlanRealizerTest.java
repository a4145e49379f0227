package io.flinkgpu.coordinator.realize;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.test.KafkaClusterTestKit;
import org.apache.kafka.common.test.TestKitNodes;
import org.junit.jupiter.api.Test;

/** Plans reach a real (in-process, KRaft) Kafka broker's control topic and decode back. */
class KafkaPlanRealizerTest {
    @Test
    void publishedPlansArriveOnTheControlTopicInOrder() throws Exception {
        KafkaClusterTestKit kafka = new KafkaClusterTestKit.Builder(new TestKitNodes.Builder()
                        .setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build())
                .setConfigProp("offsets.topic.replication.factor", "1")
                .setConfigProp("group.initial.rebalance.delay.ms", "0")
                .build();
        try {
            java.io.PrintStream stdout = System.out;
            System.setOut(new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
            try {
                kafka.format();
            } finally {
                System.setOut(stdout);
            }
            kafka.startup();
            kafka.waitForReadyBrokers();
            String bootstrap = kafka.bootstrapServers();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(new NewTopic("control", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            List<ControlMessage> plans = new ArrayList<>();
            try (KafkaPlanRealizer realizer = new KafkaPlanRealizer(bootstrap, "control", Duration.ofSeconds(20))) {
                for (long epoch = 1; epoch <= 3; epoch++) {
                    ControlMessage p = ControlMessage.of(epoch, epoch, 2, List.of(new ModelRoute("m",
                            List.of(new RouteTarget((int) epoch % 2, 1)), "test")), List.of(), "epoch " + epoch);
                    realizer.publish(p);
                    plans.add(p);
                }
            }
            Properties props = new Properties();
            props.setProperty("bootstrap.servers", bootstrap);
            props.setProperty("auto.offset.reset", "earliest");
            List<ControlMessage> read = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.assign(List.of(new org.apache.kafka.common.TopicPartition("control", 0)));
                consumer.seekToBeginning(consumer.assignment());
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (read.size() < 3 && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                        assertThat(new String(r.key(), java.nio.charset.StandardCharsets.UTF_8)).isEqualTo("plan");
                        read.add(ControlMessageCodec.decode(r.value()));
                    }
                }
            }
            assertThat(read).containsExactlyElementsOf(plans);
        } finally {
            kafka.close();
        }
    }
}
