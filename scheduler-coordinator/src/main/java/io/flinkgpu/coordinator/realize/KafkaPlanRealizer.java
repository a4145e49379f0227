package io.flinkgpu.coordinator.realize;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.PlanSigner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes plans to the control topic as JSON ({@link ControlMessageCodec}), key {@code plan},
 * idempotent and acknowledged by all in-sync replicas; {@link #publish} waits for the broker.
 * The job keeps the newest epoch it has seen, so a replayed or reordered record is harmless.
 * With a signer ({@link #signedBy}), each plan is published in a signed envelope
 * ({@link io.flinkgpu.contract.control.PlanEnvelope}) instead of bare.
 */
public final class KafkaPlanRealizer implements PlanRealizer {
    static final byte[] KEY = "plan".getBytes(StandardCharsets.UTF_8);

    private final KafkaProducer<byte[], byte[]> producer;
    private final String topic;
    private final Duration timeout;
    private volatile PlanSigner signer;

    public KafkaPlanRealizer(String bootstrapServers, String topic, Duration timeout) {
        Properties p = new Properties();
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.setProperty(ProducerConfig.CLIENT_ID_CONFIG, "scheduler-coordinator");
        p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeout.toMillis()));
        p.setProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout.toMillis(), 1000)));
        p.setProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout.toMillis() / 2, 500)));
        p.setProperty(ProducerConfig.LINGER_MS_CONFIG, "0");
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        this.topic = topic;
        this.timeout = timeout;
    }

    /** Signs every plan published from now on with {@code planSigner} (null: bare plans); returns this. */
    public KafkaPlanRealizer signedBy(PlanSigner planSigner) {
        this.signer = planSigner;
        return this;
    }

    @Override
    public void publish(ControlMessage plan) throws Exception {
        PlanSigner s = signer;
        byte[] value = s == null ? ControlMessageCodec.encode(plan) : s.sign(plan);
        producer.send(new ProducerRecord<>(topic, KEY, value))
                .get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    @Override
    public void close() {
        producer.close(Duration.ofSeconds(5));
    }
}
