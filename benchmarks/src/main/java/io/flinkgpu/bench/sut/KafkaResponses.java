package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.Target.Completions;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a responses topic on one thread, from its end at construction, and hands each answer to
 * the run its key names: request ids, which the job copies onto its response keys, are
 * {@code r<run>-<seq>}, so several streams of requests, each with run ids of its own, share one
 * topic and one consumer, and answers to a run nobody waits for any more (a drained overload, a
 * duplicate) are ignored. An answer's receive time is the instant the consumer's poll returned it.
 *
 * <p>With {@code echo} set, payloads are not decoded: the "responses" are the requests themselves.
 */
final class KafkaResponses implements AutoCloseable {
    /** Decodes an answer record (its value, and for the SQL rows its key and headers). */
    @FunctionalInterface
    interface Decoder {
        InferenceResponse decode(ConsumerRecord<byte[], byte[]> record) throws ProtocolException;
    }

    private final KafkaConsumer<byte[], byte[]> consumer;
    private final Decoder decoder;
    private final boolean echo;
    private final Map<Integer, Completions> runs = new ConcurrentHashMap<>();
    private final Thread poller;
    private volatile boolean running = true;

    KafkaResponses(String bootstrap, String topic, Decoder decoder, boolean echo) {
        Properties c = new Properties();
        c.setProperty("bootstrap.servers", bootstrap);
        c.setProperty("enable.auto.commit", "false");
        c.setProperty("fetch.max.wait.ms", "100");
        c.setProperty("max.poll.records", "2000");
        this.consumer = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        List<TopicPartition> partitions = new ArrayList<>();
        for (PartitionInfo info : partitionsOf(consumer, topic)) {
            partitions.add(new TopicPartition(topic, info.partition()));
        }
        consumer.assign(partitions);
        consumer.seekToEnd(partitions);
        for (TopicPartition tp : partitions) {
            consumer.position(tp); // resolve the end offsets now, before any request is sent
        }
        this.decoder = decoder;
        this.echo = echo;
        this.poller = new Thread(this::poll, io.flinkgpu.bench.load.ThreadCpu.RESPONSES_THREAD);
        poller.setDaemon(true);
        poller.start();
    }

    /**
     * The partitions of {@code topic}, waiting up to 30 s for a topic created a moment ago to show in
     * the client's metadata: right after other topics were deleted, the first answer can be empty,
     * and a consumer assigned no partitions measured nothing (a run's Kafka floor read 0 answers).
     */
    private static List<PartitionInfo> partitionsOf(KafkaConsumer<byte[], byte[]> consumer, String topic) {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        List<PartitionInfo> infos = consumer.partitionsFor(topic);
        while ((infos == null || infos.isEmpty()) && System.nanoTime() < deadline) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            infos = consumer.partitionsFor(topic);
        }
        if (infos == null || infos.isEmpty()) {
            consumer.close();
            throw new IllegalStateException("topic " + topic + " shows no partitions to read answers from");
        }
        return infos;
    }

    /** From now on, answers of {@code run} go to {@code completions}. */
    void register(int run, Completions completions) {
        runs.put(run, completions);
    }

    /** Answers of {@code run} are ignored from now on. */
    void unregister(int run) {
        runs.remove(run);
    }

    private void poll() {
        while (running) {
            var records = consumer.poll(Duration.ofMillis(50));
            long now = System.nanoTime();
            for (ConsumerRecord<byte[], byte[]> record : records) {
                long key = parse(record.key());
                Completions c = key == NOT_A_REQUEST_KEY ? null : runs.get(run(key));
                int seq = seq(key);
                if (c == null || seq < 0) {
                    continue;
                }
                if (echo) {
                    c.complete(seq, now, false, 0, Double.NaN, Double.NaN);
                    continue;
                }
                try {
                    InferenceResponse r = decoder.decode(record);
                    c.version(seq, r.modelVersion());
                    c.complete(seq, now, r.isError() ? r.error().code().name() : null, r.timings().batchSize(),
                            r.timings().queueMs(), r.timings().inferenceMs());
                } catch (ProtocolException e) {
                    c.complete(seq, now, true, 0, Double.NaN, Double.NaN);
                }
            }
        }
    }

    /** {@link #parse} of a key of another form. */
    static final long NOT_A_REQUEST_KEY = Long.MIN_VALUE;

    /**
     * Run and sequence number of key {@code r<run>-<seq>}, as {@code run << 32 | seq} (read them with
     * {@link #run} and {@link #seq}), or {@link #NOT_A_REQUEST_KEY}.
     */
    static long parse(byte[] key) {
        if (key == null || key.length < 3 || key[0] != 'r') {
            return NOT_A_REQUEST_KEY;
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
        if (i >= key.length) {
            return NOT_A_REQUEST_KEY;
        }
        long seq = 0;
        for (i++; i < key.length; i++) {
            seq = seq * 10 + (key[i] - '0');
        }
        return (negative ? -r : r) << 32 | (seq & 0xffff_ffffL);
    }

    static int run(long parsed) {
        return (int) (parsed >> 32);
    }

    static int seq(long parsed) {
        return (int) parsed;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        poller.join(2000);
        consumer.close(Duration.ofSeconds(2));
    }
}
