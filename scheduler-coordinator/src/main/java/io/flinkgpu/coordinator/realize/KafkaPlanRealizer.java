package io.flinkgpu.coordinator.realize;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.PlanSigner;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
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

    /**
     * Keys refused in the pass-through client properties, with the reason: the realizer sets them
     * itself and plans depend on its values.
     */
    static final Map<String, String> REFUSED_PROPERTIES = Map.of(
            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "set coordinator.kafka.bootstrap-servers instead",
            ProducerConfig.ACKS_CONFIG, "plans are acknowledged by all in-sync replicas",
            ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "plans are written idempotently",
            ProducerConfig.TRANSACTIONAL_ID_CONFIG, "plans are not written in transactions",
            ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, "plans are written as raw bytes",
            ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, "plans are written as raw bytes");

    public KafkaPlanRealizer(String bootstrapServers, String topic, Duration timeout) {
        this(bootstrapServers, topic, timeout, Map.of());
    }

    /**
     * As {@link #KafkaPlanRealizer(String, String, Duration)}, with {@code clientProperties} (e.g.
     * {@code security.protocol}, {@code sasl.jaas.config}; {@code coordinator.kafka.properties.*})
     * passed to the producer. They override its tuning defaults (client id, linger, timeouts);
     * {@link #REFUSED_PROPERTIES} are refused with an {@link IllegalArgumentException} that names
     * the keys, never a value.
     */
    public KafkaPlanRealizer(String bootstrapServers, String topic, Duration timeout,
            Map<String, String> clientProperties) {
        List<String> refused = new ArrayList<>();
        for (String key : new TreeMap<>(clientProperties).keySet()) {
            if (REFUSED_PROPERTIES.containsKey(key)) {
                refused.add("coordinator.kafka.properties." + key + " (" + REFUSED_PROPERTIES.get(key) + ")");
            }
        }
        if (!refused.isEmpty()) {
            throw new IllegalArgumentException("not allowed under coordinator.kafka.properties.*: "
                    + String.join("; ", refused));
        }
        Properties p = new Properties();
        p.setProperty(ProducerConfig.CLIENT_ID_CONFIG, "scheduler-coordinator");
        p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, String.valueOf(timeout.toMillis()));
        p.setProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout.toMillis(), 1000)));
        p.setProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.max(timeout.toMillis() / 2, 500)));
        p.setProperty(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.putAll(clientProperties);
        p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
        p.setProperty(ProducerConfig.ACKS_CONFIG, "all");
        p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
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
