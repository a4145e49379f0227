package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLParameters;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The admin API over HTTPS with a keystore that the JDK's keytool makes for the test, configured
 * the way the service configures it ({@link AdminSettings#fromConfig}, secret references).
 */
class AdminServerTlsTest {
    static final String TOKEN = "tls-admin-token";
    static final String READ_TOKEN = "tls-read-token";
    static final java.util.function.Function<String, String> ENV = Map.of("READ", READ_TOKEN)::get;

    @TempDir
    static Path dir;
    static TestKeystores keys;
    static FakeCluster cluster;
    static Coordinator coordinator;
    static AdminServer server;

    @BeforeAll
    static void start() throws Exception {
        keys = TestKeystores.create(dir);
        Files.writeString(dir.resolve("ks-password"), keys.keystorePassword() + "\n");
        Files.writeString(dir.resolve("admin-token"), TOKEN + "\n");
        cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 400, 0);
        coordinator = new Coordinator(new Configuration(), cluster, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        server = new AdminServer(AdminSettings.fromConfig(tlsConfig(), ENV), coordinator,
                null);
    }

    static Configuration tlsConfig() {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.ADMIN_BIND, "127.0.0.1");
        c.set(CoordinatorOptions.ADMIN_PORT, 0);
        c.set(CoordinatorOptions.ADMIN_TOKEN, "file:" + dir.resolve("admin-token"));
        c.set(CoordinatorOptions.ADMIN_READ_TOKEN, "env:READ");
        c.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE, keys.keystore().toString());
        c.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD, "file:" + dir.resolve("ks-password"));
        return c;
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
    }

    private static HttpResponse<String> get(HttpClient client, String scheme, String path, String token)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(scheme + "://127.0.0.1:" + server.port() + path))
                .timeout(Duration.ofSeconds(20)).GET();
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void servesTheApiAndMetricsOverTls13Or12() throws Exception {
        assertThat(server.scheme()).isEqualTo("https");
        HttpClient trusting = HttpClient.newBuilder().sslContext(keys.clientContext()).build();
        HttpResponse<String> status = get(trusting, "https", "/api/status", TOKEN);
        assertThat(status.statusCode()).isEqualTo(200);
        assertThat(status.body()).contains("\"epoch\"", "\"paused\" : false");
        assertThat(status.sslSession()).hasValueSatisfying(s -> assertThat(s.getProtocol()).isIn("TLSv1.3", "TLSv1.2"));
        assertThat(get(trusting, "https", "/metrics", READ_TOKEN).body()).contains("coordinator_plans_published_total");
        assertThat(get(trusting, "https", "/metrics", null).statusCode()).isEqualTo(401);
        assertThat(get(trusting, "https", "/api/status", "wrong").statusCode()).isEqualTo(401);

        SSLParameters only12 = new SSLParameters();
        only12.setProtocols(new String[] {"TLSv1.2"});
        HttpClient tls12 = HttpClient.newBuilder().sslContext(keys.clientContext()).sslParameters(only12).build();
        HttpResponse<String> r = get(tls12, "https", "/api/status", READ_TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.sslSession()).hasValueSatisfying(s -> assertThat(s.getProtocol()).isEqualTo("TLSv1.2"));
    }

    @Test
    void plainHttpToTheTlsPortGetsNoAnswer() {
        HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        assertThatThrownBy(() -> get(plain, "http", "/api/status", TOKEN)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> get(plain, "http", "/metrics", null)).isInstanceOf(IOException.class);
    }

    @Test
    void aClientThatDoesNotTrustTheCertificateIsRefused() {
        HttpClient defaults = HttpClient.newHttpClient();
        assertThatThrownBy(() -> get(defaults, "https", "/api/status", TOKEN)).isInstanceOf(SSLHandshakeException.class);
    }

    @Test
    void aWrongKeystorePasswordFailsAtStartWithoutTheSecret() throws Exception {
        Configuration c = tlsConfig();
        c.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD, "Wr0ng-Passw0rd");
        assertThatThrownBy(() -> AdminSettings.fromConfig(c, ENV))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("coordinator.admin.tls.keystore-password")
                .hasMessageContaining(keys.keystore().toString())
                .hasMessageNotContaining("Wr0ng-Passw0rd").hasMessageNotContaining(keys.keystorePassword());

        c.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD, keys.keystorePassword());
        c.set(CoordinatorOptions.ADMIN_TLS_KEY_PASSWORD, "Key-Passw0rd");
        assertThatThrownBy(() -> AdminSettings.fromConfig(c, ENV))
                .hasMessageContaining("coordinator.admin.tls.key-password").hasMessageNotContaining("Key-Passw0rd");
    }

    @Test
    void anUnusableKeystoreFailsAtStartNamingTheOption() throws Exception {
        Configuration missing = tlsConfig();
        missing.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE, dir.resolve("nope.p12").toString());
        assertThatThrownBy(() -> AdminSettings.fromConfig(missing, ENV))
                .hasMessageContaining("coordinator.admin.tls.keystore").hasMessageContaining("not a readable file");

        Path garbage = Files.writeString(dir.resolve("garbage.p12"), "this is no keystore");
        Configuration bad = tlsConfig();
        bad.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE, garbage.toString());
        assertThatThrownBy(() -> AdminSettings.fromConfig(bad, ENV))
                .hasMessageContaining("coordinator.admin.tls.keystore").hasMessageNotContaining(keys.keystorePassword());

        // a truststore has certificates but no private key
        Configuration trustOnly = tlsConfig();
        trustOnly.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE, keys.truststore().toString());
        trustOnly.set(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD, keys.truststorePassword());
        assertThatThrownBy(() -> AdminSettings.fromConfig(trustOnly, ENV)).hasMessageContaining("holds no private key");

        Configuration noPassword = tlsConfig();
        noPassword.removeConfig(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD);
        assertThatThrownBy(() -> AdminSettings.fromConfig(noPassword, ENV))
                .hasMessageContaining("needs coordinator.admin.tls.keystore-password");

        Configuration noKeystore = tlsConfig();
        noKeystore.removeConfig(CoordinatorOptions.ADMIN_TLS_KEYSTORE);
        assertThatThrownBy(() -> AdminSettings.fromConfig(noKeystore, ENV))
                .hasMessageContaining("without coordinator.admin.tls.keystore");
    }

    @Test
    void tokensAreSecretReferencesAndEqualOnesAreRefused() throws Exception {
        Configuration c = tlsConfig();
        c.removeConfig(CoordinatorOptions.ADMIN_TLS_KEYSTORE);
        c.removeConfig(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD);
        AdminSettings s = AdminSettings.fromConfig(c, ENV);
        assertThat(s.adminToken()).isEqualTo(TOKEN); // the file's content without its line break
        assertThat(s.readToken()).isEqualTo(READ_TOKEN);
        assertThat(s.tls()).isNull();
        assertThat(s.metricsOpen()).isFalse();
        assertThat(s.toString()).doesNotContain(TOKEN, READ_TOKEN);

        assertThatThrownBy(() -> AdminSettings.fromConfig(c, Map.of("READ", TOKEN)::get))
                .hasMessageContaining("must differ").hasMessageNotContaining(TOKEN);
        assertThatThrownBy(() -> AdminSettings.fromConfig(c, name -> null))
                .hasMessageContaining("coordinator.admin.read-token").hasMessageContaining("READ");
        c.set(CoordinatorOptions.ADMIN_TOKEN, "file:" + dir.resolve("no-such-token"));
        assertThatThrownBy(() -> AdminSettings.fromConfig(c, ENV))
                .hasMessageContaining("coordinator.admin.token").hasMessageContaining("no-such-token");
    }
}
