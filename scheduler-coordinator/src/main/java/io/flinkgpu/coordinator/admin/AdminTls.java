package io.flinkgpu.coordinator.admin;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.UnrecoverableKeyException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * The admin API's TLS: a server {@link SSLContext} from a PKCS12 keystore, offering only
 * {@link #PROTOCOLS}. Every failure is an {@link IllegalArgumentException} that names the option
 * and the file, never a password (the JDK's own messages and exceptions are not passed on).
 */
public final class AdminTls {
    /** The protocols the admin API offers, newest first. */
    static final List<String> PROTOCOLS = List.of("TLSv1.3", "TLSv1.2");

    private AdminTls() {}

    /**
     * The server context of {@code keystore} (PKCS12); {@code keyPassword} null: the keystore's
     * password (PKCS12 files written by keytool use one password for both).
     */
    public static SSLContext serverContext(Path keystore, char[] storePassword, char[] keyPassword) {
        KeyStore ks = load(keystore, storePassword,
                "coordinator.admin.tls.keystore", "coordinator.admin.tls.keystore-password");
        char[] keyPass = keyPassword == null ? storePassword : keyPassword;
        try {
            List<String> keys = new ArrayList<>();
            for (String alias : Collections.list(ks.aliases())) {
                if (ks.isKeyEntry(alias)) {
                    keys.add(alias);
                    try {
                        ks.getKey(alias, keyPass);
                    } catch (UnrecoverableKeyException e) {
                        throw new IllegalArgumentException("cannot read the private key '" + alias + "' of "
                                + keystore + ": wrong " + (keyPassword == null
                                        ? "coordinator.admin.tls.keystore-password (set coordinator.admin.tls.key-password "
                                                + "if the key has its own)"
                                        : "coordinator.admin.tls.key-password"));
                    }
                }
            }
            if (keys.isEmpty()) {
                throw new IllegalArgumentException("coordinator.admin.tls.keystore " + keystore
                        + " holds no private key (it needs the server's key and certificate chain)");
            }
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(ks, keyPass);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(kmf.getKeyManagers(), null, null);
            if (protocols(ctx).length == 0) {
                throw new IllegalArgumentException("this JVM supports none of " + PROTOCOLS + " for the admin API");
            }
            return ctx;
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS from coordinator.admin.tls.keystore " + keystore
                    + " (" + e.getClass().getSimpleName() + ")");
        }
    }

    /**
     * A keystore or truststore file (PKCS12, or any type the JDK recognises), failures named after
     * {@code fileOption} and {@code passwordOption}.
     */
    public static KeyStore load(Path file, char[] password, String fileOption, String passwordOption) {
        if (!Files.isRegularFile(file) || !Files.isReadable(file)) {
            throw new IllegalArgumentException(fileOption + " " + file + " is not a readable file");
        }
        try {
            return KeyStore.getInstance(file.toFile(), password);
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot open " + fileOption + " " + file + ": wrong " + passwordOption
                    + (e.getCause() instanceof UnrecoverableKeyException ? "" : ", or a damaged file"));
        } catch (GeneralSecurityException | RuntimeException e) {
            throw new IllegalArgumentException("cannot open " + fileOption + " " + file
                    + ": not a keystore (PKCS12) file (" + e.getClass().getSimpleName() + ")");
        }
    }

    /** {@link #PROTOCOLS} that {@code ctx} supports, in that order. */
    static String[] protocols(SSLContext ctx) {
        List<String> supported = Arrays.asList(ctx.getSupportedSSLParameters().getProtocols());
        return PROTOCOLS.stream().filter(supported::contains).toArray(String[]::new);
    }
}
