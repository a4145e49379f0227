package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Prometheus (the Debian package's binary) with the coordinator job of
 * deploy/prometheus/prometheus.yml, its target and token file pointed at this test's, scrapes
 * the coordinator's /metrics over HTTPS with the read token (the config's commented TLS lines
 * switched on). Fails (does not skip) on CI when Prometheus is missing.
 */
class PrometheusScrapeTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static Path prometheusBinary() {
        String configured = System.getenv("PROMETHEUS_BIN");
        if (configured != null && Files.isExecutable(Path.of(configured))) {
            return Path.of(configured);
        }
        for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
            Path p = Path.of(dir, "prometheus");
            if (Files.isExecutable(p)) {
                return p;
            }
        }
        return null;
    }

    static Path repositoryRoot() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.isRegularFile(p.resolve("deploy/prometheus/prometheus.yml"))) {
                return p;
            }
        }
        throw new IllegalStateException("deploy/prometheus/prometheus.yml not found above the working directory");
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    @Test
    void theDeployedScrapeConfigReadsTheCoordinatorWithItsReadTokenOverTls(@TempDir Path dir) throws Exception {
        Path prometheus = prometheusBinary();
        String missing = "the prometheus binary (apt-get install -y prometheus, or set PROMETHEUS_BIN)";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            assertThat(prometheus).as(missing).isNotNull();
        }
        Assumptions.assumeTrue(prometheus != null, "not run here: needs " + missing);

        TestKeystores keys = TestKeystores.create(dir);
        Path tokenFile = Files.writeString(dir.resolve("coordinator-read-token"), "scrape-read-token\n");
        FakeCluster cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 400, 0);
        Coordinator coordinator = new Coordinator(new Configuration(), cluster, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        Process server = null;
        try (AdminServer admin = new AdminServer(AdminSettings.of("127.0.0.1", 0, "scrape-admin-token")
                .withReadToken("scrape-read-token").withTls(keys.serverContext()), coordinator, null)) {
            String deployed = Files.readString(repositoryRoot().resolve("deploy/prometheus/prometheus.yml"));
            String config = deployed
                    .replace("credentials_file: /etc/prometheus/coordinator-read-token", "credentials_file: " + tokenFile)
                    .replace("targets: ['localhost:8090']", "targets: ['127.0.0.1:" + admin.port() + "']")
                    .replace("# scheme: https", "scheme: https")
                    .replace("# tls_config:", "tls_config:")
                    .replace("#   ca_file: /etc/prometheus/coordinator-ca.pem", "  ca_file: " + keys.certificatePem())
                    .replace("scrape_interval: 5s", "scrape_interval: 1s")
                    .replace("scrape_timeout: 4s", "scrape_timeout: 1s");
            assertThat(config).contains("127.0.0.1:" + admin.port(), "credentials_file: " + tokenFile,
                    "scheme: https", "ca_file: " + keys.certificatePem());
            Path configFile = Files.writeString(dir.resolve("prometheus.yml"), config);
            int port = freePort();
            server = new ProcessBuilder(prometheus.toString(), "--config.file=" + configFile,
                    "--storage.tsdb.path=" + dir.resolve("data"), "--web.listen-address=127.0.0.1:" + port,
                    "--log.level=warn")
                    .redirectErrorStream(true).redirectOutput(dir.resolve("prometheus.log").toFile()).start();
            HttpClient http = HttpClient.newHttpClient();
            String api = "http://127.0.0.1:" + port;
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            JsonNode target = null;
            boolean scraped = false;
            while (System.nanoTime() < deadline && !scraped) {
                assertThat(server.isAlive()).as("prometheus exited: " + Files.readString(dir.resolve("prometheus.log")))
                        .isTrue();
                Thread.sleep(500);
                try {
                    target = coordinatorTarget(http, api);
                    scraped = target != null && target.path("health").asText().equals("up")
                            && !query(http, api, "coordinator_plans_published_total{job=\"coordinator\"}").isEmpty();
                } catch (IOException e) {
                    // not listening yet
                }
            }
            assertThat(scraped).as("coordinator target: %s; log: %s", target,
                    Files.readString(dir.resolve("prometheus.log"))).isTrue();
            assertThat(target.path("scrapeUrl").asText()).startsWith("https://127.0.0.1:" + admin.port() + "/metrics");
            assertThat(query(http, api, "coordinator_paused{job=\"coordinator\"}").get(0).path("value").get(1).asText())
                    .isEqualTo("0");
        } finally {
            if (server != null) {
                server.destroy();
                if (!server.waitFor(10, TimeUnit.SECONDS)) {
                    server.destroyForcibly();
                }
            }
        }
    }

    private static JsonNode coordinatorTarget(HttpClient http, String api) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(api + "/api/v1/targets")).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            return null;
        }
        for (JsonNode t : JSON.readTree(r.body()).path("data").path("activeTargets")) {
            if (t.path("labels").path("job").asText().equals("coordinator")) {
                return t;
            }
        }
        return null;
    }

    private static java.util.List<JsonNode> query(HttpClient http, String api, String expr) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(api + "/api/v1/query?query="
                + URLEncoder.encode(expr, StandardCharsets.UTF_8))).GET().build(), HttpResponse.BodyHandlers.ofString());
        java.util.List<JsonNode> out = new java.util.ArrayList<>();
        JSON.readTree(r.body()).path("data").path("result").forEach(out::add);
        return out;
    }
}
