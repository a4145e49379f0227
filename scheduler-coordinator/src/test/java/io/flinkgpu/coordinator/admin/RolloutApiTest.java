package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.VersionSplit.VersionWeight;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.rollout.TwoVersions;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code /api/rollouts}: start, pause, resume, abort, status and remove, under the admin and read tokens. */
class RolloutApiTest {
    static final String TOKEN = "s3cret-token";
    static final String READ_TOKEN = "read-only-token";
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient http = HttpClient.newHttpClient();
    private final List<ControlMessage> published = new ArrayList<>();
    private Coordinator coordinator;
    private AdminServer server;

    @BeforeEach
    void start() throws Exception {
        Configuration c = new Configuration();
        // no warming phase: a rollout's first share goes out with its start
        c.set(io.flinkgpu.coordinator.CoordinatorOptions.WARM_BEFORE_ROUTE, false);
        start(c);
    }

    private void start(Configuration c) throws Exception {
        if (server != null) {
            server.close();
        }
        TwoVersions job = new TwoVersions("m");
        coordinator = new Coordinator(c, job, published::add, new InMemoryStateStore(), new CoordinatorMetrics(),
                job.clock());
        server = new AdminServer(AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(READ_TOKEN), coordinator, null);
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

    private JsonNode ok(String method, String path, String body) throws Exception {
        HttpResponse<String> r = call(method, path, body, TOKEN);
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        return JSON.readTree(r.body());
    }

    private List<VersionWeight> lastSplit() {
        return published.get(published.size() - 1).versionSplit("m").orElseThrow().versions();
    }

    @Test
    void startPauseResumeAbortAndRemoveARolloutEachPublishingItsSplit() throws Exception {
        JsonNode started = ok("POST", "/api/rollouts",
                "{\"model\": \"m\", \"from\": \"1\", \"to\": 2, \"steps\": [10, 30, 100]}");
        assertThat(started.path("state").asText()).isEqualTo("RUNNING");
        assertThat(started.path("step").asInt()).isEqualTo(1);
        assertThat(started.path("to_share_percent").asDouble()).isEqualTo(10);
        assertThat(started.path("describe").asText()).isEqualTo("rollout 1 -> 2: step 1 of 3 (10% to 2)");
        assertThat(started.path("split").path("versions").get(1).path("weight").asDouble()).isEqualTo(0.1);
        assertThat(lastSplit()).containsExactly(new VersionWeight("1", 0.9), new VersionWeight("2", 0.1));

        // the read token sees it, and may not change it
        HttpResponse<String> read = call("GET", "/api/rollouts/m", null, READ_TOKEN);
        assertThat(read.statusCode()).isEqualTo(200);
        assertThat(JSON.readTree(read.body()).path("from").asText()).isEqualTo("1");
        assertThat(JSON.readTree(call("GET", "/api/rollouts", null, READ_TOKEN).body())).hasSize(1);
        HttpResponse<String> refused = call("POST", "/api/rollouts/m/abort", null, READ_TOKEN);
        assertThat(refused.statusCode()).isEqualTo(403);
        assertThat(call("POST", "/api/rollouts/m/abort", null, null).statusCode()).isEqualTo(401);
        assertThat(coordinator.rollouts().get("m").orElseThrow().state().name()).isEqualTo("RUNNING");

        // one active rollout per model
        HttpResponse<String> twice = call("POST", "/api/rollouts", "{\"model\": \"m\", \"from\": \"1\", \"to\": \"3\"}",
                TOKEN);
        assertThat(twice.statusCode()).isEqualTo(409);
        assertThat(twice.body()).contains("has an active rollout");

        assertThat(ok("POST", "/api/rollouts/m/pause", null).path("state").asText()).isEqualTo("PAUSED");
        assertThat(call("POST", "/api/rollouts/m/pause", null, TOKEN).statusCode()).isEqualTo(409);
        assertThat(ok("POST", "/api/rollouts/m/resume", null).path("state").asText()).isEqualTo("RUNNING");
        int before = published.size();
        JsonNode aborted = ok("POST", "/api/rollouts/m/abort", null);
        assertThat(aborted.path("state").asText()).isEqualTo("ABORTED");
        assertThat(published).hasSize(before + 1);
        assertThat(lastSplit()).containsExactly(new VersionWeight("1", 1));

        assertThat(JSON.readTree(call("GET", "/api/decisions", null, TOKEN).body()).findValuesAsText("action"))
                .contains("ROLLOUT_START", "ROLLOUT_PAUSE", "ROLLOUT_RESUME", "ROLLOUT_ABORT", "PUBLISH");

        assertThat(ok("DELETE", "/api/rollouts/m", null).path("removed").path("state").asText()).isEqualTo("ABORTED");
        assertThat(published.get(published.size() - 1).versionSplits()).isEmpty();
        assertThat(call("GET", "/api/rollouts/m", null, TOKEN).statusCode()).isEqualTo(404);
        assertThat(JSON.readTree(call("GET", "/api/rollouts", null, TOKEN).body())).isEmpty();
    }

    @Test
    void withWarmBeforeRouteARolloutStartsByWarmingItsNewVersion() throws Exception {
        start(new Configuration());
        JsonNode started = ok("POST", "/api/rollouts", "{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\"}");
        assertThat(started.path("phase").asText()).isEqualTo("warming");
        assertThat(started.path("step").isNull()).isTrue();
        assertThat(started.path("to_share_percent").asDouble()).isZero();
        assertThat(started.path("describe").asText()).isEqualTo("rollout 1 -> 2: warming 2 before its first step");
        assertThat(lastSplit()).containsExactly(new VersionWeight("1", 1));
        assertThat(call("GET", "/metrics", null, READ_TOKEN).body()).contains("coordinator_rollout_warming{model=\"m\"} 1");
    }

    @Test
    void aShadowRolloutPublishesTheShadowVersion() throws Exception {
        JsonNode started = ok("POST", "/api/rollouts", "{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", "
                + "\"mode\": \"shadow\", \"shadow_fraction\": 0.25, \"after_shadow\": \"finish\"}");
        assertThat(started.path("phase").asText()).isEqualTo("shadow");
        assertThat(started.path("after_shadow").asText()).isEqualTo("finish");
        assertThat(started.path("step").isNull()).isTrue();
        var split = published.get(published.size() - 1).versionSplit("m").orElseThrow();
        assertThat(split.shadow()).isEqualTo("2");
        assertThat(split.shadowFraction()).isEqualTo(0.25);
        assertThat(split.versions()).containsExactly(new VersionWeight("1", 1));
    }

    @Test
    void refusesBadRequestsWithOurReasons() throws Exception {
        String[][] cases = {
            {"{\"model\": \"m\", \"from\": \"1\"}", "to must be a version"},
            {"{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", \"steps\": \"5,100\"}", "steps must be an array"},
            {"{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", \"steps\": [50, 5, 100]}", "ascend"},
            {"{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", \"mode\": \"blue-green\"}", "mode must be one of [canary, shadow]"},
            {"{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", \"weight\": 3}", "unknown field"},
            {"{\"model\": \"no/slash\", \"from\": \"1\", \"to\": \"2\"}", "model must match"},
            {"[1]", "body must be a JSON object"},
        };
        for (String[] c : cases) {
            HttpResponse<String> r = call("POST", "/api/rollouts", c[0], TOKEN);
            assertThat(r.statusCode()).as(c[0]).isEqualTo(400);
            assertThat(JSON.readTree(r.body()).path("error").asText()).as(c[0]).contains(c[1]);
        }
        assertThat(call("POST", "/api/rollouts/m/pause", null, TOKEN).statusCode()).isEqualTo(404);
        assertThat(call("POST", "/api/rollouts/m/jump", null, TOKEN).statusCode()).isEqualTo(404);
        assertThat(call("PUT", "/api/rollouts", "{}", TOKEN).statusCode()).isEqualTo(405);
        assertThat(call("GET", "/api/rollouts/bad%20name", null, TOKEN).statusCode()).isEqualTo(400);
        assertThat(published).isEmpty();
    }
}
