package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.Target;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.WireCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The real path from the client's side: requests are produced to the requests topic (key = id),
 * answers are consumed from the responses topic, and an answer's receive time is the instant the
 * consumer's poll returned it. Request ids are {@code r<run>-<seq>}, so answers to an earlier run
 * (a drained overload, a duplicate) are told apart and ignored.
 *
 * <p>With {@code echo} set, the "responses" topic is the requests topic itself and payloads are
 * not decoded: a round trip through the broker alone, the Kafka floor of the path.
 */
public final class KafkaTarget implements Target, AutoCloseable {
    private final KafkaProducer<byte[], byte[]> producer;
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final String requestsTopic;
    private final Scenario scenario;
    private final WireCodec codec;
    private final boolean echo;
    private final Thread poller;
    private volatile boolean running = true;
    private volatile int run = Integer.MIN_VALUE;
    private volatile Completions completions;
    private volatile String prefix = "";
    private byte[] echoPayload;

    public KafkaTarget(String bootstrap, String requestsTopic, String responsesTopic, Scenario scenario,
            WireCodec codec, boolean echo) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "0"); // Kafka 4's default is 5 ms; under load records still batch while a send is in flight
        p.setProperty("acks", "1");
        p.setProperty("enable.idempotence", "false");
        p.setProperty("max.request.size", String.valueOf(8 * 1024 * 1024));
        this.producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        Properties c = new Properties();
        c.setProperty("bootstrap.servers", bootstrap);
        c.setProperty("enable.auto.commit", "false");
        c.setProperty("fetch.max.wait.ms", "100");
        c.setProperty("max.poll.records", "2000");
        this.consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : consumer.partitionsFor(responsesTopic)) {
            partitions.add(new TopicPartition(responsesTopic, info.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToEnd(partitions);
        for (TopicPartition tp : partitions) {
            consumer.position(tp); // resolve the end offsets now, before any request is sent
        }
        this.requestsTopic = requestsTopic;
        this.scenario = scenario;
        this.codec = codec;
        this.echo = echo;
        if (echo) {
            echoPayload = codec.encodeRequest(scenario.request("echo", 0));
        }
        this.poller = new Thread(this::poll, "bench-responses");
        poller.setDaemon(true);
        poller.start();
    }

    @Override
    public void begin(int runId, Completions c) {
        this.completions = c;
        this.prefix = "r" + runId + "-";
        this.run = runId;
    }

    @Override
    public void send(int seq) {
        String id = prefix + seq;
        byte[] payload = echo ? echoPayload : codec.encodeRequest(scenario.request(id, seq));
        producer.send(new ProducerRecord<>(requestsTopic, id.getBytes(StandardCharsets.UTF_8), payload));
    }

    private void poll() {
        while (running) {
            var records = consumer.poll(Duration.ofMillis(50));
            long now = System.nanoTime();
            int current = run;
            Completions c = completions;
            for (ConsumerRecord<byte[], byte[]> record : records) {
                int seq = seqOf(record.key(), current);
                if (seq < 0 || c == null) {
                    continue;
                }
                if (echo) {
                    c.complete(seq, now, false, 0, Double.NaN, Double.NaN);
                    continue;
                }
                try {
                    InferenceResponse r = codec.decodeResponse(record.value());
                    c.complete(seq, now, r.isError(), r.timings().batchSize(), r.timings().queueMs(),
                            r.timings().inferenceMs());
                } catch (ProtocolException e) {
                    c.complete(seq, now, true, 0, Double.NaN, Double.NaN);
                }
            }
        }
    }

    /** The sequence number in key {@code r<run>-<seq>}, or -1 for another run's key. */
    static int seqOf(byte[] key, int run) {
        if (key == null || key.length < 3 || key[0] != 'r') {
            return -1;
        }
        int i = 1;
        boolean negative = false;
        if (key[i] == '-') {
            negative = true;
            i++;
        }
        long r = 0;
        while (i < key.length && key[i] != '-') {
            r = r * 10 + (key[i++] - '0');
        }
        if ((negative ? -r : r) != run || i >= key.length) {
            return -1;
        }
        int seq = 0;
        for (i++; i < key.length; i++) {
            seq = seq * 10 + (key[i] - '0');
        }
        return seq;
    }

    /** Sends single requests until one is answered (the job is up and the model loaded). */
    public boolean awaitReady(int probeRun, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int seq = 0;
        while (System.nanoTime() < deadline) {
            CountDownLatch answered = new CountDownLatch(1);
            begin(probeRun, (s, t, e, b, q, i) -> answered.countDown());
            send(seq++);
            if (answered.await(2, TimeUnit.SECONDS)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        poller.join(2000);
        producer.close(Duration.ofSeconds(2));
        consumer.close(Duration.ofSeconds(2));
    }
}
