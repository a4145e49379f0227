package io.flinkgpu.contract.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SecretsAndHmacTest {
    private static final byte[] KEY = "0123456789abcdef-key".getBytes(StandardCharsets.UTF_8);

    @Test
    void resolvesFilesEnvironmentAndLiterals(@TempDir Path dir) throws Exception {
        Path f = dir.resolve("secret");
        Files.writeString(f, "s3cret\n");
        assertThat(Secrets.resolve("file:" + f)).isEqualTo("s3cret");
        assertThat(Secrets.resolve("env:X", Map.of("X", "from-env")::get)).isEqualTo("from-env");
        assertThat(Secrets.resolve("plain")).isEqualTo("plain");
    }

    @Test
    void anUnreadableReferenceNamesTheReferenceNotASecret(@TempDir Path dir) {
        assertThatThrownBy(() -> Secrets.resolve("file:" + dir.resolve("missing")))
                .hasMessageContaining("missing");
        assertThatThrownBy(() -> Secrets.resolve("env:NOPE", n -> null)).hasMessageContaining("NOPE");
    }

    @Test
    void prefixesAreStripped() {
        assertThat(Secrets.withPrefix(Map.of("a.b.c", "1", "a.b.", "2", "x", "3"), "a.b."))
                .containsExactly(Map.entry("c", "1"));
    }

    @Test
    void signaturesVerifyOnlyWithTheSameKeyAndBytes() {
        byte[] msg = "plan".getBytes(StandardCharsets.UTF_8);
        String sig = Hmac.sign(KEY, msg);
        assertThat(Hmac.verify(KEY, sig, msg)).isTrue();
        assertThat(Hmac.verify(KEY, sig, "plan!".getBytes(StandardCharsets.UTF_8))).isFalse();
        assertThat(Hmac.verify("another-key-0123456".getBytes(StandardCharsets.UTF_8), sig, msg)).isFalse();
        assertThat(Hmac.verify(KEY, null, msg)).isFalse();
        assertThat(Hmac.verify(KEY, "garbage", msg)).isFalse();
    }

    @Test
    void shortKeysAreRefused() {
        assertThatThrownBy(() -> Hmac.sign("short".getBytes(StandardCharsets.UTF_8), new byte[1]))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
