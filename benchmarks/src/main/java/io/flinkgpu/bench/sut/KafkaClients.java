package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.ThreadCpu;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** The byte-array Kafka producer the benchmark tools' streams drive the job with. */
public final class KafkaClients {
    private static final AtomicInteger CLIENTS = new AtomicInteger();

    private KafkaClients() {}

    /**
     * A client.id for one of the harness's own producers: its I/O thread is then named
     * {@code kafka-producer-network-thread | bench-load-N} and its CPU counted as load generator's.
     */
    static String loadClientId() {
        return ThreadCpu.LOAD_CLIENT_PREFIX + CLIENTS.incrementAndGet();
    }

    /** A producer that sends almost at once (1 ms linger). */
    public static KafkaProducer<byte[], byte[]> producer(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "1");
        p.setProperty("client.id", loadClientId());
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
