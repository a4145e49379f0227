package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.ThreadCpu;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.WireCodec;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Kafka alone, without Flink: one thread that polls the requests topic with a plain consumer,
 * decodes each request, answers it as the {@link Passthrough} does (zeros of the model's declared
 * outputs, one row per sample) and sends the encoded response with a plain producer, with the
 * job's own Kafka client properties (its sinks' producer settings, the
 * {@code inference.kafka.properties.*} pass-through). Set beside the passthrough, it tells what
 * Flink adds to the floor from what Kafka and this machine set.
 *
 * <p>Its threads (the loop, the consumer's and the producer's) run in the thread group
 * {@link ThreadCpu#RELAY_GROUP}: the producer's network thread counts as the sink, every other
 * thread as the source. A record that does not decode is not answered (the job would dead-letter
 * it; the benchmark sends none), and it or a send the broker refuses fails the configuration when
 * the relay is closed.
 */
public final class KafkaRelay implements AutoCloseable {
    /** The loop thread's name. */
    public static final String THREAD = "kafka-relay";

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final KafkaProducer<byte[], byte[]> producer;
    private final ModelRepository models;
    private final WireCodec codec = new BinaryCodec();
    private final String responsesTopic;
    private final AtomicLong undecodable = new AtomicLong();
    private final Thread loop;
    private volatile boolean running = true;
    private volatile Throwable failure;

    private KafkaRelay(ReadableConfig config) {
        Properties c = new Properties();
        c.putAll(InferenceJob.kafkaClientProperties(config));
        c.setProperty("bootstrap.servers", config.get(InferenceJobOptions.BOOTSTRAP_SERVERS));
        c.setProperty("group.id", config.get(InferenceJobOptions.GROUP_ID));
        c.setProperty("auto.offset.reset", config.get(InferenceJobOptions.STARTING_OFFSETS));
        c.setProperty("enable.auto.commit", "false");
        c.setProperty("client.id", THREAD + "-consumer");
        Properties p = InferenceJob.sinkProducerProperties(config);
        p.setProperty("bootstrap.servers", config.get(InferenceJobOptions.BOOTSTRAP_SERVERS));
        p.setProperty("client.id", THREAD + "-producer");
        consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        models = ModelRepository.open(Path.of(config.get(GpuInferenceOptions.MODEL_REPOSITORY)));
        responsesTopic = config.get(InferenceJobOptions.RESPONSES_TOPIC);
        consumer.subscribe(List.of(config.get(InferenceJobOptions.REQUESTS_TOPIC)));
        loop = new Thread(this::run, THREAD);
        loop.setDaemon(true);
        loop.start();
    }

    /**
     * Starts a relay for the job's options in {@code config} (bootstrap servers, topics, group,
     * starting offsets, model repository, Kafka client properties), its threads in
     * {@link ThreadCpu#RELAY_GROUP}.
     */
    public static KafkaRelay start(ReadableConfig config) throws Exception {
        return ThreadCpu.inGroup(ThreadCpu.RELAY_GROUP, () -> new KafkaRelay(config));
    }

    private void run() {
        try {
            while (running) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    InferenceRequest request;
                    try {
                        request = codec.decodeRequest(r.value());
                    } catch (ProtocolException e) {
                        undecodable.incrementAndGet();
                        continue;
                    }
                    producer.send(new ProducerRecord<>(responsesTopic, r.key(),
                            codec.encodeResponse(Passthrough.answer(models, request))), (metadata, e) -> {
                                if (e != null && failure == null) {
                                    failure = e; // an answer the broker refused: close() reports it
                                }
                            });
                }
            }
        } catch (WakeupException e) {
            // closing
        } catch (Throwable e) {
            failure = e;
        }
    }

    /**
     * Stops the loop and closes both clients; throws if the loop stopped early, the broker refused
     * an answer or a record did not decode.
     */
    @Override
    public void close() throws Exception {
        running = false;
        consumer.wakeup();
        loop.join(TimeUnit.SECONDS.toMillis(30));
        try {
            consumer.close();
        } finally {
            producer.close(Duration.ofSeconds(30));
        }
        if (failure != null) {
            throw new IllegalStateException("the Kafka relay failed: " + failure, failure);
        }
        if (undecodable.get() > 0) {
            throw new IllegalStateException(undecodable.get() + " records on the requests topic did not decode");
        }
    }
}
