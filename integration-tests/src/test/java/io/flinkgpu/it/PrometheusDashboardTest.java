package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.io.File;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real Prometheus server (the Debian package's binary, run by the test with
 * deploy/prometheus/prometheus.yml pointed at a free port) scrapes Flink's Prometheus reporter of
 * a running inference job (MiniCluster, in-process Kafka, real traffic including errors and dead
 * letters); every PromQL expression of the Grafana dashboard deploy/grafana/flink-gpu-inference.json
 * must return data through Prometheus's HTTP query API. Fails (does not skip) when Prometheus is
 * not installed: .ci/run installs it.
 */
class PrometheusDashboardTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int REPORTER_PORT = port();

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1)
            .setNumberSlotsPerTaskManager(2)
            .setConfiguration(reporterConfig())
            .build());

    private static int port() {
        try {
            return StandaloneCluster.freePort();
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Configuration reporterConfig() {
        Configuration c = new Configuration();
        c.setString("metrics.reporter.prom.factory.class", "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
        c.setString("metrics.reporter.prom.port", String.valueOf(REPORTER_PORT));
        return c;
    }

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
        Path debian = Path.of("/usr/bin/prometheus");
        return Files.isExecutable(debian) ? debian : null;
    }

    @Test
    void everyDashboardExpressionReturnsDataFromARealPrometheus() throws Exception {
        Path prometheus = prometheusBinary();
        String missing = "the prometheus binary (Debian package 'prometheus': apt-get install -y prometheus, as .ci/run "
                + "does; or set PROMETHEUS_BIN)";
        // CI installs it and must run this test; a developer machine with only JDK and Maven runs
        // everything else and says what this test needs.
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            assertThat(prometheus).as(missing).isNotNull();
        }
        Assumptions.assumeTrue(prometheus != null, "not run here: needs " + missing);
        Path root = FashionMnist.findRoot();
        FashionMnist images = FashionMnist.load(root);
        Path work = Files.createTempDirectory("fgi-prometheus-");
        Process server = null;
        JobClient job = null;
        EmbeddedKafka kafka = EmbeddedKafka.start();
        try {
            // the deploy/ scrape config, aimed at this test's reporter
            Path config = work.resolve("prometheus.yml");
            String scrape = Files.readString(root.resolve("deploy/prometheus/prometheus.yml"))
                    .replaceFirst("targets: \\[[^\\]]*\\]", "targets: ['127.0.0.1:" + REPORTER_PORT + "']")
                    .replace("scrape_interval: 5s", "scrape_interval: 1s")
                    .replace("scrape_timeout: 4s", "scrape_timeout: 1s");
            assertThat(scrape).contains("127.0.0.1:" + REPORTER_PORT);
            Files.writeString(config, scrape);
            int promPort = StandaloneCluster.freePort();
            server = new ProcessBuilder(prometheus.toString(), "--config.file=" + config,
                    "--storage.tsdb.path=" + work.resolve("data"), "--web.listen-address=127.0.0.1:" + promPort,
                    "--log.level=warn")
                    .redirectErrorStream(true).redirectOutput(work.resolve("prometheus.log").toFile()).start();
            Process started = server;
            Thread hook = new Thread(started::destroyForcibly);
            Runtime.getRuntime().addShutdownHook(hook);
            String api = "http://127.0.0.1:" + promPort;

            kafka.createTopics(2, "prom-requests", "prom-responses", "prom-dead-letter");
            Configuration jobConfig = new Configuration();
            jobConfig.set(InferenceJobOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
            jobConfig.set(InferenceJobOptions.REQUESTS_TOPIC, "prom-requests");
            jobConfig.set(InferenceJobOptions.RESPONSES_TOPIC, "prom-responses");
            jobConfig.set(InferenceJobOptions.DEAD_LETTER_TOPIC, "prom-dead-letter");
            jobConfig.set(InferenceJobOptions.GROUP_ID, "prom");
            jobConfig.set(InferenceJobOptions.STARTING_OFFSETS, "earliest");
            jobConfig.set(InferenceJobOptions.PARALLELISM, 2);
            jobConfig.set(GpuInferenceOptions.MODEL_REPOSITORY, root.resolve("models").toString());
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(2);
            InferenceJob.build(env, jobConfig);
            job = env.executeAsync("prometheus-dashboard");

            HttpClient http = HttpClient.newHttpClient();
            awaitReady(http, api + "/-/ready", server);

            try (RequestTraffic traffic = new RequestTraffic(kafka.bootstrapServers(), "prom-requests", "prom-responses",
                    "prom", 40, images)) {
                // errors by code: requests whose 1 ms deadline cannot be met (TIMEOUT / DEADLINE_INFEASIBLE),
                // and records that are no requests at all (dead letters)
                BinaryCodec codec = new BinaryCodec();
                java.util.function.IntFunction<List<ProducerRecord<byte[], byte[]>>> odd = round -> {
                    List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
                    for (int i = 0; i < 20; i++) {
                        InferenceRequest r = new InferenceRequest("late-" + round + "-" + i, RequestTraffic.MODEL,
                                null, List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(i))),
                                new RequestParameters(0, 1, "it"));
                        out.add(new ProducerRecord<>("x", r.id().getBytes(StandardCharsets.UTF_8),
                                codec.encodeRequest(r)));
                        out.add(new ProducerRecord<>("x", ("junk-" + round + "-" + i).getBytes(StandardCharsets.UTF_8),
                                "{\"id\":\"junk\"".getBytes(StandardCharsets.UTF_8)));
                    }
                    return out;
                };
                Thread.sleep(3000);
                KafkaTopics.produce(kafka.bootstrapServers(), "prom-requests", odd.apply(0));

                Map<String, String> expressions = dashboardExpressions(root.resolve("deploy/grafana/flink-gpu-inference.json"));
                assertThat(expressions).hasSizeGreaterThanOrEqualTo(20);
                Map<String, String> pending = new LinkedHashMap<>(expressions);
                long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
                int round = 0;
                while (!pending.isEmpty() && System.nanoTime() < deadline) {
                    traffic.checkHealthy();
                    Thread.sleep(2000);
                    if (++round % 5 == 0) {
                        // errors keep coming, as in production: a rate over the last 20 s needs errors in it on a
                        // slow machine too, where the first ones can fall out of the window before it is queried
                        KafkaTopics.produce(kafka.bootstrapServers(), "prom-requests", odd.apply(round));
                    }
                    pending.entrySet().removeIf(e -> {
                        try {
                            return hasData(http, api, e.getValue());
                        } catch (Exception ex) {
                            throw new IllegalStateException(e.getValue(), ex);
                        }
                    });
                }
                String log = Files.readString(work.resolve("prometheus.log"));
                assertThat(pending).as("dashboard expressions that returned no data (panel -> query); "
                        + "prometheus log:\n" + log).isEmpty();
                System.out.printf("all %d dashboard expressions returned data from Prometheus (%d requests answered)%n",
                        expressions.size(), traffic.answered.size());
            }
        } finally {
            if (job != null) {
                try {
                    job.cancel().get(30, TimeUnit.SECONDS);
                } catch (Exception e) {
                    // shutting down
                }
            }
            if (server != null) {
                server.destroy();
                if (!server.waitFor(10, TimeUnit.SECONDS)) {
                    server.destroyForcibly();
                }
            }
            kafka.close();
            StandaloneCluster.deleteQuietly(work);
        }
    }

    /** Every PromQL expression of the dashboard (panel title -> expression), Grafana variables filled in. */
    static Map<String, String> dashboardExpressions(Path dashboard) throws Exception {
        JsonNode d = JSON.readTree(dashboard.toFile());
        Map<String, String> out = new LinkedHashMap<>();
        List<JsonNode> panels = new ArrayList<>();
        d.path("panels").forEach(panels::add);
        for (int i = 0; i < panels.size(); i++) {
            JsonNode p = panels.get(i);
            p.path("panels").forEach(panels::add); // collapsed rows
            for (JsonNode t : p.path("targets")) {
                out.put(p.path("title").asText() + " [" + t.path("refId").asText() + "]", fillVariables(t.path("expr").asText()));
            }
        }
        for (JsonNode v : d.path("templating").path("list")) {
            if (v.path("type").asText().equals("query")) {
                Matcher m = Pattern.compile("label_values\\((.+),\\s*\\w+\\)").matcher(v.path("definition").asText());
                assertThat(m.matches()).as("variable %s", v.path("name").asText()).isTrue();
                out.put("variable $" + v.path("name").asText(), m.group(1));
            }
        }
        return out;
    }

    /** What Grafana substitutes: the rate interval (4 scrape intervals of 1 s, and then some) and "All" for $model. */
    static String fillVariables(String expr) {
        return expr.replace("$__rate_interval", "20s").replace("$model", ".*");
    }

    private static boolean hasData(HttpClient http, String api, String expr) throws Exception {
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(api + "/api/v1/query?query="
                + URLEncoder.encode(expr, StandardCharsets.UTF_8))).GET().build(), HttpResponse.BodyHandlers.ofString());
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("status").asText()).as("%s -> %s", expr, r.body()).isEqualTo("success");
        return body.path("data").path("result").size() > 0;
    }

    private static void awaitReady(HttpClient http, String url, Process server) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            assertThat(server.isAlive()).as("prometheus exited").isTrue();
            try {
                if (http.send(HttpRequest.newBuilder(URI.create(url)).GET().build(),
                        HttpResponse.BodyHandlers.discarding()).statusCode() == 200) {
                    return;
                }
            } catch (java.io.IOException e) {
                // not yet
            }
            Thread.sleep(200);
        }
        throw new AssertionError("prometheus not ready at " + url);
    }
}
