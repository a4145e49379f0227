package io.flinkgpu.inference.qos;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TenantGateTest {
    static final long S = 1_000_000_000L;

    @Test
    void refusesModelsOutsideTheTenantsAllowList() {
        TenantGate gate = new TenantGate(new TenantRegistry(
                List.of(new TenantConfig("shop", 1, 0, 0, 0, List.of("cnn"))), null));
        assertThat(gate.admit("shop", "cnn", 0)).isNull();
        assertThat(gate.admit("shop", "bert", 0)).isEqualTo(ErrorCode.FORBIDDEN_MODEL);
        assertThat(gate.admit("anyone-else", "bert", 0)).isNull();
    }

    @Test
    void rateLimitAllowsTheBurstThenTheRate() {
        TenantGate gate = new TenantGate(new TenantRegistry(
                List.of(new TenantConfig("shop", 1, 10, 5, 0, List.of())), null));
        int admitted = 0;
        for (int i = 0; i < 20; i++) {
            if (gate.admit("shop", "cnn", 0) == null) {
                admitted++;
                gate.release("shop");
            }
        }
        assertThat(admitted).isEqualTo(5);
        assertThat(gate.admit("shop", "cnn", S / 10 - 1)).isEqualTo(ErrorCode.QUOTA_EXCEEDED);
        assertThat(gate.admit("shop", "cnn", S / 10)).isNull(); // one token per 100 ms
    }

    @Test
    void inFlightLimitCountsUntilRelease() {
        TenantGate gate = new TenantGate(new TenantRegistry(
                List.of(new TenantConfig("shop", 1, 0, 0, 2, List.of())), null));
        assertThat(gate.admit("shop", "cnn", 0)).isNull();
        assertThat(gate.admit("shop", "cnn", 0)).isNull();
        assertThat(gate.admit("shop", "cnn", 0)).isEqualTo(ErrorCode.QUOTA_EXCEEDED);
        gate.release("shop");
        assertThat(gate.inFlight("shop")).isEqualTo(1);
        assertThat(gate.admit("shop", "cnn", 0)).isNull();
    }

    @Test
    void readsTenantsAndDefaultsFromJson(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("tenants.json");
        Files.writeString(file, "{\"default\": {\"name\": \"default\", \"weight\": 2, \"max_in_flight\": 1},"
                + " \"tenants\": [{\"name\": \"gold\", \"weight\": 3, \"allowed_models\": [\"*\"]}]}");
        TenantRegistry registry = TenantRegistry.load(file);
        assertThat(registry.weight("gold")).isEqualTo(3);
        assertThat(registry.weight("unknown")).isEqualTo(2);
        assertThat(registry.get("unknown").maxInFlight()).isEqualTo(1);
        assertThat(registry.get("unknown").name()).isEqualTo("unknown");
    }
}
