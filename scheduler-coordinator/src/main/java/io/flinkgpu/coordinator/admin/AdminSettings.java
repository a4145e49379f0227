package io.flinkgpu.coordinator.admin;

import io.flinkgpu.contract.security.Secrets;
import io.flinkgpu.coordinator.CoordinatorOptions;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.Optional;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import org.apache.flink.configuration.ReadableConfig;

/**
 * How the admin API listens and whom it lets in: the admin token (every method), an optional read
 * token (GET only), whether {@code /metrics} is served without a token, and TLS (an
 * {@link SSLContext}, or null for plain HTTP). Tokens are kept as given here and never printed:
 * {@link #toString} says only which are set.
 */
public final class AdminSettings {
    private final String bindAddress;
    private final int port;
    private final String adminToken;
    private final String readToken;
    private final boolean metricsOpen;
    private final SSLContext tls;

    private AdminSettings(String bindAddress, int port, String adminToken, String readToken, boolean metricsOpen,
            SSLContext tls) {
        if (adminToken == null || adminToken.isBlank()) {
            throw new IllegalArgumentException(
                    "the admin API needs coordinator.admin.token (or coordinator.admin.port: -1)");
        }
        checkToken(CoordinatorOptions.ADMIN_TOKEN.key(), adminToken);
        if (readToken != null) {
            if (readToken.isBlank()) {
                throw new IllegalArgumentException("coordinator.admin.read-token is set but empty");
            }
            checkToken(CoordinatorOptions.ADMIN_READ_TOKEN.key(), readToken);
            if (MessageDigest.isEqual(readToken.getBytes(StandardCharsets.UTF_8),
                    adminToken.getBytes(StandardCharsets.UTF_8))) {
                throw new IllegalArgumentException("coordinator.admin.read-token must differ from "
                        + "coordinator.admin.token (the read token allows GET only)");
            }
        }
        if (port < -1 || port > 65_535) {
            throw new IllegalArgumentException("coordinator.admin.port must be -1..65535");
        }
        this.bindAddress = bindAddress;
        this.port = port;
        this.adminToken = adminToken;
        this.readToken = readToken;
        this.metricsOpen = metricsOpen;
        this.tls = tls;
    }

    /** Plain HTTP, one admin token, {@code /metrics} behind the token. */
    public static AdminSettings of(String bindAddress, int port, String adminToken) {
        return new AdminSettings(bindAddress, port, adminToken, null, false, null);
    }

    /** These settings with {@code readToken} (null: none) as the GET-only token. */
    public AdminSettings withReadToken(String readToken) {
        return new AdminSettings(bindAddress, port, adminToken, readToken, metricsOpen, tls);
    }

    /** These settings with {@code /metrics} served without a token ({@code true}) or behind one. */
    public AdminSettings withMetricsOpen(boolean open) {
        return new AdminSettings(bindAddress, port, adminToken, readToken, open, tls);
    }

    /** These settings serving HTTPS with {@code context} (null: plain HTTP). */
    public AdminSettings withTls(SSLContext context) {
        return new AdminSettings(bindAddress, port, adminToken, readToken, metricsOpen, context);
    }

    /** The {@code coordinator.admin.*} options, secret references resolved from the process environment. */
    public static AdminSettings fromConfig(ReadableConfig config) {
        return fromConfig(config, System::getenv);
    }

    /**
     * The {@code coordinator.admin.*} options with {@code env} for {@code env:} references. A
     * reference that cannot be read, equal tokens, or a keystore that does not open fail here, with
     * the option's name and never its value.
     */
    public static AdminSettings fromConfig(ReadableConfig config, Function<String, String> env) {
        String admin = secret(config, CoordinatorOptions.ADMIN_TOKEN.key(),
                config.getOptional(CoordinatorOptions.ADMIN_TOKEN), env);
        String read = secret(config, CoordinatorOptions.ADMIN_READ_TOKEN.key(),
                config.getOptional(CoordinatorOptions.ADMIN_READ_TOKEN), env);
        SSLContext tls = null;
        Optional<String> keystore = config.getOptional(CoordinatorOptions.ADMIN_TLS_KEYSTORE).filter(s -> !s.isBlank());
        Optional<String> storePassword = config.getOptional(CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD);
        Optional<String> keyPassword = config.getOptional(CoordinatorOptions.ADMIN_TLS_KEY_PASSWORD);
        if (keystore.isPresent()) {
            if (storePassword.isEmpty()) {
                throw new IllegalArgumentException("coordinator.admin.tls.keystore is set: it needs "
                        + "coordinator.admin.tls.keystore-password too");
            }
            String pass = secret(config, CoordinatorOptions.ADMIN_TLS_KEYSTORE_PASSWORD.key(), storePassword, env);
            String keyPass = secret(config, CoordinatorOptions.ADMIN_TLS_KEY_PASSWORD.key(), keyPassword, env);
            tls = AdminTls.serverContext(Path.of(keystore.get()), pass.toCharArray(),
                    keyPass == null ? null : keyPass.toCharArray());
        } else if (storePassword.isPresent() || keyPassword.isPresent()) {
            throw new IllegalArgumentException("coordinator.admin.tls.keystore-password or key-password is set "
                    + "without coordinator.admin.tls.keystore");
        }
        return new AdminSettings(config.get(CoordinatorOptions.ADMIN_BIND), config.get(CoordinatorOptions.ADMIN_PORT),
                admin, read, config.get(CoordinatorOptions.ADMIN_METRICS_OPEN), tls);
    }

    private static String secret(ReadableConfig config, String key, Optional<String> reference,
            Function<String, String> env) {
        if (reference.isEmpty()) {
            return null;
        }
        try {
            return Secrets.resolve(reference.get(), env);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(key + ": " + e.getMessage());
        }
    }

    /** A token goes into an HTTP header: no control characters, no surrounding white space. */
    private static void checkToken(String key, String token) {
        if (!token.equals(token.strip())) {
            throw new IllegalArgumentException(key + " must not start or end with white space");
        }
        for (int i = 0; i < token.length(); i++) {
            char ch = token.charAt(i);
            if (ch < 0x20 || ch == 0x7f) {
                throw new IllegalArgumentException(key + " must not contain control characters");
            }
        }
    }

    public String bindAddress() {
        return bindAddress;
    }

    public int port() {
        return port;
    }

    String adminToken() {
        return adminToken;
    }

    String readToken() {
        return readToken;
    }

    public boolean metricsOpen() {
        return metricsOpen;
    }

    /** The server's TLS context, or null for plain HTTP. */
    public SSLContext tls() {
        return tls;
    }

    @Override
    public String toString() {
        return "AdminSettings[" + (tls == null ? "http" : "https") + "://" + bindAddress + ":" + port
                + ", read token " + (readToken == null ? "none" : "set") + ", /metrics "
                + (metricsOpen ? "open" : "behind a token") + "]";
    }
}
