package io.flinkgpu.coordinator.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.admin.AdminServer;
import io.flinkgpu.coordinator.admin.AdminSettings;
import io.flinkgpu.coordinator.admin.TestKeystores;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class CoordinatorMainTest {
    private static String[] run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cmd = new CommandLine(new CoordinatorMain());
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        int rc = cmd.execute(args);
        return new String[] {String.valueOf(rc), out.toString(), err.toString()};
    }

    /** {@code coordinator api ...} with {@code env} as its environment. */
    private static String[] api(Function<String, String> env, String... args) {
        CoordinatorMain.Api command = new CoordinatorMain.Api();
        command.env = env;
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cmd = new CommandLine(command);
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        int rc = cmd.execute(args);
        return new String[] {String.valueOf(rc), out.toString(), err.toString()};
    }

    @Test
    void apiCommandCallsTheHttpsApiWithATruststoreOrAPemAndATokenFileOrTheEnvironment(@TempDir Path dir)
            throws Exception {
        TestKeystores keys = TestKeystores.create(dir);
        Path tokenFile = Files.writeString(dir.resolve("token"), "cli-admin-token\n");
        Path readTokenFile = Files.writeString(dir.resolve("read-token"), "cli-read-token\n");
        Path trustPassword = Files.writeString(dir.resolve("trust-password"), keys.truststorePassword() + "\n");
        FakeCluster cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 400, 0);
        Coordinator coordinator = new Coordinator(new Configuration(), cluster, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), cluster.clock());
        try (AdminServer server = new AdminServer(AdminSettings.of("127.0.0.1", 0, "cli-admin-token")
                .withReadToken("cli-read-token").withTls(keys.serverContext()), coordinator, null)) {
            String url = "https://127.0.0.1:" + server.port();
            Function<String, String> noEnv = name -> null;

            String[] status = api(noEnv, "--url", url, "--truststore", keys.truststore().toString(),
                    "--truststore-password", "file:" + trustPassword, "--token-file", tokenFile.toString(),
                    "GET", "/api/status");
            assertThat(status[0]).as(status[2]).isEqualTo("0");
            assertThat(status[1]).contains("\"epoch\"", "\"paused\" : false");

            String[] pause = api(Map.of("COORDINATOR_TOKEN", "cli-admin-token")::get, "--url", url,
                    "--cacert", keys.certificatePem().toString(), "post", "/api/pause");
            assertThat(pause[0]).as(pause[2]).isEqualTo("0");
            assertThat(coordinator.store().paused()).isTrue();

            // --token still works, and the read token is refused a change
            String[] readOnly = api(noEnv, "--url", url, "--cacert", keys.certificatePem().toString(),
                    "--token", "cli-read-token", "POST", "/api/resume");
            assertThat(readOnly[0]).isEqualTo("1");
            assertThat(readOnly[1]).contains("the read token allows GET only");
            assertThat(coordinator.store().paused()).isTrue();
            assertThat(api(noEnv, "--url", url, "--cacert", keys.certificatePem().toString(), "--token-file",
                    readTokenFile.toString(), "GET", "/metrics")[1]).contains("coordinator_paused 1");

            String[] noToken = api(noEnv, "--url", url, "--cacert", keys.certificatePem().toString(),
                    "GET", "/api/status");
            assertThat(noToken[0]).isEqualTo("2");
            assertThat(noToken[2]).contains("no token", "--token-file", "COORDINATOR_TOKEN");

            String[] untrusted = api(noEnv, "--url", url, "--token-file", tokenFile.toString(), "GET", "/api/status");
            assertThat(untrusted[0]).isEqualTo("1");
            assertThat(untrusted[2]).contains("cannot call " + url, "SSLHandshakeException");

            String[] wrongTrustPassword = api(noEnv, "--url", url, "--truststore", keys.truststore().toString(),
                    "--truststore-password", "not-it", "--token-file", tokenFile.toString(), "GET", "/api/status");
            assertThat(wrongTrustPassword[0]).isEqualTo("2");
            assertThat(wrongTrustPassword[2]).contains("wrong --truststore-password").doesNotContain("not-it");

            String[] both = api(noEnv, "--url", url, "--token", "a", "--token-file", tokenFile.toString(),
                    "GET", "/api/status");
            assertThat(both[0]).isEqualTo("2");
            assertThat(both[2]).contains("not both");
        }
    }

    @Test
    void helpListsTheCommands() {
        String[] r = run("--help");
        assertThat(r[0]).isEqualTo("0");
        assertThat(r[1]).contains("run", "plan", "api", "options");
    }

    @Test
    void optionsCommandPrintsEveryKeyWithItsDefault() {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        java.io.PrintStream stdout = System.out;
        System.setOut(new java.io.PrintStream(bytes, true));
        try {
            assertThat(run("options")[0]).isEqualTo("0");
        } finally {
            System.setOut(stdout);
        }
        assertThat(bytes.toString()).contains("coordinator.plan.target-utilization = 0.7",
                "coordinator.admin.token = (none)", "Bearer <token>", "coordinator.admin.read-token = (none)",
                "coordinator.admin.metrics.open = false", "coordinator.admin.tls.keystore = (none)");
    }

    @Test
    void planWithoutDryRunRefusesToPublish() {
        String[] r = run("plan");
        assertThat(r[0]).isEqualTo("2");
        assertThat(r[2]).contains("use 'plan --dry-run'");
    }

    @Test
    void dryRunAgainstAnUnreachableClusterSaysWhy() {
        String[] r = run("plan", "--dry-run", "--window", "0s", "-Dcoordinator.flink.rest-url=http://127.0.0.1:1",
                "-Dcoordinator.flink.rest-timeout=1s");
        assertThat(r[0]).isEqualTo("1");
    }

    @Test
    void everyOptionHasAKeyUnderCoordinatorAndADescription() {
        assertThat(CoordinatorOptions.all()).isNotEmpty().allSatisfy((k, o) -> {
            assertThat(k).startsWith("coordinator.");
            assertThat(CoordinatorOptions.describe(o)).isNotBlank().doesNotContain("&");
        });
        assertThat(CoordinatorOptions.plannerSettings(new org.apache.flink.configuration.Configuration()))
                .isEqualTo(io.flinkgpu.coordinator.plan.PlannerSettings.defaults());
    }
}
