package io.flinkgpu.job.local;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Produces a steady stream of real requests (Fashion-MNIST test images) at a fixed rate, with a
 * small share of deliberately invalid records so that the dead-letter path is exercised too.
 * Remembers each request's send time and label for the live summary.
 */
final class TrafficGenerator implements Runnable, AutoCloseable {
    static final String MODEL = "fashion-mnist-cnn";
    private static final long[] SHAPE = {1, 1, 28, 28};

    private final KafkaProducer<byte[], byte[]> producer;
    private final String topic;
    private final FashionMnist data;
    private final double ratePerSecond;
    private final double invalidFraction;
    private final Random random = new Random(42);
    private final JsonCodec codec = new JsonCodec();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong sentInvalid = new AtomicLong();
    /** Request id -> [send time nanos, label]; removed when answered. */
    final Map<String, long[]> outstanding = new ConcurrentHashMap<>();
    private volatile boolean running = true;
    private final java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);

    TrafficGenerator(String bootstrapServers, String topic, FashionMnist data, double ratePerSecond,
            double invalidFraction) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrapServers);
        p.setProperty("linger.ms", "1");
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        this.topic = topic;
        this.data = data;
        this.ratePerSecond = ratePerSecond;
        this.invalidFraction = invalidFraction;
    }

    long sent() {
        return sent.get();
    }

    long sentInvalid() {
        return sentInvalid.get();
    }

    @Override
    public void run() {
        try {
            produce();
        } finally {
            stopped.countDown();
        }
    }

    private void produce() {
        long intervalNanos = (long) (1e9 / ratePerSecond);
        long next = System.nanoTime();
        long n = 0;
        while (running) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
                try {
                    TimeUnit.NANOSECONDS.sleep(wait);
                } catch (InterruptedException e) {
                    return;
                }
            }
            String id = "req-" + n;
            byte[] payload;
            if (random.nextDouble() < invalidFraction) {
                payload = invalid(id, n);
                sentInvalid.incrementAndGet();
            } else {
                int sample = (int) (n % data.size());
                InferenceRequest request = new InferenceRequest(id, MODEL, null,
                        List.of(Tensor.ofFloats("input", SHAPE, data.image(sample))),
                        new RequestParameters(0, 0, "demo"));
                payload = codec.encodeRequest(request);
                outstanding.put(id, new long[] {System.nanoTime(), data.label(sample)});
            }
            producer.send(new ProducerRecord<>(topic, id.getBytes(StandardCharsets.UTF_8), payload));
            sent.incrementAndGet();
            n++;
            next += intervalNanos;
        }
    }

    private static byte[] invalid(String id, long n) {
        String json;
        switch ((int) (n % 3)) {
            case 0:
                json = "{\"id\": \"" + id + "\", \"model_name\": \"" + MODEL + "\", \"inputs\": [";
                break;
            case 1:
                json = "{\"id\": \"" + id + "\", \"model_name\": \"no-such-model\", \"inputs\": [{\"name\": \"input\", "
                        + "\"datatype\": \"FP32\", \"shape\": [1], \"data\": [0.5]}]}";
                break;
            default:
                json = "{\"id\": \"" + id + "\", \"model_name\": \"" + MODEL + "\", \"inputs\": [{\"name\": \"input\", "
                        + "\"datatype\": \"FP32\", \"shape\": [1, 1, 28, 27], \"data\": [0.5]}]}";
        }
        return json.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        running = false;
        try {
            stopped.await(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close();
    }
}
