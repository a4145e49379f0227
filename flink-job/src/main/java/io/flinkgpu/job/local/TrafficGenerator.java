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
 * Produces a stream of real requests (Fashion-MNIST test images) at a fixed rate, with a small
 * share of deliberately invalid records so that the dead-letter path is exercised too. The
 * {@link Mix} decides which model each request asks for: only the CNN ({@code steady}), or a mix
 * of the CNN and the MLP that shifts over time ({@code shifting}). Remembers each request's send
 * time, label and model for the live summary.
 */
final class TrafficGenerator implements Runnable, AutoCloseable {
    static final String MODEL = "fashion-mnist-cnn";
    /** The second shipped model, same input and output as {@link #MODEL}. */
    static final String SECOND_MODEL = "fashion-mnist-mlp";
    /** The models requests go to, by index (the third element of an {@link #outstanding} entry). */
    static final List<String> MODELS = List.of(MODEL, SECOND_MODEL);
    /** In a shifting mix, the hot model's share of the requests. */
    static final double HOT_SHARE = 0.9;
    private static final long[] SHAPE = {1, 1, 28, 28};

    /** Which model a request goes to, over time. */
    enum Mix {
        /** Every request to {@link #MODEL}. */
        STEADY,
        /**
         * Half a period {@link #HOT_SHARE} of the requests to {@link #MODEL} (the rest to
         * {@link #SECOND_MODEL}), the other half the other way round, and so on.
         */
        SHIFTING;

        /** The share of requests for {@link #SECOND_MODEL} {@code elapsedSeconds} after the start. */
        double secondShare(double elapsedSeconds, double periodSeconds) {
            if (this == STEADY) {
                return 0;
            }
            double phase = (elapsedSeconds % periodSeconds) / periodSeconds;
            return phase < 0.5 ? 1 - HOT_SHARE : HOT_SHARE;
        }

        /** The models this mix sends requests to. */
        List<String> models() {
            return this == STEADY ? List.of(MODEL) : MODELS;
        }

        /** {@code steady} or {@code shifting}, in any case. */
        static final class Converter implements picocli.CommandLine.ITypeConverter<Mix> {
            @Override
            public Mix convert(String value) {
                for (Mix m : values()) {
                    if (m.name().equalsIgnoreCase(value.trim())) {
                        return m;
                    }
                }
                throw new picocli.CommandLine.TypeConversionException("'" + value + "' is not steady or shifting");
            }
        }
    }

    private final KafkaProducer<byte[], byte[]> producer;
    private final String topic;
    private final FashionMnist data;
    private final double ratePerSecond;
    private final double invalidFraction;
    private final Mix mix;
    private final double periodSeconds;
    private final Random random = new Random(42);
    private final JsonCodec codec = new JsonCodec();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong sentInvalid = new AtomicLong();
    /** Valid requests sent per model (index into {@link #MODELS}). */
    private final AtomicLong[] sentPerModel = {new AtomicLong(), new AtomicLong()};
    /** Request id -> [send time nanos, label, model index]; removed when answered. */
    final Map<String, long[]> outstanding = new ConcurrentHashMap<>();
    private volatile boolean running = true;
    private final java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);

    TrafficGenerator(String bootstrapServers, String topic, FashionMnist data, double ratePerSecond,
            double invalidFraction) {
        this(bootstrapServers, topic, data, ratePerSecond, invalidFraction, Mix.STEADY, 40);
    }

    /** With {@code mix} deciding each request's model; a shifting mix flips every half {@code periodSeconds}. */
    TrafficGenerator(String bootstrapServers, String topic, FashionMnist data, double ratePerSecond,
            double invalidFraction, Mix mix, double periodSeconds) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrapServers);
        p.setProperty("linger.ms", "1");
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        this.topic = topic;
        this.data = data;
        this.ratePerSecond = ratePerSecond;
        this.invalidFraction = invalidFraction;
        this.mix = mix;
        this.periodSeconds = periodSeconds;
    }

    Mix mix() {
        return mix;
    }

    /** Valid requests sent so far for {@code MODELS.get(model)}. */
    long sent(int model) {
        return sentPerModel[model].get();
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
        long start = System.nanoTime();
        long next = start;
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
                double share = mix.secondShare((System.nanoTime() - start) / 1e9, periodSeconds);
                int model = share > 0 && random.nextDouble() < share ? 1 : 0;
                InferenceRequest request = new InferenceRequest(id, MODELS.get(model), null,
                        List.of(Tensor.ofFloats("input", SHAPE, data.image(sample))),
                        new RequestParameters(0, 0, "demo"));
                payload = codec.encodeRequest(request);
                outstanding.put(id, new long[] {System.nanoTime(), data.label(sample), model});
                sentPerModel[model].incrementAndGet();
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
