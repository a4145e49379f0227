package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job and the coordinator against a broker that authenticates (SASL/PLAIN) and authorizes
 * (StandardAuthorizer, no ACL: no access) every client. Each party has its own user and only the
 * ACLs it needs: the job reads requests and the control topic and writes responses and dead
 * letters; the coordinator writes the control topic; the producer writes requests and reads
 * responses. The job's credentials come in through {@code inference.kafka.properties.*}, its
 * password from a file through Kafka's FileConfigProvider; the coordinator's through
 * {@code coordinator.kafka.properties.*}. Unknown users, wrong passwords and clients without
 * SASL are refused by the broker; an authenticated user without an ACL is refused per topic.
 */
class SecureKafkaEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String JOB = "job";
    static final String COORDINATOR = "coordinator";
    static final String PRODUCER = "producer";
    static final String INTRUDER = "intruder";
    static final String PREFIX = "secure";
    static final String CONTROL = "secure-control";
    /** Two tenants, each a Kafka user who may write only its own request topic. */
    static final String SHOP = "shop";
    static final String ADS = "ads";
    static final String TENANTS = "tenants";
    static final String SHOP_TOPIC = "tenants-shop";
    static final String ADS_TOPIC = "tenants-ads";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniClusterWithFreshMetrics(2);
    static final FlinkRest REST = FlinkRest.of(FLINK);

    static SecureKafka kafka;
    static Path root;
    static FashionMnist images;

    @TempDir
    static Path secrets;

    @BeforeAll
    static void startKafka() throws Exception {
        kafka = SecureKafka.start(JOB, COORDINATOR, PRODUCER, INTRUDER, SHOP, ADS);
        root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        String requests = TestJobs.requests(PREFIX);
        String responses = TestJobs.responses(PREFIX);
        String deadLetters = TestJobs.deadLetters(PREFIX);
        kafka.createTopics(1, requests, responses, deadLetters, CONTROL);
        List<AclBinding> acls = new ArrayList<>();
        acls.addAll(SecureKafka.allowTopic(JOB, requests, AclOperation.READ));
        acls.addAll(SecureKafka.allowTopic(JOB, CONTROL, AclOperation.READ));
        acls.addAll(SecureKafka.allowGroups(JOB, PREFIX)); // the request source's group and <group>-control
        acls.addAll(SecureKafka.allowTopic(JOB, responses, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(JOB, deadLetters, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(COORDINATOR, CONTROL, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(PRODUCER, requests, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(PRODUCER, responses, AclOperation.READ));
        acls.addAll(SecureKafka.allowGroups(PRODUCER, "it-"));
        // per-tenant request topics: the job reads both, each tenant writes only its own
        kafka.createTopics(1, SHOP_TOPIC, ADS_TOPIC, TestJobs.requests(TENANTS), TestJobs.responses(TENANTS),
                TestJobs.deadLetters(TENANTS));
        acls.addAll(SecureKafka.allowTopic(JOB, SHOP_TOPIC, AclOperation.READ));
        acls.addAll(SecureKafka.allowTopic(JOB, ADS_TOPIC, AclOperation.READ));
        acls.addAll(SecureKafka.allowTopic(JOB, TestJobs.requests(TENANTS), AclOperation.READ));
        acls.addAll(SecureKafka.allowGroups(JOB, TENANTS));
        acls.addAll(SecureKafka.allowTopic(JOB, TestJobs.responses(TENANTS), AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(JOB, TestJobs.deadLetters(TENANTS), AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(SHOP, SHOP_TOPIC, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(ADS, ADS_TOPIC, AclOperation.WRITE));
        acls.addAll(SecureKafka.allowTopic(PRODUCER, TestJobs.responses(TENANTS), AclOperation.READ));
        kafka.grant(acls);
    }

    @AfterAll
    static void stopKafka() throws Exception {
        if (kafka != null) {
            kafka.close();
        }
    }

    @Test
    void theJobAndTheCoordinatorWorkWithTheirOwnCredentialsAndNobodyElseGetsIn() throws Exception {
        assertThat(kafka.acls(INTRUDER)).as("the intruder authenticates but has no ACL").isEmpty();

        // the job's password is in a file only it reads; the configuration holds a reference to it
        Path jobSecret = secrets.resolve("job-kafka.properties");
        Files.writeString(jobSecret, "password=" + kafka.password(JOB) + "\n");
        Configuration config = TestJobs.config(kafka.bootstrapServers(), PREFIX, root.resolve("models"));
        config.set(InferenceJobOptions.CONTROL_TOPIC, CONTROL);
        config.set(InferenceJobOptions.CONTROL_TOPIC_DISCOVERY_INTERVAL, Duration.ofSeconds(1));
        config.set(InferenceJobOptions.CHECKPOINT_INTERVAL, Duration.ofSeconds(1));
        String p = InferenceJob.KAFKA_PROPERTIES_PREFIX;
        config.setString(p + "security.protocol", "SASL_PLAINTEXT");
        config.setString(p + "sasl.mechanism", "PLAIN");
        config.setString(p + "config.providers", "file");
        config.setString(p + "config.providers.file.class",
                "org.apache.kafka.common.config.provider.FileConfigProvider");
        config.setString(p + "sasl.jaas.config", SecureKafka.jaasConfig(JOB, "${file:" + jobSecret + ":password}"));
        assertThat(config.toMap().toString()).doesNotContain(kafka.password(JOB));

        JobClient job = TestJobs.start(config, 1, "secure-kafka");
        try {
            String jid = job.getJobID().toString();
            // (a) requests in, answers out, through the job's four authenticated clients
            Properties producer = kafka.clientProperties(PRODUCER);
            KafkaTopics.produce(producer, TestJobs.requests(PREFIX), TestJobs.imageRequests(images, MODEL, 0, 50));
            TestJobs.assertAnsweredOnce(producer, TestJobs.responses(PREFIX), 50, Duration.ofSeconds(60),
                    Duration.ofMillis(300));

            // (d) the coordinator's realizer publishes with coordinator.kafka.properties.*, the job applies it
            Configuration coordinator = new Configuration();
            kafka.credentials(COORDINATOR).forEach((k, v) ->
                    coordinator.setString(CoordinatorOptions.KAFKA_PROPERTIES.key() + "." + k, v));
            ControlMessage plan = ControlMessage.of(1, 1, 1,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(0, 1)), "secure test")), List.of(),
                    "secure test plan");
            try (KafkaPlanRealizer realizer = new KafkaPlanRealizer(kafka.bootstrapServers(), CONTROL,
                    Duration.ofSeconds(20), CoordinatorOptions.kafkaClientProperties(coordinator))) {
                realizer.publish(plan);
            }
            REST.awaitSubtaskMetrics(jid, "Plan router", 1, List.of(".control.planEpoch", ".control.plansApplied"),
                    -1, m -> m.get(0).get("planEpoch") == 1 && m.get(0).get("plansApplied") == 1,
                    Duration.ofSeconds(30), "the job never applied the coordinator's plan");
            KafkaTopics.produce(producer, TestJobs.requests(PREFIX), TestJobs.imageRequests(images, MODEL, 50, 20));
            TestJobs.assertAnsweredOnce(producer, TestJobs.responses(PREFIX), 70, Duration.ofSeconds(30),
                    Duration.ofMillis(300));

            // (b) the broker refuses who cannot authenticate
            assertRefusedAuthentication(SecureKafka.credentials(INTRUDER, "wrong-password"));
            assertRefusedAuthentication(SecureKafka.credentials("nobody", kafka.password(JOB)));
            assertNoConnectionWithoutSasl();

            // (c) authenticated, but without an ACL: refused per topic
            assertWriteRefused(INTRUDER, TestJobs.requests(PREFIX));
            assertWriteRefused(INTRUDER, CONTROL);
            assertReadRefused(INTRUDER, TestJobs.responses(PREFIX));
            // and each party only where its ACLs say: the coordinator cannot inject requests, the
            // producer cannot publish plans, nor write the job's responses
            assertWriteRefused(COORDINATOR, TestJobs.requests(PREFIX));
            assertWriteRefused(PRODUCER, CONTROL);
            assertWriteRefused(PRODUCER, TestJobs.responses(PREFIX));

            // nothing of the above reached the job, which never failed over
            REST.awaitSubtaskMetrics(jid, "Plan router", 1,
                    List.of(".control.planEpoch", ".control.plansApplied", ".control.recordsInvalid"), -1,
                    m -> m.get(0).get("planEpoch") == 1 && m.get(0).get("plansApplied") == 1
                            && m.get(0).get("recordsInvalid") == 0,
                    Duration.ofSeconds(10), "the refused clients changed the job's plan");
            REST.assertRunningWithoutExceptions(jid);
        } finally {
            job.cancel().get();
        }
    }

    /**
     * Tenants bound by topic, topics bound by ACL: a tenant's Kafka user can write only its own
     * request topic, so whatever its requests claim they are served as that tenant. The tenants
     * file forbids {@code ads} the model: {@code FORBIDDEN_MODEL} shows a request was served as
     * {@code ads}; a claim of the other tenant is {@code TENANT_MISMATCH}.
     */
    @Test
    void perTenantTopicsBindEachTenantToTheKafkaUserWhoMayWriteThem() throws Exception {
        Path repo = secrets.resolve("repo");
        TestJobs.copyModel(root.resolve("models"), MODEL, repo, "{\"tenants\": [{\"name\": \"shop\"},"
                + "{\"name\": \"ads\", \"allowed_models\": [\"another-model\"]}]}");
        Configuration config = TestJobs.config(kafka.bootstrapServers(), TENANTS, repo);
        kafka.credentials(JOB).forEach((k, v) -> config.setString(InferenceJob.KAFKA_PROPERTIES_PREFIX + k, v));
        config.set(InferenceJobOptions.TENANT_BINDING, io.flinkgpu.job.TenantBinding.Mode.TOPIC);
        config.setString(io.flinkgpu.job.TenantBinding.TOPICS_PREFIX + SHOP_TOPIC, SHOP);
        config.setString(io.flinkgpu.job.TenantBinding.TOPICS_PREFIX + ADS_TOPIC, ADS);

        // the broker, not the payload, decides who writes where
        assertWriteRefused(SHOP, ADS_TOPIC);
        assertWriteRefused(ADS, SHOP_TOPIC);
        assertWriteRefused(ADS, TestJobs.requests(TENANTS));

        JobClient job = TestJobs.start(config, 1, "secure-tenants");
        try {
            KafkaTopics.produce(kafka.clientProperties(SHOP), SHOP_TOPIC, List.of(
                    tenantRequest("shop-1", null), tenantRequest("shop-2", SHOP), tenantRequest("shop-as-ads", ADS)));
            KafkaTopics.produce(kafka.clientProperties(ADS), ADS_TOPIC, List.of(
                    tenantRequest("ads-1", null), tenantRequest("ads-as-shop", SHOP)));
            Map<String, String> outcome = new java.util.HashMap<>();
            for (var rec : KafkaTopics.read(kafka.clientProperties(PRODUCER), TestJobs.responses(TENANTS),
                    got -> got.size() >= 5, Duration.ofSeconds(60), Duration.ofMillis(500))) {
                var r = io.flinkgpu.inference.protocol.WireFormat.JSON.decodeResponse(rec.value());
                assertThat(outcome.put(r.id(), r.isError() ? r.error().code().name() : "OK")).isNull();
            }
            assertThat(outcome).containsExactlyInAnyOrderEntriesOf(Map.of("shop-1", "OK", "shop-2", "OK",
                    "shop-as-ads", "TENANT_MISMATCH", "ads-1", "FORBIDDEN_MODEL", "ads-as-shop", "TENANT_MISMATCH"));
            REST.assertRunningWithoutExceptions(job.getJobID().toString());
        } finally {
            job.cancel().get();
        }
    }

    private static ProducerRecord<byte[], byte[]> tenantRequest(String id, String tenant) {
        var r = new io.flinkgpu.inference.protocol.InferenceRequest(id, MODEL, null,
                List.of(io.flinkgpu.inference.protocol.Tensor.ofFloats("input", new long[] {1, 1, 28, 28},
                        images.image(0))),
                new io.flinkgpu.inference.protocol.RequestParameters(0, 0, tenant));
        return new ProducerRecord<>("unused", id.getBytes(StandardCharsets.UTF_8),
                new io.flinkgpu.inference.protocol.JsonCodec().encodeRequest(r));
    }

    /** An admin client with {@code credentials} fails with a SASL authentication error from the broker. */
    private static void assertRefusedAuthentication(Map<String, String> credentials) {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        p.putAll(credentials);
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        try (Admin admin = Admin.create(p)) {
            assertThatThrownBy(() -> admin.listTopics().names().get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(SaslAuthenticationException.class)
                    .hasMessageContaining("Invalid username or password");
        }
    }

    /** A client that does not speak SASL gets no answer: the broker closes its connections. */
    private static void assertNoConnectionWithoutSasl() {
        Properties p = new Properties();
        p.setProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
        p.setProperty(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
        p.setProperty(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "1000");
        try (Admin admin = Admin.create(p)) {
            assertThatThrownBy(() -> admin.listTopics().names().get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(TimeoutException.class);
        }
    }

    /** {@code user} (authenticated) cannot write to {@code topic}. */
    private static void assertWriteRefused(String user, String topic) {
        Properties p = kafka.clientProperties(user);
        p.setProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000");
        // not idempotent: a producer id needs a write ACL on some topic, which the intruder lacks;
        // this asserts the topic's own ACL
        p.setProperty(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false");
        p.setProperty(ProducerConfig.ACKS_CONFIG, "1");
        try (KafkaProducer<byte[], byte[]> producer =
                new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>(topic,
                            "plan".getBytes(StandardCharsets.UTF_8), "{}".getBytes(StandardCharsets.UTF_8)))
                    .get(10, TimeUnit.SECONDS))
                    .as("%s writing %s", user, topic)
                    .satisfiesAnyOf(
                            e -> assertThat(e).isInstanceOf(TopicAuthorizationException.class),
                            e -> assertThat(e).isInstanceOf(ExecutionException.class).cause()
                                    .isInstanceOf(TopicAuthorizationException.class))
                    .hasMessageContaining(topic);
        }
    }

    /** {@code user} (authenticated) cannot read {@code topic}. */
    private static void assertReadRefused(String user, String topic) {
        Properties p = kafka.clientProperties(user);
        // no group: a group ACL would be checked first; this asserts the topic's own ACL
        p.setProperty("auto.offset.reset", "earliest");
        try (KafkaConsumer<byte[], byte[]> consumer =
                new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(new org.apache.kafka.common.TopicPartition(topic, 0)));
            assertThatThrownBy(() -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200));
                }
            }).as("%s reading %s", user, topic).isInstanceOf(TopicAuthorizationException.class)
                    .hasMessageContaining(topic);
        }
    }
}
