package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.TenantBinding;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tenants bound to who could write a record, through Kafka and the real job: by topic and by
 * signature. The tenants file forbids tenant {@code ads} the model, so a request answered
 * {@code FORBIDDEN_MODEL} shows it was served as {@code ads} whatever it claimed.
 */
class TenantBindingEndToEndTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String SHOP_KEY = "shop-signing-key-0123456789";
    static final String ADS_KEY = "ads-signing-key-0123456789";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    @TempDir
    static Path repo;

    static EmbeddedKafka kafka;
    static FashionMnist images;

    @BeforeAll
    static void setUp() throws Exception {
        kafka = EmbeddedKafka.start();
        Path root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        TestJobs.copyModel(root.resolve("models"), MODEL, repo, "{\"tenants\": [{\"name\": \"shop\"},"
                + "{\"name\": \"ads\", \"allowed_models\": [\"another-model\"]}]}");
    }

    @AfterAll
    static void tearDown() throws Exception {
        kafka.close();
    }

    private static byte[] request(String id, String claimedTenant) {
        return new JsonCodec().encodeRequest(new InferenceRequest(id, MODEL, null,
                List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(id.hashCode() & 0xff))),
                new RequestParameters(0, 0, claimedTenant)));
    }

    private static ProducerRecord<byte[], byte[]> record(String id, byte[] value) {
        return new ProducerRecord<>("unused", id.getBytes(StandardCharsets.UTF_8), value);
    }

    private static ProducerRecord<byte[], byte[]> signed(String id, byte[] value, String tenant, String key) {
        ProducerRecord<byte[], byte[]> r = record(id, value);
        r.headers().add(new RecordHeader(TenantBinding.TENANT_HEADER, tenant.getBytes(StandardCharsets.UTF_8)));
        if (key != null) {
            r.headers().add(new RecordHeader(TenantBinding.SIGNATURE_HEADER, TenantBinding.sign(
                    key.getBytes(StandardCharsets.UTF_8), tenant, value).getBytes(StandardCharsets.UTF_8)));
        }
        return r;
    }

    /** id -> error code of its response, null for an answer with outputs. */
    private static Map<String, ErrorCode> answers(String prefix, int n) throws Exception {
        Map<String, ErrorCode> out = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : KafkaTopics.read(kafka.bootstrapServers(), TestJobs.responses(prefix),
                got -> got.size() >= n, Duration.ofMinutes(2), Duration.ofSeconds(2))) {
            InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
            assertThat(out.containsKey(r.id())).as("second response for %s", r.id()).isFalse();
            out.put(r.id(), r.isError() ? r.error().code() : null);
            if (!r.isError()) {
                assertThat(r.output("logits").shape()).containsExactly(1, 10);
            }
        }
        return out;
    }

    /** Dead letters' request id -> code. */
    private static Map<String, String> deadLetters(String prefix, int n) throws Exception {
        ObjectMapper json = new ObjectMapper();
        Map<String, String> out = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> rec : KafkaTopics.read(kafka.bootstrapServers(),
                TestJobs.deadLetters(prefix), got -> got.size() >= n, Duration.ofSeconds(30), Duration.ofSeconds(1))) {
            JsonNode d = json.readTree(rec.value());
            out.put(d.path("request_id").asText(), d.path("code").asText());
        }
        return out;
    }

    @Test
    void topicsBindTenantsAndAnotherClaimIsRefused() throws Exception {
        String prefix = "tb-topic";
        Configuration config = TestJobs.config(kafka, prefix, 1, repo);
        kafka.createTopics(1, "tb-shop", "tb-ads");
        config.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.TOPIC);
        config.setString(TenantBinding.TOPICS_PREFIX + "tb-shop", "shop");
        config.setString(TenantBinding.TOPICS_PREFIX + "tb-ads", "ads");

        KafkaTopics.produce(kafka.bootstrapServers(), "tb-shop", List.of(
                record("shop-unclaimed", request("shop-unclaimed", null)),
                record("shop-as-itself", request("shop-as-itself", "shop")),
                record("shop-as-ads", request("shop-as-ads", "ads"))));
        KafkaTopics.produce(kafka.bootstrapServers(), "tb-ads", List.of(
                record("ads-unclaimed", request("ads-unclaimed", null)),
                record("ads-as-shop", request("ads-as-shop", "shop"))));
        KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests(prefix), List.of(
                record("main-as-shop", request("main-as-shop", "shop")),
                record("main-unclaimed", request("main-unclaimed", null))));

        JobClient job = TestJobs.start(config, 1, "tenant-topics");
        Map<String, ErrorCode> answers;
        Map<String, String> letters;
        try {
            answers = answers(prefix, 7);
            letters = deadLetters(prefix, 3);
        } finally {
            job.cancel().get();
        }
        Map<String, ErrorCode> expected = new LinkedHashMap<>();
        expected.put("shop-unclaimed", null);
        expected.put("shop-as-itself", null);
        expected.put("shop-as-ads", ErrorCode.TENANT_MISMATCH);
        expected.put("ads-unclaimed", ErrorCode.FORBIDDEN_MODEL);
        expected.put("ads-as-shop", ErrorCode.TENANT_MISMATCH);
        expected.put("main-as-shop", ErrorCode.TENANT_MISMATCH);
        expected.put("main-unclaimed", null);
        assertThat(answers).containsExactlyInAnyOrderEntriesOf(expected);
        assertThat(letters).containsExactlyInAnyOrderEntriesOf(Map.of("shop-as-ads", "TENANT_MISMATCH",
                "ads-as-shop", "TENANT_MISMATCH", "main-as-shop", "TENANT_MISMATCH"));
    }

    @Test
    void signaturesBindTenantsAndAnUnprovenOneIsRefused(@TempDir Path secrets) throws Exception {
        String prefix = "tb-signed";
        Configuration config = TestJobs.config(kafka, prefix, 1, repo);
        Path shopKey = secrets.resolve("shop.key");
        Files.writeString(shopKey, SHOP_KEY + "\n");
        config.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        config.setString(TenantBinding.KEYS_PREFIX + "shop", "file:" + shopKey);
        config.setString(TenantBinding.KEYS_PREFIX + "ads", ADS_KEY);

        byte[] tampered = request("tampered", null);
        ProducerRecord<byte[], byte[]> tamperedRecord = signed("tampered", tampered, "shop", SHOP_KEY);
        byte[] altered = request("tampered", "shop");
        KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests(prefix), List.of(
                signed("shop-signed", request("shop-signed", null), "shop", SHOP_KEY),
                signed("shop-claims-ads", request("shop-claims-ads", "ads"), "shop", SHOP_KEY),
                signed("ads-signed", request("ads-signed", null), "ads", ADS_KEY),
                signed("forged", request("forged", null), "shop", ADS_KEY),
                signed("unsigned", request("unsigned", null), "shop", null),
                record("no-headers", request("no-headers", "shop")),
                // The signed record's value replaced by another: the signature no longer holds.
                new ProducerRecord<>("unused", null, tamperedRecord.key(), altered, tamperedRecord.headers())));

        JobClient job = TestJobs.start(config, 1, "tenant-signatures");
        Map<String, ErrorCode> answers;
        Map<String, String> letters;
        try {
            answers = answers(prefix, 7);
            letters = deadLetters(prefix, 5);
        } finally {
            job.cancel().get();
        }
        Map<String, ErrorCode> expected = new LinkedHashMap<>();
        expected.put("shop-signed", null);
        expected.put("shop-claims-ads", ErrorCode.TENANT_MISMATCH);
        expected.put("ads-signed", ErrorCode.FORBIDDEN_MODEL);
        expected.put("forged", ErrorCode.UNAUTHENTICATED);
        expected.put("unsigned", ErrorCode.UNAUTHENTICATED);
        expected.put("no-headers", ErrorCode.UNAUTHENTICATED);
        expected.put("tampered", ErrorCode.UNAUTHENTICATED);
        assertThat(answers).containsExactlyInAnyOrderEntriesOf(expected);
        assertThat(letters).containsOnlyKeys("shop-claims-ads", "forged", "unsigned", "no-headers", "tampered");
    }
}
