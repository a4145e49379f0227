package io.flinkgpu.coordinator.admin;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A server keystore for 127.0.0.1/localhost made by the JDK's own keytool (EC P-256, valid two
 * days), its certificate as PEM and a PKCS12 truststore holding it.
 */
public record TestKeystores(Path keystore, String keystorePassword, Path certificatePem, Path truststore,
        String truststorePassword) {

    public static TestKeystores create(Path dir) throws IOException, InterruptedException {
        Path ks = dir.resolve("admin.p12");
        Path pem = dir.resolve("admin.pem");
        Path ts = dir.resolve("trust.p12");
        String pass = "ks-pass-4711";
        String trustPass = "ts-pass-0815";
        keytool("-genkeypair", "-alias", "admin", "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=localhost", "-ext", "SAN=dns:localhost,ip:127.0.0.1", "-validity", "2",
                "-storetype", "PKCS12", "-keystore", ks.toString(), "-storepass", pass, "-keypass", pass);
        keytool("-exportcert", "-rfc", "-alias", "admin", "-keystore", ks.toString(), "-storepass", pass,
                "-file", pem.toString());
        keytool("-importcert", "-noprompt", "-alias", "admin", "-file", pem.toString(), "-storetype", "PKCS12",
                "-keystore", ts.toString(), "-storepass", trustPass);
        for (Path p : List.of(ks, pem, ts)) {
            if (!Files.isRegularFile(p)) {
                throw new IOException("keytool wrote no " + p.getFileName());
            }
        }
        return new TestKeystores(ks, pass, pem, ts, trustPass);
    }

    /** A client context trusting only this certificate. */
    public SSLContext clientContext() throws Exception {
        KeyStore trusted = KeyStore.getInstance(truststore.toFile(), truststorePassword.toCharArray());
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trusted);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }

    /** The server context, as the coordinator builds it. */
    public SSLContext serverContext() {
        return AdminTls.serverContext(keystore, keystorePassword.toCharArray(), null);
    }

    private static void keytool(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("keytool " + args[0] + " failed: " + output);
        }
    }
}
