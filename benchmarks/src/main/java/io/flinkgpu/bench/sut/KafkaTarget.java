package io.flinkgpu.bench.sut;

import io.flinkgpu.bench.load.Target;
import io.flinkgpu.bench.scenario.Scenario;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.WireCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The real path from the client's side: requests are produced to the requests topic (key = id),
 * answers are consumed from the responses topic, and an answer's receive time is the instant the
 * consumer's poll returned it. Request ids are {@code r<run>-<seq>}, so answers to an earlier run
 * (a drained overload, a duplicate) are told apart and ignored.
 *
 * <p>A target built on its own reads its own responses topic. Several streams of requests (other
 * models, priorities or tenants) share one consumer through {@link KafkaTraffic}, each its own
 * producer and run ids.
 *
 * <p>With {@code echo} set, the "responses" topic is the requests topic itself and payloads are
 * not decoded: a round trip through the broker alone, the Kafka floor of the path.
 */
public final class KafkaTarget implements Target, AutoCloseable {
    /** What request {@code seq} of a run is; {@code id} is the id its answer will carry. */
    @FunctionalInterface
    public interface Requests {
        InferenceRequest request(String id, int seq);
    }

    private final KafkaProducer<byte[], byte[]> producer;
    private final String requestsTopic;
    private final KafkaResponses responses;
    private final boolean ownsResponses;
    private final Requests requests;
    private final RecordCodec codec;
    private final byte[] echoPayload;
    private final io.flinkgpu.bench.load.RequestClasses classes;
    private volatile int run = Integer.MIN_VALUE;
    private volatile String prefix = "";

    public KafkaTarget(String bootstrap, String requestsTopic, String responsesTopic, Scenario scenario,
            WireCodec codec, boolean echo) {
        this(bootstrap, requestsTopic, responsesTopic, scenario, RecordCodec.of(codec), echo);
    }

    /** As above, with requests and answers in {@code codec}'s records (the SQL tables' rows, say). */
    public KafkaTarget(String bootstrap, String requestsTopic, String responsesTopic, Scenario scenario,
            RecordCodec codec, boolean echo) {
        this(fastProducer(bootstrap), requestsTopic,
                new KafkaResponses(bootstrap, responsesTopic, codec::answer, echo), true, scenario::request,
                codec, echo ? codec.requestValue(scenario.request("echo", 0)) : null,
                echo ? io.flinkgpu.bench.load.RequestClasses.NONE : scenario.requestClasses());
    }

    /** A stream on {@code responses}, which it does not close; it closes {@code producer}. */
    KafkaTarget(KafkaProducer<byte[], byte[]> producer, String requestsTopic, KafkaResponses responses,
            Requests requests, RecordCodec codec) {
        this(producer, requestsTopic, responses, false, requests, codec, null, io.flinkgpu.bench.load.RequestClasses.NONE);
    }

    private KafkaTarget(KafkaProducer<byte[], byte[]> producer, String requestsTopic, KafkaResponses responses,
            boolean ownsResponses, Requests requests, RecordCodec codec, byte[] echoPayload,
            io.flinkgpu.bench.load.RequestClasses classes) {
        this.classes = classes;
        this.producer = producer;
        this.requestsTopic = requestsTopic;
        this.responses = responses;
        this.ownsResponses = ownsResponses;
        this.requests = requests;
        this.codec = codec;
        this.echoPayload = echoPayload;
    }

    /** A producer that sends at once and waits for the leader only. */
    private static KafkaProducer<byte[], byte[]> fastProducer(String bootstrap) {
        Properties p = new Properties();
        p.setProperty("bootstrap.servers", bootstrap);
        p.setProperty("linger.ms", "0"); // Kafka 4's default is 5 ms; under load records still batch while a send is in flight
        p.setProperty("acks", "1");
        p.setProperty("enable.idempotence", "false");
        p.setProperty("max.request.size", String.valueOf(8 * 1024 * 1024));
        p.setProperty("client.id", KafkaClients.loadClientId());
        return new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
    }

    @Override
    public void begin(int runId, Completions c) {
        responses.unregister(run);
        responses.register(runId, c);
        this.prefix = "r" + runId + "-";
        this.run = runId;
    }

    @Override
    public void send(int seq) {
        String id = prefix + seq;
        byte[] payload = echoPayload != null ? echoPayload : codec.requestValue(requests.request(id, seq));
        producer.send(new ProducerRecord<>(requestsTopic, id.getBytes(StandardCharsets.UTF_8), payload));
    }

    @Override
    public io.flinkgpu.bench.load.RequestClasses requestClasses() {
        return classes;
    }

    /** Sends single requests until one is answered (the job is up and the model loaded). */
    public boolean awaitReady(int probeRun, Duration timeout) throws InterruptedException {
        return awaitAnswers(probeRun, 1, false, Duration.ofSeconds(2), timeout);
    }

    /**
     * Sends one request at a time, the next as soon as one is answered or {@code patience} has
     * passed, until {@code answers} have been answered ({@code withoutError}: without error) or
     * {@code timeout} has passed: the job is up and the model loaded and warm. Returns whether they
     * were.
     */
    public boolean awaitAnswers(int probeRun, int answers, boolean withoutError, Duration patience, Duration timeout)
            throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        Semaphore answered = new Semaphore(0);
        AtomicInteger counted = new AtomicInteger();
        begin(probeRun, (s, t, error, b, q, i) -> {
            if (!(error && withoutError)) {
                counted.incrementAndGet();
            }
            answered.release();
        });
        for (int seq = 0; counted.get() < answers; seq++) {
            if (System.nanoTime() >= deadline) {
                return false;
            }
            send(seq);
            answered.tryAcquire(patience.toNanos(), TimeUnit.NANOSECONDS);
        }
        return true;
    }

    @Override
    public void close() throws InterruptedException {
        responses.unregister(run);
        if (ownsResponses) {
            responses.close();
        }
        producer.close(Duration.ofSeconds(2));
    }
}
