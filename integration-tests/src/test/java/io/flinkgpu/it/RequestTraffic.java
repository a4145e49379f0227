package io.flinkgpu.it;

import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Steady request traffic into a running job and a reader of its responses: sends real
 * Fashion-MNIST images (binary encoding) at a fixed rate with ids {@code <prefix>-<n>}, remembers
 * which were accepted by Kafka (acknowledged) and when they were sent, and reads the responses
 * topic (read_committed) recording every response per id and when it arrived.
 */
final class RequestTraffic implements AutoCloseable {
    static final String MODEL = "fashion-mnist-cnn";

    private final String bootstrap;
    private final String requestsTopic;
    private final String prefix;
    private final double rate;
    private final FashionMnist images;
    private final AtomicBoolean sending = new AtomicBoolean(true);
    private final AtomicBoolean reading = new AtomicBoolean(true);
    private final AtomicLong sent = new AtomicLong();
    /** id -> send time (ms since epoch), for every request Kafka acknowledged. */
    final Map<String, Long> accepted = new ConcurrentHashMap<>();
    /** id -> arrival times (ms) of its responses. */
    final Map<String, List<Long>> answered = new ConcurrentHashMap<>();
    /** arrival times (ms) of all responses, in order. */
    final List<Long> arrivals = Collections.synchronizedList(new ArrayList<>());
    final Set<String> errors = ConcurrentHashMap.newKeySet();
    private final Thread producerThread;
    private final Thread consumerThread;
    private volatile Throwable failure;

    RequestTraffic(String bootstrap, String requestsTopic, String responsesTopic, String prefix, double rate,
            FashionMnist images) {
        this.bootstrap = bootstrap;
        this.requestsTopic = requestsTopic;
        this.prefix = prefix;
        this.rate = rate;
        this.images = images;
        consumerThread = new Thread(() -> read(responsesTopic), prefix + "-responses");
        producerThread = new Thread(this::send, prefix + "-requests");
        consumerThread.start();
        producerThread.start();
    }

    private void send() {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "2");
        p.setProperty("acks", "all");
        BinaryCodec codec = new BinaryCodec();
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            long start = System.nanoTime();
            long n = 0;
            while (sending.get()) {
                long due = start + (long) (n * 1e9 / rate);
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                }
                String id = prefix + "-" + n;
                InferenceRequest r = new InferenceRequest(id, MODEL, null,
                        List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image((int) (n % images.size())))),
                        new RequestParameters(0, 0, "it"));
                long sentAt = System.currentTimeMillis();
                producer.send(new ProducerRecord<>(requestsTopic, id.getBytes(StandardCharsets.UTF_8), codec.encodeRequest(r)),
                        (meta, e) -> {
                            if (e == null) {
                                accepted.put(id, sentAt);
                            }
                        });
                sent.incrementAndGet();
                n++;
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            failure = t;
        }
    }

    private void read(String topic) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("group.id", "it-traffic-" + UUID.randomUUID());
        p.setProperty("auto.offset.reset", "earliest");
        p.setProperty("isolation.level", "read_committed");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            while (reading.get()) {
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(100))) {
                    long now = System.currentTimeMillis();
                    InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
                    answered.computeIfAbsent(r.id(), k -> Collections.synchronizedList(new ArrayList<>())).add(now);
                    arrivals.add(now);
                    if (r.isError()) {
                        errors.add(r.id() + ": " + r.error());
                    }
                }
            }
        } catch (Throwable t) {
            failure = t;
        }
    }

    long sent() {
        return sent.get();
    }

    /** Stops sending (the reader goes on) and waits until the producer flushed. */
    void stopSending() throws InterruptedException {
        sending.set(false);
        producerThread.join(30_000);
    }

    /** Waits until every accepted request has at least one response; returns the ids still unanswered. */
    List<String> awaitAllAnswered(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<String> missing = missing();
        while (!missing.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(250);
            missing = missing();
        }
        return missing;
    }

    List<String> missing() {
        List<String> out = new ArrayList<>();
        for (String id : accepted.keySet()) {
            if (!answered.containsKey(id)) {
                out.add(id);
            }
        }
        Collections.sort(out);
        return out;
    }

    /** Ids answered more than once, and how many extra responses there were. */
    long duplicates() {
        return answered.values().stream().mapToLong(l -> Math.max(0, l.size() - 1)).sum();
    }

    long duplicateIds() {
        return answered.values().stream().filter(l -> l.size() > 1).count();
    }

    /** Arrival - send time of first responses, for requests sent in [fromMs, toMs). */
    long[] latenciesMs(long fromMs, long toMs) {
        List<Long> out = new ArrayList<>();
        accepted.forEach((id, sentAt) -> {
            List<Long> a = answered.get(id);
            if (sentAt >= fromMs && sentAt < toMs && a != null && !a.isEmpty()) {
                out.add(a.get(0) - sentAt);
            }
        });
        return out.stream().mapToLong(Long::longValue).sorted().toArray();
    }

    static long percentile(long[] sorted, double p) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    /** Longest gap (ms) between consecutive response arrivals after {@code fromMs}. */
    long longestGapAfter(long fromMs) {
        long last = fromMs;
        long gap = 0;
        synchronized (arrivals) {
            for (long t : arrivals) {
                if (t >= fromMs) {
                    gap = Math.max(gap, t - last);
                    last = t;
                }
            }
        }
        return gap;
    }

    void checkHealthy() {
        if (failure != null) {
            throw new AssertionError("traffic failed", failure);
        }
    }

    @Override
    public void close() {
        sending.set(false);
        reading.set(false);
        try {
            producerThread.join(30_000);
            consumerThread.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
