package io.flinkgpu.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.protocol.ErrorCode;
import java.io.ByteArrayOutputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TenantBindingTest {
    private static final String SHOP_KEY = "shop-key-0123456789abcdef";
    private static final String ADS_KEY = "ads-key-0123456789abcdefgh";
    private static final byte[] VALUE = "{\"id\":\"r1\"}".getBytes(StandardCharsets.UTF_8);

    private static KafkaRecord record(String topic, String tenantHeader, String signature) {
        return new KafkaRecord(topic, 0, 7, null, VALUE, tenantHeader, signature);
    }

    private static TenantBinding topics() {
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.TOPIC);
        c.setString("inference.tenant.topics.shop.requests", "shop");
        c.setString("inference.tenant.topics.ads-requests", "ads");
        return TenantBinding.fromConfiguration(c);
    }

    private static TenantBinding signed() {
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        c.setString("inference.tenant.keys.shop", SHOP_KEY);
        c.setString("inference.tenant.keys.ads", ADS_KEY);
        return TenantBinding.fromConfiguration(c);
    }

    private static String sig(String key, String tenant, byte[] value) {
        return TenantBinding.sign(key.getBytes(StandardCharsets.UTF_8), tenant, value);
    }

    @Test
    void declaredTrustsTheClaim() {
        TenantBinding b = TenantBinding.declared();
        assertThat(b.bind(record("any", null, null), "shop").tenant()).isEqualTo("shop");
        assertThat(b.extraTopics()).isEmpty();
    }

    @Test
    void topicModeBindsTheTopicsTenantAndRefusesAnotherClaim() {
        TenantBinding b = topics();
        assertThat(b.extraTopics()).containsExactlyInAnyOrder("shop.requests", "ads-requests");
        assertThat(b.bind(record("shop.requests", null, null), "default").tenant()).isEqualTo("shop");
        assertThat(b.bind(record("shop.requests", null, null), "shop").tenant()).isEqualTo("shop");
        TenantBinding.Result mismatch = b.bind(record("shop.requests", null, null), "ads");
        assertThat(mismatch.error()).isEqualTo(ErrorCode.TENANT_MISMATCH);
        assertThat(mismatch.reason()).contains("'ads'").contains("'shop'");
        // The main requests topic is the default tenant's: naming another there is a mismatch too.
        assertThat(b.bind(record("inference-requests", null, null), "shop").error())
                .isEqualTo(ErrorCode.TENANT_MISMATCH);
        // Headers mean nothing in topic mode.
        assertThat(b.bind(record("ads-requests", "shop", sig(SHOP_KEY, "shop", VALUE)), "default").tenant())
                .isEqualTo("ads");
    }

    @Test
    void signedModeNeedsAValidSignatureOfTheTenantAndTheValue() {
        TenantBinding b = signed();
        assertThat(b.bind(record("t", "shop", sig(SHOP_KEY, "shop", VALUE)), "default").tenant()).isEqualTo("shop");
        assertThat(b.bind(record("t", "shop", sig(SHOP_KEY, "shop", VALUE)), "shop").tenant()).isEqualTo("shop");
        assertThat(b.bind(record("t", "shop", sig(SHOP_KEY, "shop", VALUE)), "ads").error())
                .isEqualTo(ErrorCode.TENANT_MISMATCH);
        // No header, no signature, another tenant's key, a signature of other bytes, an unknown tenant.
        assertThat(b.bind(record("t", null, null), "shop").error()).isEqualTo(ErrorCode.UNAUTHENTICATED);
        assertThat(b.bind(record("t", "shop", null), "shop").error()).isEqualTo(ErrorCode.UNAUTHENTICATED);
        assertThat(b.bind(record("t", "shop", sig(ADS_KEY, "shop", VALUE)), "shop").error())
                .isEqualTo(ErrorCode.UNAUTHENTICATED);
        assertThat(b.bind(record("t", "ads", sig(SHOP_KEY, "shop", VALUE)), "ads").error())
                .isEqualTo(ErrorCode.UNAUTHENTICATED);
        assertThat(b.bind(record("t", "shop", sig(SHOP_KEY, "shop", "other".getBytes(StandardCharsets.UTF_8))),
                "shop").error()).isEqualTo(ErrorCode.UNAUTHENTICATED);
        TenantBinding.Result unknown = b.bind(record("t", "nobody", sig(SHOP_KEY, "nobody", VALUE)), "nobody");
        assertThat(unknown.error()).isEqualTo(ErrorCode.UNAUTHENTICATED);
    }

    @Test
    void keysComeFromFilesAndNeverShowInToStringOrTheSerializedForm(@TempDir Path dir) throws Exception {
        Path key = dir.resolve("shop.key");
        Files.writeString(key, SHOP_KEY + "\n");
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        c.setString("inference.tenant.keys.shop", "file:" + key);
        TenantBinding b = TenantBinding.fromConfiguration(c);
        assertThat(b.bind(record("t", "shop", sig(SHOP_KEY, "shop", VALUE)), "shop").ok()).isTrue();
        assertThat(b.toString()).doesNotContain(SHOP_KEY).contains("shop");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(b);
        }
        assertThat(bytes.toString(StandardCharsets.ISO_8859_1)).doesNotContain(SHOP_KEY);
    }

    @Test
    void inconsistentConfigurationsAreRefusedAtBuildTime() {
        Configuration topic = new Configuration();
        topic.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.TOPIC);
        assertThatThrownBy(() -> TenantBinding.fromConfiguration(topic)).hasMessageContaining("inference.tenant.topics.");
        Configuration noKeys = new Configuration();
        noKeys.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        assertThatThrownBy(() -> TenantBinding.fromConfiguration(noKeys)).hasMessageContaining("inference.tenant.keys.");
        Configuration shortKey = new Configuration();
        shortKey.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        shortKey.setString("inference.tenant.keys.shop", "short");
        assertThatThrownBy(() -> TenantBinding.fromConfiguration(shortKey))
                .hasMessageContaining("inference.tenant.keys.shop").hasMessageNotContaining("short\"");
        Configuration missingFile = new Configuration();
        missingFile.set(InferenceJobOptions.TENANT_BINDING, TenantBinding.Mode.SIGNED);
        missingFile.setString("inference.tenant.keys.shop", "file:/nonexistent/shop.key");
        assertThatThrownBy(() -> TenantBinding.fromConfiguration(missingFile)).hasMessageContaining("/nonexistent/shop.key");
    }

    /** Whatever a record carries, binding gives a tenant or a coded refusal, and never another tenant's. */
    @Property(tries = 300)
    void noRecordActsAsAnotherTenant(@ForAll("modes") TenantBinding.Mode mode, @ForAll("tenants") String claim,
            @ForAll("tenants") String header, @ForAll("topicNames") String topic, @ForAll boolean signWithOwnKey,
            @ForAll byte[] value) {
        TenantBinding b = mode == TenantBinding.Mode.TOPIC ? topics()
                : mode == TenantBinding.Mode.SIGNED ? signed() : TenantBinding.declared();
        String key = signWithOwnKey ? ("ads".equals(header) ? ADS_KEY : SHOP_KEY) : ADS_KEY;
        KafkaRecord r = new KafkaRecord(topic, 0, 0, null, value, header, sig(key, header, value));
        TenantBinding.Result result = b.bind(r, claim);
        assertThat(result.ok()).isNotEqualTo(result.error() != null);
        if (!result.ok()) {
            assertThat(result.error()).isIn(ErrorCode.TENANT_MISMATCH, ErrorCode.UNAUTHENTICATED);
            return;
        }
        switch (mode) {
            case DECLARED -> assertThat(result.tenant()).isEqualTo(claim);
            case TOPIC -> assertThat(result.tenant()).isEqualTo(Map.of("shop.requests", "shop", "ads-requests", "ads")
                    .getOrDefault(topic, "default"));
            case SIGNED -> {
                assertThat(result.tenant()).isEqualTo(header);
                assertThat(signWithOwnKey || "ads".equals(header)).isTrue();
            }
            default -> throw new AssertionError(mode);
        }
        assertThat(claim.equals("default") || claim.equals(result.tenant())).isTrue();
    }

    @Provide
    Arbitrary<TenantBinding.Mode> modes() {
        return Arbitraries.of(TenantBinding.Mode.class);
    }

    @Provide
    Arbitrary<String> tenants() {
        return Arbitraries.of("default", "shop", "ads", "nobody");
    }

    @Provide
    Arbitrary<String> topicNames() {
        return Arbitraries.of("shop.requests", "ads-requests", "inference-requests");
    }
}
