package io.flinkgpu.job;

import io.flinkgpu.inference.protocol.WireFormat;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;

/** The job's Kafka and pipeline options; the inference knobs are in {@code GpuInferenceOptions}. */
public final class InferenceJobOptions {
    private InferenceJobOptions() {}

    public static final ConfigOption<String> BOOTSTRAP_SERVERS = ConfigOptions.key("inference.kafka.bootstrap-servers")
            .stringType()
            .defaultValue("localhost:9092")
            .withDescription("Kafka bootstrap servers for the request, response and dead-letter topics.");

    /**
     * Not read as one value: each {@code inference.kafka.properties.<kafka key>} is one client
     * property (see {@link InferenceJob#kafkaClientProperties}). The option exists for its key and
     * description.
     */
    public static final ConfigOption<Map<String, String>> KAFKA_PROPERTIES = ConfigOptions.key("inference.kafka.properties")
            .mapType()
            .noDefaultValue()
            .withDescription("Prefix, one key per Kafka client property: every inference.kafka.properties.<name>: "
                    + "<value> is passed to every Kafka client of the job (both sources, both sinks, the "
                    + "control-topic check's admin client), e.g. inference.kafka.properties.security.protocol: "
                    + "SASL_SSL, ...sasl.mechanism, ...sasl.jaas.config, ...ssl.truststore.location. Secrets stay "
                    + "out of the configuration with Kafka's config providers: ...config.providers: file,env, "
                    + "...config.providers.file.class: org.apache.kafka.common.config.provider.FileConfigProvider, "
                    + "...config.providers.env.class: org.apache.kafka.common.config.provider.EnvVarConfigProvider, "
                    + "then ${file:/path/to/file.properties:key} or ${env:NAME} in a value, resolved by each client "
                    + "where it runs. A prefixed value overrides the job's own tuning defaults (linger.ms, "
                    + "transaction.timeout.ms); keys the job sets from its own options or needs unchanged are refused "
                    + "when the job is built: bootstrap.servers, group.id, auto.offset.reset, max.request.size, "
                    + "partition.discovery.interval.ms, transactional.id, enable.auto.commit and the (de)serializers.");

    public static final ConfigOption<String> REQUESTS_TOPIC = ConfigOptions.key("inference.kafka.requests-topic")
            .stringType()
            .defaultValue("inference-requests")
            .withDescription("Topic the job reads requests from.");

    public static final ConfigOption<String> RESPONSES_TOPIC = ConfigOptions.key("inference.kafka.responses-topic")
            .stringType()
            .defaultValue("inference-responses")
            .withDescription("Topic the job writes responses (outputs or errors) to, keyed by request id.");

    public static final ConfigOption<String> DEAD_LETTER_TOPIC = ConfigOptions.key("inference.kafka.dead-letter-topic")
            .stringType()
            .defaultValue("inference-dead-letter")
            .withDescription("Topic for records that are not valid requests: the original bytes, where they came "
                    + "from, and the reason.");

    public static final ConfigOption<String> CONTROL_TOPIC = ConfigOptions.key("inference.kafka.control-topic")
            .stringType()
            .defaultValue("")
            .withDescription("Topic of the scheduler coordinator's plans (routing table and commands), read as a "
                    + "broadcast stream from the earliest offset; empty: off, requests are routed by model hash. "
                    + "A topic that is missing or empty is no error: requests are routed by model hash until "
                    + "the first plan arrives, and a topic created later is picked up (see "
                    + "inference.kafka.control-topic-discovery-interval).");

