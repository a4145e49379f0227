package io.flinkgpu.coordinator.service;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.collect.MetricCollector;
import io.flinkgpu.coordinator.realize.PrintingPlanRealizer;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code coordinator run | plan --dry-run | api}: see docs/COORDINATOR.md. */
@Command(name = "coordinator", mixinStandardHelpOptions = true,
        description = "Scheduler coordinator: Flink metrics -> DRF placement -> plans on the control topic.",
        subcommands = {CoordinatorMain.Run.class, CoordinatorMain.Plan.class, CoordinatorMain.Api.class,
            CoordinatorMain.Options.class, RolloutCommand.class})
public final class CoordinatorMain {

    public static void main(String[] args) {
        System.exit(new CommandLine(new CoordinatorMain()).execute(args));
    }

    /** Options shared by the commands that read the configuration. */
    static class ConfigArgs {
        @Option(names = "--config-dir", description = "Directory with a config.yaml (Flink's format).")
        Path configDir;

        @Option(names = "-D", description = "key=value, overriding config.yaml.", mapFallbackValue = "")
        Map<String, String> overrides = new LinkedHashMap<>();

        Configuration configuration() {
            Configuration c = configDir == null ? new Configuration()
                    : GlobalConfiguration.loadConfiguration(configDir.toString());
            Configuration o = Configuration.fromMap(overrides);
            c.addAll(o);
            return c;
        }
    }

    @Command(name = "run", description = "Run the control loop, the admin API and /metrics until stopped.")
    static final class Run implements java.util.concurrent.Callable<Integer> {
        @CommandLine.Mixin
        ConfigArgs args = new ConfigArgs();

        @Override
        public Integer call() throws Exception {
            try (CoordinatorService service = CoordinatorService.start(args.configuration())) {
                if (service.adminPort() >= 0) {
                    System.out.println("admin API and /metrics on " + service.adminScheme() + " port " + service.adminPort());
                }
                CountDownLatch stop = new CountDownLatch(1);
                Runtime.getRuntime().addShutdownHook(new Thread(stop::countDown));
                stop.await();
            }
            return 0;
        }
    }

    @Command(name = "plan", description = "Collect twice, plan, and print the plan (with --dry-run nothing is published or stored).")
    static final class Plan implements java.util.concurrent.Callable<Integer> {
        @CommandLine.Mixin
        ConfigArgs args = new ConfigArgs();

        @Option(names = "--dry-run", description = "Print the plan instead of publishing it.")
        boolean dryRun;

        @Option(names = "--window", defaultValue = "5s", description = "Time between the two collections that rates are measured over (default ${DEFAULT-VALUE}).")
        String window;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        @Override
        public Integer call() throws Exception {
            if (!dryRun) {
                spec.commandLine().getErr().println("plans are published only by 'run'; use 'plan --dry-run'");
                return 2;
            }
            return dryRun(args.configuration(), Duration.ofMillis(org.apache.flink.util.TimeUtils.parseDuration(window)
                    .toMillis()), System.out);
        }
    }

    /** One dry-run plan on a fresh in-memory state; prints the control message (or why there is none). */
    static int dryRun(Configuration config, Duration window, PrintStream out) throws InterruptedException {
        try (StateStore store = new InMemoryStateStore()) {
            Coordinator coordinator = new Coordinator(config, collector(config), new PrintingPlanRealizer(out), store,
                    new CoordinatorMetrics(), Clock.systemUTC());
            Coordinator.CycleResult first = coordinator.runOnce(true);
            if (first.skipped() != null && first.demand() == null) {
                out.println("no plan: " + first.skipped());
                return 1;
            }
            Thread.sleep(window.toMillis());
            Coordinator.CycleResult second = coordinator.runOnce(true);
            if (second.demand() != null) {
                second.demand().models().values().forEach(m -> out.println("# DEMAND " + m.model() + ": " + m.reason()));
            }
            if (second.placement() != null) {
                second.placement().decisions().forEach(d -> out.println("# " + d.action() + " "
                        + (d.model() == null ? "" : d.model()) + (d.device() == null ? "" : "@" + d.device()) + ": "
                        + d.reason()));
            }
            return second.skipped() != null && second.demand() == null ? 1 : 0;
        }
    }

    static MetricCollector collector(org.apache.flink.configuration.ReadableConfig config) {
        return new MetricCollector(config.get(CoordinatorOptions.REST_URL), config.get(CoordinatorOptions.JOB_ID),
                config.get(CoordinatorOptions.INFERENCE_VERTEX), config.get(CoordinatorOptions.REST_TIMEOUT),
                Clock.systemUTC(), config.get(CoordinatorOptions.METRICS_SETTLE));
    }

    @Command(name = "api", description = "Call the admin API, e.g. 'api GET /api/decisions' or 'api PUT /api/tenants/shop {\"weight\":2}'. "
            + "The token comes from --token, --token-file or the environment variable " + Api.TOKEN_ENV + ".")
    static final class Api implements java.util.concurrent.Callable<Integer> {
        static final String TOKEN_ENV = "COORDINATOR_TOKEN";

        @Option(names = "--url", defaultValue = "http://127.0.0.1:8090", description = "Admin API base URL, http:// or https:// (default ${DEFAULT-VALUE}).")
        String url;

        @Option(names = "--token", description = "Bearer token (visible in the process list: prefer --token-file or " + TOKEN_ENV + ").")
        String token;

        @Option(names = "--token-file", description = "File holding the bearer token (one line).")
        Path tokenFile;

        @Option(names = "--truststore", description = "Truststore (PKCS12 or JKS) with the admin API's certificate or its CA, for https.")
        Path truststore;

        @Option(names = "--truststore-password", description = "Password of --truststore: file:/path, env:NAME or the password itself.")
        String truststorePassword;

