package io.flinkgpu.coordinator.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.admin.AdminServer;
import io.flinkgpu.coordinator.admin.AdminSettings;
import io.flinkgpu.coordinator.rollout.Rollout;
import io.flinkgpu.coordinator.rollout.TwoVersions;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code coordinator rollout ...} against a running admin API. */
class RolloutCommandTest {
    private static String[] run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cmd = new CommandLine(new CoordinatorMain());
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        int rc = cmd.execute(args);
        return new String[] {String.valueOf(rc), out.toString(), err.toString()};
    }

    @Test
    void startsPausesResumesAbortsShowsAndRemovesARollout(@TempDir Path dir) throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "cli-admin-token\n");
        TwoVersions job = new TwoVersions("m");
        Configuration config = new Configuration();
        // the fake job reports no loaded gauge; without the warming phase each step shows at once
        config.set(io.flinkgpu.coordinator.CoordinatorOptions.WARM_BEFORE_ROUTE, false);
        Coordinator coordinator = new Coordinator(config, job, plan -> { }, new InMemoryStateStore(),
                new CoordinatorMetrics(), job.clock());
        try (AdminServer server = new AdminServer(AdminSettings.of("127.0.0.1", 0, "cli-admin-token")
                .withReadToken("cli-read-token"), coordinator, null)) {
            String url = "http://127.0.0.1:" + server.port();
            String tf = token.toString();

            String[] start = run("rollout", "start", "--url", url, "--token-file", tf, "--model", "m", "--from", "1",
                    "--to", "2", "--steps", "5,20,100");
            assertThat(start[0]).as(start[2]).isEqualTo("0");
            assertThat(start[1]).contains("\"state\" : \"RUNNING\"", "rollout 1 -> 2: step 1 of 3 (5% to 2)");
            assertThat(coordinator.rollouts().get("m").orElseThrow().steps()).containsExactly(0.05, 0.2, 1.0);

            assertThat(run("rollout", "pause", "--url", url, "--token-file", tf, "m")[1]).contains("\"PAUSED\"");
            // the read token shows, but may not change
            String[] status = run("rollout", "status", "--url", url, "--token", "cli-read-token", "m");
            assertThat(status[0]).isEqualTo("0");
            assertThat(status[1]).contains("\"state\" : \"PAUSED\"", "paused at step 1 of 3");
            String[] refused = run("rollout", "resume", "--url", url, "--token", "cli-read-token", "m");
            assertThat(refused[0]).isEqualTo("1");
            assertThat(refused[1]).contains("the read token allows GET only");

            assertThat(run("rollout", "resume", "--url", url, "--token-file", tf, "m")[1]).contains("\"RUNNING\"");
            String[] abort = run("rollout", "abort", "--url", url, "--token-file", tf, "m");
            assertThat(abort[0]).isEqualTo("0");
            assertThat(coordinator.rollouts().get("m").orElseThrow().state()).isEqualTo(Rollout.State.ABORTED);
            String[] all = run("rollout", "status", "--url", url, "--token-file", tf);
            assertThat(all[1]).contains("\"model\" : \"m\"", "aborted (100% to 1)");

            String[] wrongState = run("rollout", "pause", "--url", url, "--token-file", tf, "m");
            assertThat(wrongState[0]).isEqualTo("1");
            assertThat(wrongState[1]).contains("is ABORTED, not RUNNING");

            String[] shadow = run("rollout", "start", "--url", url, "--token-file", tf, "--model", "m", "--from", "1",
                    "--to", "2", "--mode", "shadow", "--shadow-fraction", "0.3", "--after-shadow", "finish");
            assertThat(shadow[0]).as(shadow[1]).isEqualTo("0");
            assertThat(coordinator.rollouts().splits().get(0).shadow()).isEqualTo("2");
            run("rollout", "abort", "--url", url, "--token-file", tf, "m");

            assertThat(run("rollout", "remove", "--url", url, "--token-file", tf, "m")[0]).isEqualTo("0");
            assertThat(coordinator.rollouts().all()).isEmpty();

            String[] missing = run("rollout", "start", "--url", url, "--token-file", tf, "--model", "m");
            assertThat(missing[0]).isEqualTo("2");
            assertThat(missing[2]).contains("--from", "--to");
        }
    }

    @Test
    void helpListsTheRolloutCommands() {
        String[] r = run("rollout", "--help");
        assertThat(r[0]).isEqualTo("0");
        assertThat(r[1]).contains("start", "pause", "resume", "abort", "status", "remove");
    }
}
