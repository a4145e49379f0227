package io.flinkgpu.coordinator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.PlanSigner;
import io.flinkgpu.contract.control.PlanVerifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** coordinator.control.signing-key(-id): the signer they make, and the settings they refuse. */
class PlanSigningOptionsTest {
    static final String KEY = "coordinator-key-0123456789";

    private static Configuration config(String keyId, String key) {
        Configuration c = new Configuration();
        if (keyId != null) {
            c.set(CoordinatorOptions.SIGNING_KEY_ID, keyId);
        }
        if (key != null) {
            c.set(CoordinatorOptions.SIGNING_KEY, key);
        }
        return c;
    }

    @Test
    void noKeyMeansUnsignedPlans() {
        assertThat(CoordinatorOptions.planSigner(new Configuration())).isEmpty();
    }

    @Test
    void aFileReferencedKeySignsPlansTheJobsVerify(@TempDir Path dir) throws Exception {
        Path file = Files.writeString(dir.resolve("signing-key"), KEY + "\n");
        PlanSigner signer = CoordinatorOptions.planSigner(config("k1", "file:" + file)).orElseThrow();
        assertThat(signer.keyId()).isEqualTo("k1");
        ControlPlanState job = new ControlPlanState(null,
                new PlanVerifier(Map.of("k1", KEY.getBytes(StandardCharsets.UTF_8))));
        assertThat(job.offer(signer.sign(ControlMessage.of(1, 1, 0, List.of(), List.of(), "test"))))
                .isEqualTo(ControlPlanState.Outcome.APPLIED);
    }

    @Test
    void halfAConfigurationOrAnUnusableKeyIsRefusedWithoutShowingTheKey() {
        assertThatThrownBy(() -> CoordinatorOptions.planSigner(config("k1", null)))
                .hasMessageContaining("coordinator.control.signing-key");
        assertThatThrownBy(() -> CoordinatorOptions.planSigner(config(null, KEY)))
                .hasMessageContaining("coordinator.control.signing-key-id").hasMessageNotContaining(KEY);
        assertThatThrownBy(() -> CoordinatorOptions.planSigner(config("k1", "short-key")))
                .hasMessageContaining("16 bytes").hasMessageNotContaining("short-key");
        assertThatThrownBy(() -> CoordinatorOptions.planSigner(config("k 1", KEY)))
                .hasMessageContaining("key id").hasMessageNotContaining(KEY);
        assertThatThrownBy(() -> CoordinatorOptions.planSigner(config("k1", "env:FLINKGPU_TEST_VARIABLE_THAT_IS_NOT_SET")))
                .hasMessageContaining("is not set");
    }
}
