package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
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

    private final HttpClient http = HttpClient.newHttpClient();
    private FakeCluster cluster;
    private Coordinator coordinator;
    private AdminServer server;
    private final java.util.List<String> rescaled = new java.util.ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 400, 0);
        coordinator = new Coordinator(new Configuration(), cluster, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        server = new AdminServer("127.0.0.1", 0, TOKEN, coordinator,
                (job, vertex, n) -> rescaled.add(job + "/" + vertex + "=" + n));
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
            {"not json", "not JSON"}, {"[1]", "JSON object"}};
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
    }

    @Test
    void servesPrometheusMetricsWithoutAToken() throws Exception {
        HttpResponse<String> r = call("GET", "/metrics", null, null);
        assertThat(r.statusCode()).isEqualTo(200);
        assertThat(r.headers().firstValue("Content-Type")).hasValueSatisfying(v -> assertThat(v).startsWith("text/plain"));
        assertThat(r.body()).contains("# TYPE coordinator_plans_published_total counter", "coordinator_moves_total 0",
                "coordinator_decision_latency_seconds_count");
    }

    @Test
    void refusesToStartWithoutAToken() {
        assertThatThrownBy(() -> new AdminServer("127.0.0.1", 0, " ", coordinator))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("coordinator.admin.token");
    }
}
