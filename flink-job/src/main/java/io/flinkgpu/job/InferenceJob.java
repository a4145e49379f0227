package io.flinkgpu.job;

import io.flinkgpu.contract.security.PassThroughProperties;
import io.flinkgpu.inference.operator.GpuInference;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.operator.ModelPartitioner;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.WireCodec;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.flink.util.TimeUtils;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The streaming inference job:
 *
 * <pre>
 *   Kafka requests -> parse &amp; validate -(invalid)-> Kafka dead-letter (+ error response to Kafka responses)
 *                          |
 *                  partition by model (or by the coordinator's plan from the control topic)
 *                          |
 *                 GPU inference (dynamic batching)  -> Kafka responses
 * </pre>
 *
 * Every operator has a stable uid so that savepoints restore across job versions.
 */
public final class InferenceJob {
    public static final String UID_SOURCE = "kafka-requests";
    public static final String UID_PARSER = "parse-validate";
    public static final String UID_INFERENCE = GpuInference.DEFAULT_UID;
    public static final String UID_RESPONSE_SINK = "kafka-responses";
    public static final String UID_DEAD_LETTER_SINK = "kafka-dead-letter";
    /** The parser's error responses, to the responses topic. */
    public static final String UID_ERROR_RESPONSE_SINK = "kafka-error-responses";
    // only with inference.kafka.control-topic set
    public static final String UID_CONTROL_SOURCE = "kafka-control";
    public static final String UID_PLAN_ROUTER = GpuInference.DEFAULT_ROUTER_UID;
    public static final String UID_ROUTED = GpuInference.DEFAULT_ROUTED_UID;

    /** The prefix of the pass-through Kafka client properties, with its trailing dot. */
    public static final String KAFKA_PROPERTIES_PREFIX = InferenceJobOptions.KAFKA_PROPERTIES.key() + ".";

    private static final Logger LOG = LoggerFactory.getLogger(InferenceJob.class);
    /** How long the build-time check for the control topic may wait for the broker. */
    private static final Duration CONTROL_TOPIC_CHECK_TIMEOUT = Duration.ofSeconds(3);

    private InferenceJob() {}

    /**
     * What turns the parsed requests into responses. The job's own stage is the library's GPU
     * inference; {@link #build(StreamExecutionEnvironment, ReadableConfig, InferenceStage)} takes
     * another (the benchmarks' passthrough, which answers without inference) so that it runs
     * between exactly the job's source, parser and sinks.
     */
    @FunctionalInterface
    public interface InferenceStage {
        /**
         * The responses to {@code requests} (already partitioned by model when the job runs at a
         * parallelism above 1); requests it refuses may go to {@link GpuInference#REFUSED}.
         */
        SingleOutputStreamOperator<InferenceResponse> apply(DataStream<InferenceRequest> requests);
    }

    /** Adds the job to {@code env}, configured from {@code config}. */
    public static void build(StreamExecutionEnvironment env, ReadableConfig config) {
        build(env, config, null);
    }

    /**
     * Adds the job to {@code env} with {@code stage} in place of GPU inference (null: GPU inference):
     * the same Kafka source, parser, sinks, state backend, checkpoints and buffer timeout. A stage
     * cannot be combined with {@code inference.kafka.control-topic}, whose plans address the
     * inference operator.
     */
    public static void build(StreamExecutionEnvironment env, ReadableConfig config, InferenceStage stage) {
        InferenceSettings settings = InferenceSettings.fromConfiguration(config);
        Map<String, String> kafkaProperties = kafkaClientProperties(config);
        configureState(env, config);
        String bootstrap = config.get(InferenceJobOptions.BOOTSTRAP_SERVERS);
        TenantBinding tenants = TenantBinding.fromConfiguration(config);
        LOG.info("Tenants: {}{}", tenants, tenants.mode() == TenantBinding.Mode.DECLARED
                ? " (self-declared: any producer may name any tenant; for trusted single-team deployments)" : "");
        List<String> requestTopics = new ArrayList<>();
        requestTopics.add(config.get(InferenceJobOptions.REQUESTS_TOPIC));
        tenants.extraTopics().stream().filter(t -> !requestTopics.contains(t)).forEach(requestTopics::add);

        KafkaSource<KafkaRecord> source = KafkaSource.<KafkaRecord>builder()
                .setProperties(properties(kafkaProperties))
                .setBootstrapServers(bootstrap)
                .setTopics(requestTopics)
                .setGroupId(config.get(InferenceJobOptions.GROUP_ID))
                .setStartingOffsets(startingOffsets(config.get(InferenceJobOptions.STARTING_OFFSETS)))
                .setDeserializer(new RawRecordDeserializer(tenants.mode() == TenantBinding.Mode.SIGNED))
                .build();

        DataStream<KafkaRecord> records = env.fromSource(source, WatermarkStrategy.noWatermarks(), "Kafka requests")
                .uid(UID_SOURCE);

        SingleOutputStreamOperator<InferenceRequest> requests = records
                .process(new RequestParser(config.get(InferenceJobOptions.REQUESTS_FORMAT), settings.limits(), tenants),
                        InferenceTypes.REQUEST)
                .uid(UID_PARSER)
                .name("Parse");

        int parallelism = config.get(InferenceJobOptions.PARALLELISM);
        String controlTopic = config.get(InferenceJobOptions.CONTROL_TOPIC);
        // One inference subtask needs no routing: a forward edge lets Flink chain parsing and
        // inference, so requests are not serialized between them.
        boolean single = parallelism == 1 && requests.getParallelism() == 1;
        if (stage != null && !controlTopic.isEmpty()) {
            throw new IllegalArgumentException("a replacement inference stage cannot run under "
                    + InferenceJobOptions.CONTROL_TOPIC.key() + " (its plans address the inference operator)");
        }
        GpuInference inference = GpuInference.builder().configuration(config).parallelism(parallelism).build();
        SingleOutputStreamOperator<InferenceResponse> responses;
        if (controlTopic.isEmpty()) {
            DataStream<InferenceRequest> routed =
                    single ? requests : requests.partitionCustom(new ModelPartitioner(), InferenceRequest::modelName);
            responses = stage == null ? inference.apply(routed) : stage.apply(routed);
        } else {
            // The library's control plane: one gate routes requests by the plan and hands applied
            // plans to the inference subtasks (their LOAD/UNLOAD commands).
            Duration discovery = config.get(InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL);
            warnIfControlTopicMissing(bootstrap, kafkaProperties, controlTopic, discovery);
            DataStream<byte[]> control = controlRecords(env, bootstrap, kafkaProperties, controlTopic,
                    config.get(InferenceJobOptions.GROUP_ID), discovery);
            responses = inference.apply(requests, control);
        }

        boolean exactlyOnce = config.get(InferenceJobOptions.EXACTLY_ONCE);
        int maxRecordBytes = (int) Math.min(Integer.MAX_VALUE, config.get(InferenceJobOptions.MAX_RECORD_SIZE).getBytes());
        WireCodec responseCodec = config.get(InferenceJobOptions.RESPONSES_FORMAT).writer();
        String responsesTopic = config.get(InferenceJobOptions.RESPONSES_TOPIC);
        // Two writers to the responses topic, each chained to the operator it reads: a union in
        // front of one sink would give it two inputs, and an operator with two inputs cannot chain,
        // so every answer would be serialized, buffered up to inference.buffer-timeout and handed to
        // another thread on its way out.
        responses.sinkTo(responseSink(bootstrap, kafkaProperties, exactlyOnce, maxRecordBytes, responseCodec,
                        responsesTopic, "gpu-inference-responses"))
                .setParallelism(responses.getParallelism())
                .uid(UID_RESPONSE_SINK)
                .name("Kafka responses");
        requests.getSideOutput(RequestParser.ERROR_RESPONSES)
                .sinkTo(responseSink(bootstrap, kafkaProperties, exactlyOnce, maxRecordBytes, responseCodec,
                        responsesTopic, "gpu-inference-error-responses"))
                .setParallelism(requests.getParallelism())
                .uid(UID_ERROR_RESPONSE_SINK)
                .name("Kafka error responses");

        String deadLetterTopic = config.get(InferenceJobOptions.DEAD_LETTER_TOPIC);
        DataStream<DeadLetter> refused = responses.getSideOutput(GpuInference.REFUSED)
                .map(DeadLetter::of, TypeInformation.of(DeadLetter.class))
                .name("Refused requests")
                .setParallelism(parallelism);
        requests.getSideOutput(RequestParser.DEAD_LETTERS)
                .union(refused)
                .sinkTo(KafkaSink.<DeadLetter>builder()
                        .setBootstrapServers(bootstrap)
                        .setKafkaProducerConfig(producerConfig(kafkaProperties, exactlyOnce, maxRecordBytes))
                        .setDeliveryGuarantee(exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
                        .setTransactionalIdPrefix("gpu-inference-dead-letter")
                        .setRecordSerializer((KafkaRecordSerializationSchema<DeadLetter>) (d, ctx, ts) ->
                                new ProducerRecord<>(deadLetterTopic,
                                        d.requestId() == null ? null : d.requestId().getBytes(StandardCharsets.UTF_8),
                                        encodeBounded(d, maxRecordBytes)))
                        .build())
                .uid(UID_DEAD_LETTER_SINK)
                .name("Kafka dead letters");
    }

    /**
     * The control topic's records, every plan from the start (the gates keep the newest epoch).
     *
     * <p>The control topic is optional input: it is subscribed to as a pattern that matches only its
     * name, so that a topic missing on the broker matches nothing instead of failing the source's
     * enumerator (and with it the job) as a fixed topic list would. The enumerator looks again every
     * {@code discovery} and reads a topic that appears from its earliest offset; until the first plan
     * the router routes by model hash.
     */
    private static DataStream<byte[]> controlRecords(StreamExecutionEnvironment env, String bootstrap,
            Map<String, String> kafkaProperties, String controlTopic, String groupId, Duration discovery) {
        KafkaSource<byte[]> controlSource = KafkaSource.<byte[]>builder()
                .setProperties(properties(kafkaProperties))
                .setBootstrapServers(bootstrap)
                .setTopicPattern(Pattern.compile(Pattern.quote(controlTopic)))
                .setProperty("partition.discovery.interval.ms", String.valueOf(discoveryIntervalMs(discovery)))
                .setGroupId(groupId + "-control")
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new ControlRecordDeserializer())
                .build();
        return env.fromSource(controlSource, WatermarkStrategy.noWatermarks(), "Kafka control")
                .uid(UID_CONTROL_SOURCE)
                .setParallelism(1);
    }

    /** Kafka's partition.discovery.interval.ms for the option; -1 (off) for zero or less. */
    private static long discoveryIntervalMs(Duration discovery) {
        return discovery.isNegative() || discovery.isZero() ? -1 : Math.max(1, discovery.toMillis());
    }

    /**
     * Logs once, when the job is built, that the control topic does not exist yet. Best effort: a
     * broker that cannot be reached within a few seconds, or any other failure, skips the message
     * and never fails the build (the source itself copes with a missing topic).
     */
    private static void warnIfControlTopicMissing(String bootstrap, Map<String, String> kafkaProperties,
            String controlTopic, Duration discovery) {
        int timeoutMs = (int) CONTROL_TOPIC_CHECK_TIMEOUT.toMillis();
        // the pass-through properties (credentials), then the check's own bounds, which stay short
        Properties props = properties(kafkaProperties);
        props.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs));
        props.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(timeoutMs));
        props.setProperty(AdminClientConfig.CLIENT_ID_CONFIG, "flink-gpu-inference-control-topic-check");
        Admin admin = null;
        try {
            admin = Admin.create(props);
            Set<String> topics = admin.listTopics().names().get(timeoutMs, TimeUnit.MILLISECONDS);
            if (!topics.contains(controlTopic)) {
                boolean discovering = discoveryIntervalMs(discovery) > 0;
                LOG.warn("Control topic '{}' does not exist on {}: requests are routed by model hash until a plan "
                                + "arrives; {}", controlTopic, bootstrap,
                        discovering
                                ? "the topic will be picked up (from its earliest offset) within "
                                        + TimeUtils.formatWithHighestUnit(discovery)
                                        + " of its creation"
                                : "partition discovery is off ("
                                        + InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL.key()
                                        + " = 0), so it is only read after a restart");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.debug("Could not check whether control topic '{}' exists on {}", controlTopic, bootstrap, e);
        } finally {
            if (admin != null) {
                try {
                    admin.close(Duration.ofSeconds(1));
                } catch (RuntimeException e) {
                    LOG.debug("Closing the control topic check's admin client failed", e);
                }
            }
        }
    }

    /** Control records as raw bytes; the router validates them, so nothing here can fail. */
    static final class ControlRecordDeserializer implements KafkaRecordDeserializationSchema<byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<byte[]> out) {
            out.collect(record.value() == null ? new byte[0] : record.value());
        }

        @Override
        public TypeInformation<byte[]> getProducedType() {
            return PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO;
        }
    }

    /** RocksDB and periodic checkpoints unless the cluster configuration says otherwise. */
    private static void configureState(StreamExecutionEnvironment env, ReadableConfig config) {
        Configuration state = new Configuration();
        if (config.getOptional(StateBackendOptions.STATE_BACKEND).isEmpty()) {
            state.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        }
        env.configure(state);
        env.setBufferTimeout(config.get(InferenceJobOptions.BUFFER_TIMEOUT).toMillis());
        // Requests, responses and dead letters are immutable: chained operators may pass them on
        // without defensive copies.
        env.getConfig().enableObjectReuse();
        Duration interval = config.get(InferenceJobOptions.CHECKPOINT_INTERVAL);
        if (!interval.isZero() && !env.getCheckpointConfig().isCheckpointingEnabled()) {
            env.enableCheckpointing(interval.toMillis());
        }
    }

    /**
     * The encoded response, or an OUTPUT_TOO_LARGE error if it would not fit in a record, or an
     * INTERNAL error if encoding it threw: a response that cannot be written must not fail the sink.
     */
    static byte[] encodeBounded(WireCodec codec, InferenceResponse response, int maxRecordBytes) {
        byte[] bytes;
        try {
            bytes = codec.encodeResponse(response);
        } catch (RuntimeException e) {
            return codec.encodeResponse(InferenceResponse.failure(response.id(), response.modelName(),
                    response.modelVersion(), new InferenceError(ErrorCode.INTERNAL, "the response could not be "
                            + "encoded: " + e.getClass().getName() + ": " + e.getMessage()), response.timings()));
        }
        if (bytes.length <= maxRecordBytes - RECORD_OVERHEAD_BYTES) {
            return bytes;
        }
        return codec.encodeResponse(InferenceResponse.failure(response.id(), response.modelName(),
                response.modelVersion(), new InferenceError(ErrorCode.OUTPUT_TOO_LARGE, "the response has "
                        + bytes.length + " bytes; inference.kafka.max-record-size allows " + maxRecordBytes
                        + (codec instanceof io.flinkgpu.inference.protocol.BinaryCodec ? ""
                                : "; inference.kafka.responses-format=BINARY writes tensors 2-3x smaller than JSON")
                        + ", or raise inference.kafka.max-record-size together with the responses topic's "
                        + "max.message.bytes"), response.timings()));
    }

    /** A dead letter's JSON, keeping only as much of the original as fits in a record. */
    static byte[] encodeBounded(DeadLetter d, int maxRecordBytes) {
        try {
            return d.toJson(maxRecordBytes / 2);
        } catch (RuntimeException e) {
            return new DeadLetter(ErrorCode.INTERNAL, "the dead letter could not be encoded: " + e, d.requestId(),
                    d.topic(), d.partition(), d.offset(), new byte[0]).toJson(0);
        }
    }

    /** A sink of responses to {@code topic}, each encoded with {@link #encodeBounded}. */
    static KafkaSink<InferenceResponse> responseSink(String bootstrap, Map<String, String> kafkaProperties,
            boolean exactlyOnce, int maxRecordBytes, WireCodec codec, String topic, String transactionalIdPrefix) {
        return KafkaSink.<InferenceResponse>builder()
                .setBootstrapServers(bootstrap)
                .setKafkaProducerConfig(producerConfig(kafkaProperties, exactlyOnce, maxRecordBytes))
                .setDeliveryGuarantee(exactlyOnce ? DeliveryGuarantee.EXACTLY_ONCE : DeliveryGuarantee.AT_LEAST_ONCE)
                .setTransactionalIdPrefix(transactionalIdPrefix)
                .setRecordSerializer((KafkaRecordSerializationSchema<InferenceResponse>) (r, ctx, ts) ->
                        new ProducerRecord<>(topic, r.id().getBytes(StandardCharsets.UTF_8),
                                encodeBounded(codec, r, maxRecordBytes)))
                .build();
    }

    /**
     * The producer properties the job's at-least-once sinks write with under {@code config} (its
     * tuning defaults, the {@code inference.kafka.properties.*} pass-through, the record size): for
     * a plain Kafka client that is to write as the job does.
     */
    public static Properties sinkProducerProperties(ReadableConfig config) {
        return producerConfig(kafkaClientProperties(config), false,
                (int) Math.min(Integer.MAX_VALUE, config.get(InferenceJobOptions.MAX_RECORD_SIZE).getBytes()));
    }

    /** Room for the key, headers and batch framing within max.request.size. */
    private static final int RECORD_OVERHEAD_BYTES = 1024;

    /**
     * The sinks' producer properties: the job's tuning defaults, overridden by the pass-through
     * properties, then the record size of {@code inference.kafka.max-record-size} (refused under the
     * prefix, so nothing overrides it).
     */
    private static Properties producerConfig(Map<String, String> kafkaProperties, boolean exactlyOnce,
            int maxRecordBytes) {
        Properties p = new Properties();
        p.setProperty("linger.ms", "2");
        if (exactlyOnce) {
            // Flink's default (1 h) exceeds the broker's maximum of 15 minutes.
            p.setProperty("transaction.timeout.ms", "600000");
        }
        p.putAll(kafkaProperties);
        p.setProperty("max.request.size", String.valueOf(maxRecordBytes));
        return p;
    }

    /**
     * Keys refused under {@code inference.kafka.properties.*}, with the reason: the job sets them
     * from its own options, or the job's correctness depends on its own value.
     */
    static final Map<String, String> REFUSED_KAFKA_PROPERTIES = Map.ofEntries(
            Map.entry("bootstrap.servers", "set " + InferenceJobOptions.BOOTSTRAP_SERVERS.key() + " instead"),
            Map.entry("group.id", "set " + InferenceJobOptions.GROUP_ID.key()
                    + " instead; the control source uses it with the suffix -control"),
            Map.entry("auto.offset.reset", "set " + InferenceJobOptions.STARTING_OFFSETS.key() + " instead"),
            Map.entry("max.request.size", "set " + InferenceJobOptions.MAX_RECORD_SIZE.key()
                    + " instead: responses over it become OUTPUT_TOO_LARGE errors"),
            Map.entry("partition.discovery.interval.ms", "set "
                    + InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL.key() + " for the control source"),
            Map.entry("transactional.id", "the sinks name their transactions themselves (see "
                    + InferenceJobOptions.EXACTLY_ONCE.key() + ")"),
            Map.entry("enable.auto.commit", "the request source commits its offsets on checkpoints"),
            Map.entry("key.serializer", "the job writes raw bytes"),
            Map.entry("value.serializer", "the job writes raw bytes"),
            Map.entry("key.deserializer", "the job reads raw bytes"),
            Map.entry("value.deserializer", "the job reads raw bytes"));

    /**
     * The pass-through Kafka client properties: every {@code inference.kafka.properties.<key>} of
     * {@code config}, the prefix removed. Every Kafka client of the job gets them (both sources,
     * both sinks, the control-topic check's admin client). The job's own options win where they
     * overlap, because overlapping keys are refused: {@link IllegalArgumentException} naming each
     * refused key and the option to use instead (never a value).
     */
    public static Map<String, String> kafkaClientProperties(ReadableConfig config) {
        return PassThroughProperties.read(config.toMap(), InferenceJobOptions.KAFKA_PROPERTIES.key(),
                REFUSED_KAFKA_PROPERTIES);
    }

    private static Properties properties(Map<String, String> entries) {
        Properties p = new Properties();
        p.putAll(entries);
        return p;
    }

    private static OffsetsInitializer startingOffsets(String value) {
        switch (value.toLowerCase(Locale.ROOT)) {
            case "earliest":
                return OffsetsInitializer.earliest();
            case "latest":
                return OffsetsInitializer.latest();
            case "committed-or-earliest":
                return OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST);
            default:
                throw new IllegalArgumentException("unknown starting offsets '" + value
                        + "'; use earliest, latest or committed-or-earliest");
        }
    }

    /**
     * Keeps the raw bytes and their origin; decoding happens in the parser so failures become dead
     * letters. The tenant headers are read only where tenants are signed: no other binding uses them.
     */
    static final class RawRecordDeserializer implements KafkaRecordDeserializationSchema<KafkaRecord> {
        private static final long serialVersionUID = 1L;
        private final boolean tenantHeaders;

        RawRecordDeserializer(boolean tenantHeaders) {
            this.tenantHeaders = tenantHeaders;
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<KafkaRecord> out) {
            out.collect(tenantHeaders
                    ? new KafkaRecord(record.topic(), record.partition(), record.offset(), record.key(), record.value(),
                            header(record, TenantBinding.TENANT_HEADER), header(record, TenantBinding.SIGNATURE_HEADER))
                    : new KafkaRecord(record.topic(), record.partition(), record.offset(), record.key(), record.value()));
        }

        /** The last value of header {@code name} as UTF-8, or null. */
        private static String header(ConsumerRecord<byte[], byte[]> record, String name) {
            org.apache.kafka.common.header.Header h = record.headers().lastHeader(name);
            return h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        }

        @Override
        public TypeInformation<KafkaRecord> getProducedType() {
            return TypeInformation.of(KafkaRecord.class);
        }
    }
}
