package io.flinkgpu.coordinator.service;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link CoordinatorService#start} checks the admin API's tokens and keystore before it opens any state. */
class CoordinatorServiceAdminTest {
    private static Configuration config(Path dir) {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.STATE_DIR, dir.resolve("state").toString());
        c.set(CoordinatorOptions.ADMIN_PORT, 0);
        c.set(CoordinatorOptions.BOOTSTRAP_SERVERS, "127.0.0.1:1");
        c.set(CoordinatorOptions.REST_URL, "http://127.0.0.1:1");
        return c;
    }

    @Test
    void equalTokensOrAnUnreadableKeystoreFailTheStartBeforeAnyStateIsOpened(@TempDir Path dir) throws Exception {
        Configuration equal = config(dir);
        equal.set(CoordinatorOptions.ADMIN_TOKEN, "same-token-value");
        equal.set(CoordinatorOptions.ADMIN_READ_TOKEN, "same-token-value");
        assertThatThrownBy(() -> CoordinatorService.start(equal))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("must differ").hasMessageNotContaining("same-token-value");

        Configuration keystore = config(dir);
        keystore.set(CoordinatorOptions.ADMIN_TOKEN, "admin-token-value");
        keystore.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE, Files.writeString(dir.resolve("k.p12"), "junk").toString());
        keystore.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD, "keystore-secret-value");
        assertThatThrownBy(() -> CoordinatorService.start(keystore))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("coordinator.admin.tls.keystore").hasMessageNotContaining("keystore-secret-value");

        Configuration none = config(dir);
        assertThatThrownBy(() -> CoordinatorService.start(none)).hasMessageContaining("coordinator.admin.token");
        assertThat(dir.resolve("state")).doesNotExist();
    }
}
