package io.flinkgpu.coordinator.admin;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.rollout.TwoVersions;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The rollout series on {@code /metrics}, scraped over HTTP with the read token while a rollout
 * started through {@code POST /api/rollouts} is promoted, rolled back and removed: state, step,
 * B's weight and the decision counters follow it.
 */
class RolloutMetricsTest {
    private static final String TOKEN = "rollout-admin-token";
    private static final String READ_TOKEN = "rollout-read-token";

    private final HttpClient http = HttpClient.newHttpClient();
    private TwoVersions job;
    private Coordinator coordinator;
    private AdminServer server;

    @BeforeEach
    void start() throws Exception {
        Configuration c = new Configuration();
        c.set(CoordinatorOptions.ROLLOUT_MIN_DWELL, Duration.ofSeconds(10));
        c.set(CoordinatorOptions.ROLLOUT_MIN_SAMPLES, 100L);
        // the fake job's batches are of 4 answers: B's 10% of 200 answers/s runs 40 batches in 8 s
        c.set(CoordinatorOptions.ROLLOUT_LATENCY_MIN_BATCHES, 40L);
        c.set(CoordinatorOptions.WARM_BEFORE_ROUTE, false);
        job = new TwoVersions("m").answer("1", 0, 0, 1000).answer("2", 0, 0, 1000);
        coordinator = new Coordinator(c, job, plan -> { }, new InMemoryStateStore(), new CoordinatorMetrics(),
                job.clock());
        server = new AdminServer(AdminSettings.of("127.0.0.1", 0, TOKEN).withReadToken(READ_TOKEN), coordinator, null);
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private HttpResponse<String> call(String method, String path, String body, String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body))
                .header("Authorization", "Bearer " + token);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The sample lines of {@code /metrics} that begin with {@code prefix}. */
    private List<String> scrape(String prefix) throws Exception {
        HttpResponse<String> r = call("GET", "/metrics", null, READ_TOKEN);
        assertThat(r.statusCode()).isEqualTo(200);
        return r.body().lines().filter(l -> l.startsWith(prefix)).toList();
    }

    /** {@code seconds} of traffic at 200 answers/s split at B's share, A at 1% errors and B at {@code bErrors}. */
    private void cycle(int seconds, double bShare, double bErrors) {
        job.advance(seconds * 1000L);
        double total = 200.0 * seconds;
        job.answer("1", total * (1 - bShare), total * (1 - bShare) * 0.01, 1000)
                .answer("2", total * bShare, total * bShare * bErrors, 1000);
        coordinator.runOnce(false);
    }

    @Test
    void stateStepWeightAndDecisionCountersFollowARolloutThroughPromotionRollbackAndRemoval() throws Exception {
        assertThat(scrape("coordinator_rollout_")).as("no rollout yet").isEmpty();
        assertThat(call("POST", "/api/rollouts", "{\"model\": \"m\", \"from\": \"1\", \"to\": \"2\", "
                + "\"steps\": [10, 50, 100]}", TOKEN).statusCode()).isEqualTo(200);
        assertThat(scrape("coordinator_rollout_")).contains(
                "coordinator_rollout_state{model=\"m\",from=\"1\",to=\"2\",state=\"RUNNING\"} 1",
                "coordinator_rollout_state{model=\"m\",from=\"1\",to=\"2\",state=\"ROLLED_BACK\"} 0",
                "coordinator_rollout_step{model=\"m\"} 0",
                "coordinator_rollout_shadow{model=\"m\"} 0",
                "coordinator_rollout_to_weight{model=\"m\"} 0.100000",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"start\"} 1",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"promote\"} 0",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"rollback\"} 0",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"done\"} 0");

        // a good step: after the dwell with 100+ answers each, promoted to 50%
        coordinator.runOnce(false);
        cycle(2, 0.1, 0.01);
        cycle(9, 0.1, 0.01);
        assertThat(scrape("coordinator_rollout_")).contains(
                "coordinator_rollout_state{model=\"m\",from=\"1\",to=\"2\",state=\"RUNNING\"} 1",
                "coordinator_rollout_step{model=\"m\"} 1",
                "coordinator_rollout_to_weight{model=\"m\"} 0.500000",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"promote\"} 1",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"rollback\"} 0");

        // B fails 30% at 50%: rolled back, B's weight 0
        cycle(11, 0.5, 0.3);
        assertThat(coordinator.rollouts().get("m").orElseThrow().state().name()).isEqualTo("ROLLED_BACK");
        assertThat(scrape("coordinator_rollout_")).contains(
                "coordinator_rollout_state{model=\"m\",from=\"1\",to=\"2\",state=\"RUNNING\"} 0",
                "coordinator_rollout_state{model=\"m\",from=\"1\",to=\"2\",state=\"ROLLED_BACK\"} 1",
                "coordinator_rollout_step{model=\"m\"} 1",
                "coordinator_rollout_to_weight{model=\"m\"} 0",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"promote\"} 1",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"rollback\"} 1");

        // removed: its gauges go, its counters stay
        assertThat(call("DELETE", "/api/rollouts/m", null, TOKEN).statusCode()).isEqualTo(200);
        List<String> after = scrape("coordinator_rollout_");
        assertThat(after).noneMatch(l -> l.startsWith("coordinator_rollout_state{")
                || l.startsWith("coordinator_rollout_to_weight{"));
        assertThat(after).contains("coordinator_rollout_decisions_total{model=\"m\",decision=\"rollback\"} 1",
                "coordinator_rollout_decisions_total{model=\"m\",decision=\"forget\"} 1");
    }
}