    public static final ConfigOption<Duration> CONTROL_TOPIC_DISCOVERY_INTERVAL =
            ConfigOptions.key("inference.kafka.control-topic-discovery-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(5))
                    .withDescription("How often the control source looks for the control topic and its partitions "
                            + "(Kafka's partition.discovery.interval.ms), so that a topic created after the job "
                            + "started is read, from its earliest offset, within this interval. 0 turns discovery "
                            + "off: a topic missing at start is then only read after a restart.");

    public static final ConfigOption<String> GROUP_ID = ConfigOptions.key("inference.kafka.group-id")
            .stringType()
            .defaultValue("flink-gpu-inference")
            .withDescription("Consumer group id of the request source.");

    public static final ConfigOption<String> STARTING_OFFSETS = ConfigOptions.key("inference.kafka.starting-offsets")
            .stringType()
            .defaultValue("committed-or-earliest")
            .withDescription("Where to start reading when there is no checkpoint: earliest, latest or "
                    + "committed-or-earliest.");

    public static final ConfigOption<WireFormat> REQUESTS_FORMAT = ConfigOptions.key("inference.kafka.requests-format")
            .enumType(WireFormat.class)
            .defaultValue(WireFormat.AUTO)
            .withDescription("Encoding of the requests topic: JSON, BINARY, or AUTO (either, told apart by the "
                    + "binary format's magic bytes).");

    public static final ConfigOption<WireFormat> RESPONSES_FORMAT = ConfigOptions.key("inference.kafka.responses-format")
            .enumType(WireFormat.class)
            .defaultValue(WireFormat.JSON)
            .withDescription("Encoding of the responses topic: JSON or BINARY.");

    public static final ConfigOption<Boolean> EXACTLY_ONCE = ConfigOptions.key("inference.kafka.exactly-once")
            .booleanType()
            .defaultValue(false)
            .withDescription("Write responses with Kafka transactions (exactly-once) instead of at-least-once.");

    public static final ConfigOption<Integer> PARALLELISM = ConfigOptions.key("inference.parallelism")
            .intType()
            .defaultValue(1)
            .withDescription("Parallelism of the inference operator (one subtask per device slot).");

    public static final ConfigOption<Duration> CHECKPOINT_INTERVAL = ConfigOptions.key("inference.checkpoint-interval")
            .durationType()
            .defaultValue(Duration.ofSeconds(10))
            .withDescription("Checkpoint interval; 0 disables checkpointing.");

    public static final ConfigOption<Duration> BUFFER_TIMEOUT = ConfigOptions.key("inference.buffer-timeout")
            .durationType()
            .defaultValue(Duration.ofMillis(2))
            .withDescription("How long Flink may hold records in a network buffer before sending them on. "
                    + "Flink's default (100 ms) would dominate inference latency.");

    public static final ConfigOption<MemorySize> MAX_RECORD_SIZE = ConfigOptions.key("inference.kafka.max-record-size")
            .memoryType()
            .defaultValue(MemorySize.parse("1m"))
            .withDescription("Largest record the job writes (Kafka's max.request.size). A response over it is "
                    + "replaced by an OUTPUT_TOO_LARGE error; a dead letter keeps only the start of the original.");

    public static final ConfigOption<TenantBinding.Mode> TENANT_BINDING = ConfigOptions.key("inference.tenant.binding")
            .enumType(TenantBinding.Mode.class)
            .defaultValue(TenantBinding.Mode.DECLARED)
            .withDescription("How a request's tenant is decided. DECLARED: its parameters.tenant as written, so any "
                    + "producer may name any tenant (trusted single-team deployments only). TOPIC: the tenant of the "
                    + "topic it was read from, from inference.tenant.topics.<topic>: <tenant>; the job also reads "
                    + "those topics, records of inference.kafka.requests-topic belong to 'default', and Kafka ACLs "
                    + "decide who may write each topic. SIGNED: the tenant in the record's inference-tenant header, "
                    + "proven by the inference-tenant-signature header (HMAC-SHA256 under the tenant's key, "
                    + "inference.tenant.keys.<tenant>: a secret, file:/path or env:NAME). A request claiming "
                    + "another tenant is refused with TENANT_MISMATCH, an unsigned one with UNAUTHENTICATED.");
}
