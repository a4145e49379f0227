package io.flinkgpu.coordinator.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
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
                "coordinator.admin.token = (none)", "Bearer token");
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
