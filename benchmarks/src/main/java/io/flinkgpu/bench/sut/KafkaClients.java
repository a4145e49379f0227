package io.flinkgpu.bench.sut;

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** The byte-array Kafka producer the benchmark tools' streams drive the job with. */
public final class KafkaClients {
    private KafkaClients() {}

    /** A producer that sends almost at once (1 ms linger). */
    public static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "1");
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
