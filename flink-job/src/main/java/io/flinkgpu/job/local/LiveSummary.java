package io.flinkgpu.job.local;

import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.WireFormat;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads the responses and dead-letter topics and prints one line per interval: throughput,
 * mean batch size, end-to-end latency percentiles (send to response received), errors by code,
 * dead letters and the accuracy on the labelled images. With traffic to more than one model an
 * indented line follows with each model's share of the interval's requests and its accuracy, and
 * with a coordinator the lines of the control plane ({@link ControlPlaneView}).
 */
final class LiveSummary implements Runnable, AutoCloseable {
    private final KafkaConsumer<byte[], byte[]> consumer;
    private final String responsesTopic;
    private final TrafficGenerator traffic;
    private final Duration interval;
    private final PrintStream out;
    private final long startNanos = System.nanoTime();
    private volatile boolean running = true;

    private final Histogram latency = new Histogram(60_000_000L, 3); // microseconds
    private long answered;
    private long answeredInInterval;
    private long batchSizeSum;
    private long correct;
    private long labelled;
    private long deadLetters;
    private final Map<String, Long> errors = new TreeMap<>();
    private final long[] correctPerModel = new long[TrafficGenerator.MODELS.size()];
    private final long[] labelledPerModel = new long[TrafficGenerator.MODELS.size()];
    private final long[] sentAtLastPrint = new long[TrafficGenerator.MODELS.size()];
    /** Extra indented lines under each summary line (the control plane), or null. */
    private final Supplier<List<String>> extraLines;

    LiveSummary(String bootstrapServers, String responsesTopic, String deadLetterTopic, TrafficGenerator traffic,
            Duration interval, PrintStream out) {
        this(bootstrapServers, responsesTopic, deadLetterTopic, traffic, interval, out, null);
    }

    LiveSummary(String bootstrapServers, String responsesTopic, String deadLetterTopic, TrafficGenerator traffic,
            Duration interval, PrintStream out, Supplier<List<String>> extraLines) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrapServers);
        p.setProperty("group.id", "live-summary");
        p.setProperty("auto.offset.reset", "earliest");
        this.consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.consumer.subscribe(List.of(responsesTopic, deadLetterTopic));
        this.responsesTopic = responsesTopic;
        this.traffic = traffic;
        this.interval = interval;
        this.out = out;
        this.extraLines = extraLines;
    }

    @Override
    public void run() {
        long nextPrint = System.nanoTime() + interval.toNanos();
        while (running) {
            for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                if (record.topic().equals(responsesTopic)) {
                    onResponse(record.value());
                } else {
                    deadLetters++;
                }
            }
            if (System.nanoTime() >= nextPrint) {
                print();
                nextPrint += interval.toNanos();
            }
        }
    }

    private void onResponse(byte[] payload) {
        InferenceResponse r;
        try {
            r = WireFormat.AUTO.decodeResponse(payload);
        } catch (ProtocolException e) {
            errors.merge("UNREADABLE_RESPONSE", 1L, Long::sum);
            return;
        }
        answered++;
        answeredInInterval++;
        long[] sent = traffic.outstanding.remove(r.id());
        if (sent != null) {
            latency.recordValue(Math.min((System.nanoTime() - sent[0]) / 1000, latency.getHighestTrackableValue()));
        }
        if (r.isError()) {
            errors.merge(r.error().code().name(), 1L, Long::sum);
            return;
        }
        batchSizeSum += r.timings().batchSize();
        if (sent != null && r.output("logits") != null) {
            float[] logits = r.output("logits").asFloats();
            int best = 0;
            for (int i = 1; i < logits.length; i++) {
                if (logits[i] > logits[best]) {
                    best = i;
                }
            }
            labelled++;
            int model = sent.length > 2 ? (int) sent[2] : 0;
            labelledPerModel[model]++;
            if (best == sent[1]) {
                correct++;
                correctPerModel[model]++;
            }
        }
    }

    private void print() {
        double elapsed = (System.nanoTime() - startNanos) / 1e9;
        long successes = answered - errors.values().stream().mapToLong(Long::longValue).sum();
        out.printf("[%5.0fs] sent %d | answered %d (%.0f/s) | mean batch %.1f | e2e p50 %.1f ms p99 %.1f ms | "
                        + "errors %s | dead letters %d | accuracy %s%n",
                elapsed, traffic.sent(), answered, answeredInInterval / (interval.toMillis() / 1000.0),
                successes == 0 ? 0.0 : (double) batchSizeSum / successes,
                latency.getValueAtPercentile(50) / 1000.0, latency.getValueAtPercentile(99) / 1000.0,
                errors.isEmpty() ? "0" : errors.toString(), deadLetters,
                labelled == 0 ? "-" : String.format("%.1f%%", 100.0 * correct / labelled));
        answeredInInterval = 0;
        latency.reset();
        List<String> models = traffic.mix().models();
        if (models.size() > 1) {
            long[] sentNow = new long[models.size()];
            long total = 0;
            for (int i = 0; i < models.size(); i++) {
                sentNow[i] = traffic.sent(i) - sentAtLastPrint[i];
                sentAtLastPrint[i] += sentNow[i];
                total += sentNow[i];
            }
            StringBuilder line = new StringBuilder(INDENT).append(String.format("%-10s", "traffic"));
            for (int i = 0; i < models.size(); i++) {
                line.append(i == 0 ? "" : " | ").append(models.get(i)).append(' ')
                        .append(total == 0 ? "-" : String.format("%.0f%%", 100.0 * sentNow[i] / total))
                        .append(" (accuracy ").append(labelledPerModel[i] == 0 ? "-"
                                : String.format("%.1f%%", 100.0 * correctPerModel[i] / labelledPerModel[i]))
                        .append(')');
            }
            out.println(line);
        }
        if (extraLines != null) {
            try {
                for (String l : extraLines.get()) {
                    out.println(INDENT + l);
                }
            } catch (RuntimeException e) {
                out.println(INDENT + "control plane unavailable: " + e);
            }
        }
    }

    /** Indents the extra lines under the summary line's text, past its "[   20s] " prefix. */
    static final String INDENT = "         ";

    long answered() {
        return answered;
    }

    @Override
    public void close() {
        running = false;
    }

    void closeConsumer() {
        consumer.close();
    }
}
