package io.flinkgpu.it;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Plain Kafka clients for the tests: produce raw records, read a topic until enough arrived. Each
 * takes either the bootstrap servers or the client properties to connect with (bootstrap servers
 * plus e.g. SASL credentials, see {@link SecureKafka#clientProperties}).
 */
final class KafkaTopics {
    private KafkaTopics() {}

    static void produce(String bootstrap, String topic, List<ProducerRecord<byte[], byte[]>> records) {
        produceWithMetadata(bootstrap, topic, records);
    }

    static void produce(Properties client, String topic, List<ProducerRecord<byte[], byte[]>> records) {
        produceWithMetadata(client, topic, records);
    }

    private static Properties bootstrapOnly(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        return p;
    }

    /** Produces the records in order and returns where each landed. */
    static List<org.apache.kafka.clients.producer.RecordMetadata> produceWithMetadata(String bootstrap, String topic,
            List<ProducerRecord<byte[], byte[]>> records) {
        return produceWithMetadata(bootstrapOnly(bootstrap), topic, records);
    }

    /** As {@link #produceWithMetadata(String, String, List)}, connecting with {@code client}. */
    static List<org.apache.kafka.clients.producer.RecordMetadata> produceWithMetadata(Properties client, String topic,
            List<ProducerRecord<byte[], byte[]>> records) {
        List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> futures = new ArrayList<>();
        Properties p = new Properties();
        p.putAll(client);
        p.setProperty("linger.ms", "5");
        p.setProperty("max.request.size", String.valueOf(8 * 1024 * 1024));
        // One batch in flight: right after a topic is created a first batch can fail while later ones
        // are in flight, which the broker answered with OutOfOrderSequenceException and the send failed.
        p.setProperty("max.in.flight.requests.per.connection", "1");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            for (ProducerRecord<byte[], byte[]> r : records) {
                futures.add(producer.send(new ProducerRecord<>(topic, null, r.key(), r.value(), r.headers())));
            }
            producer.flush();
            List<org.apache.kafka.clients.producer.RecordMetadata> out = new ArrayList<>();
            for (var f : futures) {
                out.add(f.get());
            }
            return out;
        } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException("produce failed", e);
        }
    }

    /**
     * Reads {@code topic} from the beginning until {@code done} holds for what was read, or the
     * timeout passes; then keeps reading for {@code settle} to catch records beyond the expected.
     */
    static List<ConsumerRecord<byte[], byte[]>> read(String bootstrap, String topic,
            Predicate<List<ConsumerRecord<byte[], byte[]>>> done, Duration timeout, Duration settle) {
        return read(bootstrapOnly(bootstrap), topic, done, timeout, settle);
    }

    /** As {@link #read(String, String, Predicate, Duration, Duration)}, connecting with {@code client}. */
    static List<ConsumerRecord<byte[], byte[]>> read(Properties client, String topic,
            Predicate<List<ConsumerRecord<byte[], byte[]>>> done, Duration timeout, Duration settle) {
        Properties p = new Properties();
        p.putAll(client);
        p.setProperty("group.id", "it-reader-" + UUID.randomUUID());
        p.setProperty("auto.offset.reset", "earliest");
        p.setProperty("isolation.level", "read_committed");
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!done.test(out) && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
            long settleUntil = System.nanoTime() + settle.toNanos();
            while (System.nanoTime() < settleUntil) {
                consumer.poll(Duration.ofMillis(200)).forEach(out::add);
            }
        }
        return out;
    }
}
