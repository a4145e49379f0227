package io.flinkgpu.bench.sut;

import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** The byte-array Kafka clients the benchmark tools drive the job with. */
public final class KafkaClients {
    private KafkaClients() {}

    /** A producer that sends almost at once (1 ms linger). */
    public static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "1");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** A consumer of {@code topic} from its earliest offset, in a group of its own. */
    public static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, String topic) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("group.id", topic + "-reader");
        p.setProperty("auto.offset.reset", "earliest");
        KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        c.subscribe(List.of(topic));
        return c;
    }
}
