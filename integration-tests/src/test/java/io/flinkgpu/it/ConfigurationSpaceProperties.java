package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.DeadLetter;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * Fuzzing that varies the configuration together with the records: each try writes a model
 * repository of generated configs (fixed and variable dimensions, several inputs, BYTES / INT64 /
 * FP16 inputs, small and large {@code max_batch_size}, priority levels, default timeouts, queue
 * limits), picks operator settings (batch limits above and below the models', queue delay,
 * execution threads, parallelism, isolation, tenants with quotas, tensor limits), and sends
 * generated valid, borderline and invalid records through the real job on a MiniCluster and a real
 * Kafka broker. The job must never restart (Flink's exception history, read over its REST API,
 * stays empty) and every record must be answered or dead-lettered exactly once: the outage of a
 * record that met a batch limit it was not validated against is the kind of failure this finds.
 */
class ConfigurationSpaceProperties {
    private static final ObjectMapper MAPPER = new ObjectMapper();
    private static final Path TEST_MODELS =
            FashionMnist.findRoot().resolve("gpu-operator-udf/src/test/resources/models");
    private static final AtomicInteger TRY = new AtomicInteger();
    /** Codes a valid request may get: refusals for load, quota or deadline, never for itself. */
    private static final Set<ErrorCode> QOS_CODES = EnumSet.of(ErrorCode.QUOTA_EXCEEDED, ErrorCode.QUEUE_FULL,
            ErrorCode.TIMEOUT, ErrorCode.DEADLINE_INFEASIBLE, ErrorCode.FORBIDDEN_MODEL);

    private static EmbeddedKafka kafka;

    @BeforeContainer
    static void startKafka() throws Exception {
        kafka = EmbeddedKafka.start();
    }

