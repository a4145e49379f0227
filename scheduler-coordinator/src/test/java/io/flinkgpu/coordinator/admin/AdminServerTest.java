package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class AdminServerTest {
    static final String TOKEN = "s3cret-token";
    static final String READ_TOKEN = "read-only-token";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newHttpClient();
    private FakeCluster cluster;
    private Coordinator coordinator;
    private AdminServer server;
    private final java.util.List<String> rescaled = new java.util.ArrayList<>();
    /** Thrown by the rescaler where set: an IOException (Flink refused) or a RuntimeException (a bug). */
    private volatile Exception rescaleFailure;

    @BeforeEach
    void start() throws Exception {
        cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 400, 0);
        coordinator = new Coordinator(new Configuration(), cluster, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        server = new AdminServer(AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(READ_TOKEN), coordinator,
                (job, vertex, n) -> {
                    Exception f = rescaleFailure;
                    if (f instanceof IOException io) {
                        throw io;
                    }
                    if (f instanceof RuntimeException re) {
                        throw re;
                    }
                    rescaled.add(job + "/" + vertex + "=" + n);
                });
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void refusesRequestsWithoutTheRightBearerToken() throws Exception {
        for (String path : new String[] {"/api/status", "/api/plan", "/api/decisions", "/api/tenants"}) {
            assertThat(call("GET", path, null, null).statusCode()).as(path).isEqualTo(401);
            assertThat(call("GET", path, null, "wrong").statusCode()).as(path).isEqualTo(401);
        }
        HttpResponse<String> r = call("POST", "/api/pause", null, null);
        assertThat(r.statusCode()).isEqualTo(401);
        assertThat(r.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        assertThat(coordinator.store().paused()).isFalse();
    }

    @Test
    void listsDevicesModelsPlacementsPlanAndDecisions() throws Exception {
        assertThat(call("GET", "/api/plan", null, TOKEN).statusCode()).isEqualTo(404);
        coordinator.runOnce(false);
        cluster.advance(10_000);
        coordinator.runOnce(false);
        assertThat(call("GET", "/api/devices", null, TOKEN).body()).contains("sim:0", "sim:1", "memoryTotalBytes");
        assertThat(call("GET", "/api/models", null, TOKEN).body()).contains("\"m\"", "deviceSecondsPerSecond");
        assertThat(call("GET", "/api/placements", null, TOKEN).body()).contains("\"m\"");
        HttpResponse<String> plan = call("GET", "/api/plan", null, TOKEN);
        assertThat(plan.statusCode()).isEqualTo(200);
        assertThat(plan.body()).contains("\"epoch\" : 1", "\"routes\"");
        HttpResponse<String> decisions = call("GET", "/api/decisions?limit=5", null, TOKEN);
        assertThat(decisions.body()).contains("PUBLISH", "reason");
        assertThat(call("GET", "/api/status", null, TOKEN).body()).contains("\"epoch\" : 1");
    }

    @Test
    void setsTenantWeightsAndValidatesThem() throws Exception {
        assertThat(call("PUT", "/api/tenants/shop", "{\"weight\": 3}", TOKEN).statusCode()).isEqualTo(200);
        assertThat(coordinator.store().tenantWeights()).containsEntry("shop", 3.0);
        String[][] bad = {{"{\"weight\": 0}", "weight must be"}, {"{\"weight\": -1}", "weight must be"},
            {"{\"weight\": \"x\"}", "weight must be"}, {"{}", "weight must be"}, {"{\"weight\": 1e9}", "weight must be"},
            {"not json", "malformed JSON body"}, {"[1]", "JSON object"}};
        for (String[] b : bad) {
            HttpResponse<String> r = call("PUT", "/api/tenants/shop", b[0], TOKEN);
            assertThat(r.statusCode()).as(b[0]).isEqualTo(400);
            assertThat(r.body()).as(b[0]).contains(b[1]);
        }
        assertThat(call("PUT", "/api/tenants/..%2F", "{\"weight\": 1}", TOKEN).statusCode()).isEqualTo(400);
        assertThat(coordinator.store().tenantWeights()).containsEntry("shop", 3.0).hasSize(1);
    }

    @Test
    void pausesResumesDeploysAndUndeploys() throws Exception {
        assertThat(call("POST", "/api/pause", null, TOKEN).statusCode()).isEqualTo(200);
        assertThat(coordinator.store().paused()).isTrue();
        assertThat(call("POST", "/api/resume", null, TOKEN).statusCode()).isEqualTo(200);
        assertThat(coordinator.store().paused()).isFalse();

        assertThat(call("POST", "/api/models", "{\"name\":\"resnet\",\"version\":\"2\",\"memory_bytes\":1048576}", TOKEN)
                .statusCode()).isEqualTo(200);
        assertThat(coordinator.store().models().get("resnet").deployed()).isTrue();
        assertThat(call("POST", "/api/models", "{\"name\":\"../x\"}", TOKEN).statusCode()).isEqualTo(400);
        assertThat(call("POST", "/api/models", "{\"name\":\"x\",\"version\":\"v1\"}", TOKEN).body())
                .contains("version must be a positive integer");
        assertThat(call("DELETE", "/api/models/resnet", null, TOKEN).statusCode()).isEqualTo(200);
        assertThat(coordinator.store().models().get("resnet").deployed()).isFalse();
        assertThat(call("DELETE", "/api/models/nope", null, TOKEN).statusCode()).isEqualTo(404);
        assertThat(call("GET", "/api/nothing", null, TOKEN).statusCode()).isEqualTo(404);
    }

    @Test
    void rescalesTheInferenceVertexOfTheCollectedJob() throws Exception {
        assertThat(call("PUT", "/api/parallelism", "{\"parallelism\": 3}", TOKEN).statusCode()).isEqualTo(409);
        coordinator.runOnce(false);
        assertThat(call("PUT", "/api/parallelism", "{\"parallelism\": 0}", TOKEN).statusCode()).isEqualTo(400);
        assertThat(call("PUT", "/api/parallelism", "{\"parallelism\": \"3\"}", TOKEN).statusCode()).isEqualTo(400);
        assertThat(call("PUT", "/api/parallelism", "{\"parallelism\": 3}", null).statusCode()).isEqualTo(401);
        HttpResponse<String> r = call("PUT", "/api/parallelism", "{\"parallelism\": 3}", TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(rescaled).containsExactly("job/vertex=3");
        assertThat(coordinator.store().recentDecisions(1)).singleElement()
                .satisfies(d -> assertThat(d.reason()).contains("inference parallelism 2 -> 3"));
        // recorded as a rescale, so the automatic step waits its interval after it, even across a restart
        assertThat(coordinator.store().rescales()).singleElement().satisfies(x -> {
            assertThat(x.from()).isEqualTo(2);
            assertThat(x.to()).isEqualTo(3);
        });
        assertThat(call("GET", "/api/rescales", null, READ_TOKEN).body().replaceAll("\\s", "")).contains("\"to\":3");
    }

    @Test
    void metricsNeedTheReadOrTheAdminTokenByDefault() throws Exception {
        for (String token : new String[] {null, "wrong", READ_TOKEN + "x"}) {
            HttpResponse<String> r = call("GET", "/metrics", null, token);
            assertThat(r.statusCode()).as(token).isEqualTo(401);
            assertThat(r.body()).as(token).doesNotContain("coordinator_");
            assertThat(r.headers().firstValue("WWW-Authenticate")).hasValueSatisfying(v -> assertThat(v).startsWith("Bearer"));
        }
        for (String token : new String[] {READ_TOKEN, TOKEN}) {
            HttpResponse<String> r = call("GET", "/metrics", null, token);
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
            assertThat(r.body()).contains("# TYPE coordinator_plans_published_total counter", "coordinator_moves_total 0",
                    "coordinator_decision_latency_seconds_count");
        }
        assertThat(call("POST", "/metrics", "x", TOKEN).statusCode()).isEqualTo(405);
        assertThat(call("GET", "/metricsfoo", null, TOKEN).statusCode()).isEqualTo(404);
    }

    @Test
    void servesMetricsWithoutATokenOnlyWhenOpened() throws Exception {
        try (AdminServer open = new AdminServer(AdminSettings.of("127.0.0.1", 0, TOKEN).withMetricsOpen(true),
                coordinator, null)) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + open.port()
                    + "/metrics")).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertThat(r.statusCode()).isEqualTo(200);
            assertThat(r.body()).contains("coordinator_plans_published_total");
            // the flag opens /metrics, not the API
            assertThat(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + open.port() + "/api/status"))
                    .GET().build(), HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(401);
        }
    }

    @Test
    void theReadTokenReadsButChangesNothing() throws Exception {
        coordinator.runOnce(false);
        for (String path : new String[] {"/api/status", "/api/devices", "/api/models", "/api/placements",
            "/api/decisions", "/api/tenants", "/api/tenants/usage"}) {
            assertThat(call("GET", path, null, READ_TOKEN).statusCode()).as(path).isEqualTo(200);
        }
        String[][] writes = {{"PUT", "/api/tenants/shop", "{\"weight\": 3}"}, {"POST", "/api/pause", null},
            {"POST", "/api/resume", null}, {"POST", "/api/models", "{\"name\":\"resnet\"}"},
            {"DELETE", "/api/models/m", null}, {"PUT", "/api/parallelism", "{\"parallelism\": 3}"},
            {"DELETE", "/api/nothing", null}};
        for (String[] w : writes) {
            HttpResponse<String> r = call(w[0], w[1], w[2], READ_TOKEN);
            assertThat(r.statusCode()).as(w[0] + " " + w[1]).isEqualTo(403);
            assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
            assertThat(JSON.readTree(r.body()).path("error").asText()).as(w[1])
                    .isEqualTo("the read token allows GET only; " + w[0] + " needs the admin token");
            assertThat(call(w[0], w[1], w[2], "wrong").statusCode()).as(w[1]).isEqualTo(401);
            assertThat(call(w[0], w[1], w[2], null).statusCode()).as(w[1]).isEqualTo(401);
        }
        assertThat(coordinator.store().paused()).isFalse();
        assertThat(coordinator.store().tenantWeights()).isEmpty();
        assertThat(coordinator.store().models()).doesNotContainKey("resnet");
        assertThat(rescaled).isEmpty();
        // the admin token still does all of it
        assertThat(call("POST", "/api/pause", null, TOKEN).statusCode()).isEqualTo(200);
        assertThat(coordinator.store().paused()).isTrue();
    }

    @Test
    void anInternalErrorAnswersWithAReferenceAndNoExceptionText() throws Exception {
        coordinator.runOnce(false);
        rescaleFailure = new IllegalStateException("boom in org.example.Internal at line 42");
        java.util.List<String> logged = new java.util.concurrent.CopyOnWriteArrayList<>();
        org.apache.logging.log4j.core.Logger log = (org.apache.logging.log4j.core.Logger)
                org.apache.logging.log4j.LogManager.getLogger(AdminServer.class);
        org.apache.logging.log4j.core.appender.AbstractAppender capture =
                new org.apache.logging.log4j.core.appender.AbstractAppender("capture", null, null, true,
                        org.apache.logging.log4j.core.config.Property.EMPTY_ARRAY) {
                    @Override
                    public void append(org.apache.logging.log4j.core.LogEvent event) {
                        logged.add(event.getMessage().getFormattedMessage() + " | "
                                + (event.getThrown() == null ? "" : event.getThrown().toString()));
                    }
                };
        capture.start();
        log.addAppender(capture);
        HttpResponse<String> first;
        HttpResponse<String> second;
        try {
            first = call("PUT", "/api/parallelism", "{\"parallelism\": 3}", TOKEN);
            second = call("PUT", "/api/parallelism", "{\"parallelism\": 3}", TOKEN);
        } finally {
            log.removeAppender(capture);
        }
        // the log has the exception under the reference the caller got
        String reference = JSON.readTree(first.body()).path("reference").asText();
        assertThat(logged).anySatisfy(line -> assertThat(line).contains("reference " + reference,
                "PUT /api/parallelism", "java.lang.IllegalStateException: boom in org.example.Internal"));
        for (HttpResponse<String> r : java.util.List.of(first, second)) {
            assertThat(r.statusCode()).isEqualTo(500);
            JsonNode body = JSON.readTree(r.body());
            assertThat(body.size()).isEqualTo(2);
            assertThat(body.path("error").asText()).isEqualTo("internal error");
            assertThat(body.path("reference").asText()).matches("[0-9a-f]{16}");
            assertThat(r.body()).doesNotContain("IllegalStateException", "boom", "org.example", "Exception", "at ");
        }
        assertThat(JSON.readTree(first.body()).path("reference").asText())
                .isNotEqualTo(JSON.readTree(second.body()).path("reference").asText());
        assertThat(rescaled).isEmpty();
    }

    @Test
    void flinksRefusalIsABadGatewayWithAReferenceAndNotFlinksStackTrace() throws Exception {
        coordinator.runOnce(false);
        rescaleFailure = new IOException("PUT resource-requirements answered 500: {\"errors\":[\"org.apache.flink."
                + "runtime.rest.handler.RestHandlerException: nope\\n\\tat org.apache.flink.Foo.bar(Foo.java:1)\"]}");
        HttpResponse<String> r = call("PUT", "/api/parallelism", "{\"parallelism\": 3}", TOKEN);
        assertThat(r.statusCode()).isEqualTo(502);
        JsonNode body = JSON.readTree(r.body());
        assertThat(body.path("error").asText()).contains("Flink's REST API refused or failed the rescale");
        assertThat(body.path("reference").asText()).matches("[0-9a-f]{16}");
        assertThat(r.body()).doesNotContain("org.apache", "Exception", "Foo.java");
    }

    @Test
    void malformedJsonNamesAPositionButNoLibraryClassOrInput() throws Exception {
        String[] bodies = {"not json", "{\"weight\": 1", "{\"weight\": 1} trailing", "{\"weight\": 1, \"weight\": 2}",
            "{\"weight\": tru}", "{\"weight\": \"\\uZZZZ\"}", "{\"weight\": 01}", "\u0000"};
        for (String b : bodies) {
            HttpResponse<String> r = call("PUT", "/api/tenants/shop", b, TOKEN);
            assertThat(r.statusCode()).as(b).isEqualTo(400);
            String error = JSON.readTree(r.body()).path("error").asText();
            assertThat(error).as(b).matches("malformed JSON body( at line \\d+, column \\d+)?");
            assertThat(r.body()).as(b).doesNotContain("com.fasterxml", "jackson", "Exception", "Unrecognized",
                    "JsonToken", "`", "trailing", "tru");
        }
        assertThat(JSON.readTree(call("PUT", "/api/tenants/shop", "{\"weight\": 1", TOKEN).body()).path("error")
                .asText()).startsWith("malformed JSON body at line 1, column ");
        assertThat(coordinator.store().tenantWeights()).isEmpty();
    }

    @Test
    void unknownPathsAreNotFoundWithoutEchoingThem() throws Exception {
        for (String path : new String[] {"/", "/admin", "/api", "/favicon.ico"}) {
            HttpResponse<String> r = call("GET", path, null, null);
            assertThat(r.statusCode()).as(path).isEqualTo(404);
            assertThat(r.body()).as(path).isEqualTo("{\"error\":\"no such endpoint\"}");
        }
        HttpResponse<String> r = call("GET", "/api/nothing-%3Cscript%3E", null, TOKEN);
        assertThat(r.statusCode()).isEqualTo(404);
        assertThat(r.body()).isEqualTo("{\"error\":\"no such endpoint\"}");
        // unknown API paths need a token first: no probing without one
        assertThat(call("GET", "/api/nothing", null, null).statusCode()).isEqualTo(401);
    }

    @Test
    void refusesEqualAdminAndReadTokensWithoutSayingThem() {
        assertThatThrownBy(() -> AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(TOKEN))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("coordinator.admin.read-token must differ from coordinator.admin.token")
                .hasMessageNotContaining(TOKEN);
        assertThatThrownBy(() -> AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(" "))
                .hasMessageContaining("coordinator.admin.read-token");
        assertThatThrownBy(() -> AdminSettings.of("127.0.0.1", 0, " padded "))
                .hasMessageContaining("white space").hasMessageNotContaining("padded");
        assertThat(AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(READ_TOKEN).toString())
                .doesNotContain(TOKEN, READ_TOKEN).contains("read token set");
    }

    @Test
    void refusesToStartWithoutAToken() {
        assertThatThrownBy(() -> new AdminServer("127.0.0.1", 0, " ", coordinator))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("coordinator.admin.token");
    }
}