        @Option(names = "--cacert", description = "PEM file with the admin API's certificate or its CA, for https (instead of --truststore).")
        Path cacert;

        @Option(names = "--timeout", defaultValue = "30s", description = "Connect and request timeout (default ${DEFAULT-VALUE}).")
        String timeout;

        @Parameters(index = "0", description = "GET, POST, PUT or DELETE")
        String method;

        @Parameters(index = "1", description = "Path, e.g. /api/plan")
        String path;

        @Parameters(index = "2", arity = "0..1", description = "JSON body")
        String body;

        @CommandLine.Spec
        CommandLine.Model.CommandSpec spec;

        /** The process environment; tests set another. */
        java.util.function.Function<String, String> env = System::getenv;

        @Override
        public Integer call() throws Exception {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            String bearer;
            javax.net.ssl.SSLContext tls;
            URI target;
            Duration limit;
            try {
                bearer = token();
                tls = trust();
                target = URI.create(url + path);
                if (target.getScheme() == null || !target.getScheme().matches("https?") || target.getHost() == null) {
                    throw new IllegalArgumentException("--url must be http://host:port or https://host:port");
                }
                limit = org.apache.flink.util.TimeUtils.parseDuration(timeout);
            } catch (IllegalArgumentException e) {
                err.println(e.getMessage());
                err.flush();
                return 2;
            }
            HttpClient.Builder client = HttpClient.newBuilder().connectTimeout(limit);
            if (tls != null) {
                client.sslContext(tls);
            }
            HttpRequest request = HttpRequest.newBuilder(target)
                    .timeout(limit)
                    .header("Authorization", "Bearer " + bearer)
                    .header("Content-Type", "application/json")
                    .method(method.toUpperCase(java.util.Locale.ROOT), body == null
                            ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body))
                    .build();
            try {
                HttpResponse<String> response = client.build().send(request, HttpResponse.BodyHandlers.ofString());
                out.println(response.body());
                out.flush();
                return response.statusCode() / 100 == 2 ? 0 : 1;
            } catch (java.io.IOException e) {
                err.println("cannot call " + url + ": " + e.getClass().getSimpleName()
                        + (e.getMessage() == null ? "" : " " + e.getMessage()));
                err.flush();
                return 1;
            }
        }

        /** --token, else --token-file, else $COORDINATOR_TOKEN; exactly one of the options. */
        String token() {
            if (token != null && tokenFile != null) {
                throw new IllegalArgumentException("give --token or --token-file, not both");
            }
            String t = token != null ? token
                    : tokenFile != null ? io.flinkgpu.contract.security.Secrets.resolve("file:" + tokenFile, env)
                    : env.apply(TOKEN_ENV);
            if (t == null || t.isBlank()) {
                throw new IllegalArgumentException("no token: give --token-file FILE, set " + TOKEN_ENV
                        + ", or --token TOKEN");
            }
            return t.strip();
        }

        /** The SSL context of --truststore or --cacert, or null (the JDK's default trust). */
        javax.net.ssl.SSLContext trust() {
            if (truststore != null && cacert != null) {
                throw new IllegalArgumentException("give --truststore or --cacert, not both");
            }
            if (truststore == null && cacert == null) {
                if (truststorePassword != null) {
                    throw new IllegalArgumentException("--truststore-password without --truststore");
                }
                return null;
            }
            try {
                java.security.KeyStore trusted;
                if (truststore != null) {
                    char[] pass = truststorePassword == null ? null
                            : io.flinkgpu.contract.security.Secrets.resolve(truststorePassword, env).toCharArray();
                    trusted = io.flinkgpu.coordinator.admin.AdminTls.load(truststore, pass, "--truststore",
                            "--truststore-password");
                } else {
                    trusted = pemTrust(cacert);
                }
                javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
                        javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trusted);
                javax.net.ssl.SSLContext ctx = javax.net.ssl.SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                return ctx;
            } catch (java.security.GeneralSecurityException e) {
                throw new IllegalArgumentException("cannot use the trusted certificates: " + e.getClass().getSimpleName());
            }
        }

        private static java.security.KeyStore pemTrust(Path pem) throws java.security.GeneralSecurityException {
            java.util.Collection<? extends java.security.cert.Certificate> certs;
            try (java.io.InputStream in = java.nio.file.Files.newInputStream(pem)) {
                certs = java.security.cert.CertificateFactory.getInstance("X.509").generateCertificates(in);
            } catch (java.io.IOException e) {
                throw new IllegalArgumentException("--cacert " + pem + " is not a readable file");
            } catch (java.security.cert.CertificateException e) {
                throw new IllegalArgumentException("--cacert " + pem + " holds no PEM certificate");
            }
            if (certs.isEmpty()) {
                throw new IllegalArgumentException("--cacert " + pem + " holds no PEM certificate");
            }
            java.security.KeyStore ks = java.security.KeyStore.getInstance(java.security.KeyStore.getDefaultType());
            try {
                ks.load(null, null);
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
            int i = 0;
            for (java.security.cert.Certificate c : certs) {
                ks.setCertificateEntry("cacert-" + i++, c);
            }
            return ks;
        }
    }

    @Command(name = "options", description = "List every configuration option with its default.")
    static final class Options implements Runnable {
        @Override
        public void run() {
            CoordinatorOptions.all().forEach((k, o) -> System.out.println(k + " = "
                    + (!o.hasDefaultValue() ? "(none)" : o.defaultValue() instanceof Duration d
                            ? org.apache.flink.util.TimeUtils.formatWithHighestUnit(d) : o.defaultValue())
                    + "\n    " + CoordinatorOptions.describe(o)));
        }
    }
}