    @AfterContainer
    static void stopKafka() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
    }

    /** A test model and the inputs it takes (shape without the batch dimension; -1: variable). */
    enum Base {
        AFFINE("affine-fp32"), FP16("echo-fp16"), BYTES("echo-bytes"), INT64("echo-int64"), SEQ("seq-sum"),
        TWO_INPUTS("two-inputs"), EMBEDDING("embedding-int64");

        final String model;

        Base(String model) {
            this.model = model;
        }
    }

    /** One model's generated config. */
    record ModelSetup(Base base, int maxBatchSize, int priorityLevels, long defaultTimeoutMs, boolean ownBatching,
            int lowestLevelQueue) {}

    /**
     * The operator's generated settings; {@code executionThreads} 0: unset (sized from the CPU), with
     * the core kept for the task lent to any batch while the threads are busy.
     */
    record OperatorSetup(int maxBatchSize, int queueDelayMs, int executionThreads, int parallelism,
            int isolatedCulprits, boolean tenantQuotas, long maxTensorElements) {}

    record Scenario(List<ModelSetup> models, OperatorSetup operator, long recordSeed) {}

    @Provide
    Arbitrary<Scenario> scenarios() {
        Arbitrary<ModelSetup> model = Combinators.combine(Arbitraries.of(Base.class), Arbitraries.of(1, 2, 8, 16, 64),
                Arbitraries.of(1, 2, 3), Arbitraries.of(0L, 20L, 5000L), Arbitraries.of(true, false),
                Arbitraries.of(0, 2, 50)).as(ModelSetup::new);
        Arbitrary<List<ModelSetup>> models = model.list().ofMinSize(2).ofMaxSize(4).uniqueElements(ModelSetup::base);
        Arbitrary<OperatorSetup> operator = Combinators.combine(Arbitraries.of(1, 4, 32, 128), Arbitraries.of(0, 5),
                Arbitraries.of(0, 1, 2), Arbitraries.of(1, 2), Arbitraries.of(0, 2), Arbitraries.of(true, false),
                Arbitraries.of(200L, 16L * 1024 * 1024)).as(OperatorSetup::new);
        return Combinators.combine(models, operator, Arbitraries.longs()).as(Scenario::new);
    }

    @Property(tries = 6, seed = "20261201", shrinking = ShrinkingMode.OFF)
    void noConfigurationLetsARecordStopTheJobAndEveryRecordIsAccountedFor(@ForAll("scenarios") Scenario scenario)
            throws Exception {
        String prefix = "cfg" + TRY.incrementAndGet();
        Path repo = Files.createTempDirectory("cfg-models");
        for (ModelSetup m : scenario.models()) {
            writeModel(repo, m);
        }
        OperatorSetup op = scenario.operator();
        Statistics.label("execution threads")
                .collect(op.executionThreads() == 0 ? "unset, core lent" : op.executionThreads());
        Configuration config = TestJobs.config(kafka, prefix, 2, repo);
        config.set(GpuInferenceOptions.MAX_BATCH_SIZE, op.maxBatchSize());
        config.set(GpuInferenceOptions.MAX_QUEUE_DELAY, Duration.ofMillis(op.queueDelayMs()));
        if (op.executionThreads() > 0) {
            config.set(GpuInferenceOptions.EXECUTION_THREADS, op.executionThreads());
        } else {
            config.set(GpuInferenceOptions.RESERVED_CORE_MIN_SAMPLE_TIME, Duration.ZERO);
        }
        config.set(GpuInferenceOptions.MAX_ISOLATED_CULPRITS, op.isolatedCulprits());
        config.set(GpuInferenceOptions.MAX_TENSOR_ELEMENTS, op.maxTensorElements());
        config.set(GpuInferenceOptions.MAX_REQUEST_SIZE, MemorySize.parse("512k"));
        config.set(InferenceJobOptions.PARALLELISM, op.parallelism());
        if (op.tenantQuotas()) {
            Path tenants = repo.resolve("tenants.json");
            Files.writeString(tenants, "{\"tenants\": [{\"name\": \"limited\", \"rate_limit\": 20, \"burst\": 5, "
                    + "\"max_in_flight\": 2}, {\"name\": \"blocked\", \"allowed_models\": [\"none\"]}]}");
            config.set(GpuInferenceOptions.TENANTS_FILE, tenants.toString());
        }
        int restPort;
        try (ServerSocket s = new ServerSocket(0)) {
            restPort = s.getLocalPort();
        }
        config.set(RestOptions.PORT, restPort);

        Records records = new Records(scenario, new Random(scenario.recordSeed()));
        List<ProducerRecord<byte[], byte[]>> produced = records.generate(prefix, 80);
        List<RecordMetadata> where = KafkaTopics.produceWithMetadata(kafka.bootstrapServers(),
                TestJobs.requests(prefix), produced);

        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(config);
        env.setParallelism(op.parallelism());
        InferenceJob.build(env, config);
        JobClient job = env.executeAsync(prefix);
        List<ConsumerRecord<byte[], byte[]>> responses;
        List<ConsumerRecord<byte[], byte[]>> letters;
        JsonNode failures;
        try {
            responses = KafkaTopics.read(kafka.bootstrapServers(), TestJobs.responses(prefix),
                    got -> got.size() >= records.answerable(), Duration.ofSeconds(90), Duration.ofSeconds(1));
            letters = KafkaTopics.read(kafka.bootstrapServers(), TestJobs.deadLetters(prefix),
                    got -> got.size() >= records.badCount(), Duration.ofSeconds(30), Duration.ofSeconds(1));
            failures = FlinkRest.onLocalhost(restPort).exceptionHistory(job.getJobID().toString());
        } finally {
            job.cancel().get();
        }

        String context = scenario.toString();
        assertThat(failures).as("restarts in %s", context).isEmpty();

        Map<String, List<InferenceResponse>> answers = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : responses) {
            InferenceResponse r = WireFormat.AUTO.decodeResponse(rec.value());
            answers.computeIfAbsent(r.id(), k -> new ArrayList<>()).add(r);
        }
        Map<String, Integer> lettersAt = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : letters) {
            DeadLetter d = DeadLetter.fromJson(rec.value());
            assertThat(d.reason()).isNotBlank();
            assertThat(d.code()).as("%s: %s", context, d.reason()).isNotEqualTo(ErrorCode.INTERNAL);
            lettersAt.merge(d.partition() + "@" + d.offset(), 1, Integer::sum);
        }
        for (int i = 0; i < produced.size(); i++) {
            Sent sent = records.sent.get(i);
            String at = where.get(i).partition() + "@" + where.get(i).offset();
            String what = sent.kind() + " record " + sent.id() + " in " + context;
            if (sent.answerable()) {
                assertThat(answers.get(sent.id())).as("answers to " + what).hasSize(1);
            }
            InferenceResponse answer = sent.answerable() ? answers.get(sent.id()).get(0) : null;
            if (sent.kind().bad) {
                assertThat(lettersAt.get(at)).as("dead letters of " + what).isEqualTo(1);
                if (answer != null) {
                    assertThat(answer.isError()).as(what).isTrue();
                }
            } else {
                assertThat(lettersAt.get(at)).as("dead letters of " + what).isNull();
                ErrorCode code = answer.isError() ? answer.error().code() : null;
                if (code != null && sent.kind() == Kind.VALID) {
                    boolean poisonShare = sent.model() == Base.EMBEDDING
                            && (op.isolatedCulprits() == 0 || records.poison > op.isolatedCulprits());
                    assertThat(QOS_CODES.contains(code) || poisonShare && code == ErrorCode.INFERENCE_FAILED)
                            .as(what + " got " + answer.error()).isTrue();
                }
                if (sent.kind() == Kind.POISON) {
                    assertThat(code).as(what).isIn(ErrorCode.INFERENCE_FAILED, ErrorCode.QUOTA_EXCEEDED,
                            ErrorCode.QUEUE_FULL, ErrorCode.TIMEOUT, ErrorCode.DEADLINE_INFEASIBLE,
                            ErrorCode.FORBIDDEN_MODEL);
                }
            }
        }
        assertThat(lettersAt.values().stream().mapToInt(Integer::intValue).sum()).as(context)
                .isEqualTo(records.badCount());
    }

    private static void writeModel(Path repo, ModelSetup m) throws Exception {
        Path dir = Files.createDirectories(repo.resolve(m.base().model).resolve("1"));
        Files.copy(TEST_MODELS.resolve(m.base().model).resolve("1").resolve("model.onnx"), dir.resolve("model.onnx"));
        ObjectNode config = (ObjectNode) MAPPER.readTree(TEST_MODELS.resolve(m.base().model).resolve("config.json")
                .toFile());
        config.put("max_batch_size", m.maxBatchSize());
        if (!m.ownBatching()) {
            config.remove("dynamic_batching");
        }
        ObjectNode scheduling = config.putObject("scheduling");
        scheduling.put("priority_levels", m.priorityLevels());
        scheduling.put("default_timeout_ms", m.defaultTimeoutMs());
        if (m.lowestLevelQueue() > 0) {
            scheduling.putObject("levels").putObject(String.valueOf(m.priorityLevels()))
                    .put("max_queue_size", m.lowestLevelQueue());
        }
        Files.writeString(repo.resolve(m.base().model).resolve("config.json"), config.toString());
    }

    /** What was sent; {@code bad} kinds must be dead-lettered. */
    enum Kind {
        VALID(false), POISON(false), OVER_EFFECTIVE_BATCH(true), BAD_PRIORITY(true), NEGATIVE_TIMEOUT(true),
        WRONG_DATATYPE(true), WRONG_RANK(true), NAN(true), UNKNOWN_MODEL(true), GARBAGE(true);

        final boolean bad;

        Kind(boolean bad) {
            this.bad = bad;
        }
    }

    record Sent(Kind kind, String id, Base model, boolean answerable) {}

    /** Generates the records of one try against its models and operator settings. */
    static final class Records {
        final Scenario scenario;
        final Random random;
        final List<Sent> sent = new ArrayList<>();
        final JsonCodec json = new JsonCodec();
        final BinaryCodec binary = new BinaryCodec();
        int poison;

        Records(Scenario scenario, Random random) {
            this.scenario = scenario;
            this.random = random;
        }

        int answerable() {
            return (int) sent.stream().filter(Sent::answerable).count();
        }

        int badCount() {
            return (int) sent.stream().filter(s -> s.kind().bad).count();
        }

        List<ProducerRecord<byte[], byte[]>> generate(String prefix, int n) {
            List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                out.add(next(prefix + "-r" + i));
            }
            return out;
        }

        private ProducerRecord<byte[], byte[]> next(String id) {
            ModelSetup m = scenario.models().get(random.nextInt(scenario.models().size()));
            int effective = Math.min(m.maxBatchSize(), scenario.operator().maxBatchSize());
            int roll = random.nextInt(100);
            Kind kind = roll < 55 ? Kind.VALID
                    : roll < 62 ? Kind.OVER_EFFECTIVE_BATCH
                    : roll < 67 ? Kind.BAD_PRIORITY
                    : roll < 72 ? Kind.NEGATIVE_TIMEOUT
                    : roll < 77 ? Kind.WRONG_DATATYPE
                    : roll < 82 ? Kind.WRONG_RANK
                    : roll < 86 ? Kind.UNKNOWN_MODEL
                    : roll < 90 ? Kind.GARBAGE
                    : roll < 95 && m.base() == Base.AFFINE ? Kind.NAN
                    : roll < 95 && m.base() == Base.EMBEDDING ? Kind.POISON
                    : Kind.VALID;
            int samples = 1 + random.nextInt(Math.min(effective, 4));
            if (kind == Kind.OVER_EFFECTIVE_BATCH) {
                samples = effective + 1 + random.nextInt(3);
            }
            if (kind == Kind.VALID && random.nextInt(4) == 0) {
                samples = effective; // borderline: exactly the effective limit
            }
            String tenant = List.of("default", "limited", "blocked").get(random.nextInt(3));
            int priority = kind == Kind.BAD_PRIORITY ? m.priorityLevels() + 1 : random.nextInt(m.priorityLevels() + 1);
            long timeout = List.of(0L, 0L, 1L, 2000L).get(random.nextInt(4));
            RequestParameters params = new RequestParameters(priority, timeout, tenant);
            InferenceRequest r = new InferenceRequest(id, kind == Kind.UNKNOWN_MODEL ? "no-such-model" : m.base().model,
                    null, inputs(m.base(), samples, kind), params);
            // elements over the operator's tensor limit make a valid-looking request bad input
            if (kind == Kind.VALID || kind == Kind.POISON) {
                long limit = scenario.operator().maxTensorElements();
                if (r.inputs().stream().anyMatch(t -> t.elementCount() > limit)) {
                    kind = Kind.OVER_EFFECTIVE_BATCH;
                }
            }
            if (kind == Kind.POISON) {
                poison++;
            }
            byte[] payload;
            boolean keyed = true;
            if (kind == Kind.GARBAGE) {
                payload = new byte[1 + random.nextInt(64)];
                random.nextBytes(payload);
                payload[0] = '{';
                keyed = random.nextBoolean();
            } else if (kind == Kind.NEGATIVE_TIMEOUT) {
                payload = new String(json.encodeRequest(r.withParameters(new RequestParameters(priority, 1, tenant))),
                        StandardCharsets.UTF_8).replace("\"timeout_ms\":1", "\"timeout_ms\":-5")
                        .getBytes(StandardCharsets.UTF_8);
                keyed = random.nextBoolean(); // the id is read from the payload either way
            } else {
                payload = random.nextBoolean() ? json.encodeRequest(r) : binary.encodeRequest(r);
            }
            sent.add(new Sent(kind, id, m.base(), keyed || kind != Kind.GARBAGE));
            return new ProducerRecord<>("unused", keyed ? id.getBytes(StandardCharsets.UTF_8) : null, payload);
        }

        private List<Tensor> inputs(Base base, int samples, Kind kind) {
            int seq = 1 + random.nextInt(5);
            long[] rank2 = kind == Kind.WRONG_RANK ? new long[] {samples} : null;
            return switch (base) {
                case AFFINE -> {
                    float[] x = floats(samples * 4);
                    if (kind == Kind.NAN) {
                        x[random.nextInt(x.length)] = Float.NaN;
                    }
                    yield List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofDoubles("x", shape(samples, 4), new double[samples * 4])
                            : Tensor.ofFloats("x", rank2 != null ? new long[] {samples * 4} : shape(samples, 4), x));
                }
                case FP16 -> List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofFloats("x", shape(samples, 3), floats(samples * 3))
                        : Tensor.ofFp16("x", rank2 != null ? new long[] {samples * 3} : shape(samples, 3), floats(samples * 3)));
                case BYTES -> {
                    String[] s = new String[samples * 3];
                    for (int i = 0; i < s.length; i++) {
                        s[i] = "w" + random.nextInt(1000);
                    }
                    yield List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofLongs("x", shape(samples, 3), new long[samples * 3])
                            : Tensor.ofStrings("x", rank2 != null ? new long[] {samples * 3} : shape(samples, 3), s));
                }
                case INT64 -> List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofInts("x", shape(samples, 3), new int[samples * 3])
                        : Tensor.ofLongs("x", rank2 != null ? new long[] {samples * 3} : shape(samples, 3),
                                longs(samples * 3, 1000)));
                case SEQ -> List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofFloats("tokens", shape(samples, seq), floats(samples * seq))
                        : Tensor.ofLongs("tokens", rank2 != null ? new long[] {samples * seq} : shape(samples, seq),
                                longs(samples * seq, 100)));
                case TWO_INPUTS -> List.of(
                        Tensor.ofFloats("a", rank2 != null ? new long[] {samples * 2} : shape(samples, 2), floats(samples * 2)),
                        kind == Kind.WRONG_DATATYPE ? Tensor.ofFloats("b", shape(samples, 2), floats(samples * 2))
                                : Tensor.ofLongs("b", shape(samples, 2), longs(samples * 2, 50)));
                case EMBEDDING -> {
                    long[] ids = longs(samples * seq, 16);
                    if (kind == Kind.POISON) {
                        ids[random.nextInt(ids.length)] = 99;
                    }
                    yield List.of(kind == Kind.WRONG_DATATYPE ? Tensor.ofInts("input_ids", shape(samples, seq), new int[samples * seq])
                            : Tensor.ofLongs("input_ids", rank2 != null ? new long[] {samples * seq} : shape(samples, seq), ids));
                }
            };
        }

        private static long[] shape(long... dims) {
            return dims;
        }

        private float[] floats(int n) {
            float[] x = new float[n];
            for (int i = 0; i < n; i++) {
                x[i] = random.nextFloat();
            }
            return x;
        }

        private long[] longs(int n, int bound) {
            long[] x = new long[n];
            for (int i = 0; i < n; i++) {
                x[i] = random.nextInt(bound);
            }
            return x;
        }
    }
}
