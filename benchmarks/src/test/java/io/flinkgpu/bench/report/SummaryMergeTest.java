package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A harness run replaces its own scenarios' targets in summary.json and keeps every other tool's. */
class SummaryMergeTest {
    @TempDir
    Path dir;

    @Test
    void aRunReplacesItsScenariosTargetsAndKeepsTheOthers() throws Exception {
        Path summary = dir.resolve("summary.json");
        Files.writeString(summary, """
                {"targets": [
                  {"scenario": "image", "target": "old", "run": "r1"},
                  {"scenario": "qos", "target": "tenant_shares_3_to_1", "run": "qos/qos.json"}
                ]}""");
        SummaryTargets.replace(summary, "cache", List.of(SummaryTargets.target("cache", "c1", "zipf", "d", 2.0, "> 1",
                true)));

        List<Object> merged = Report.mergedTargets(summary, List.of(Map.of("scenario", "image", "target", "new",
                "run", "r2")));

        List<Object> names = merged.stream().map(t -> ((Map<?, ?>) t).get("target")).map(Object.class::cast).toList();
        assertThat(names).containsExactly("tenant_shares_3_to_1", "zipf", "new");
        assertThat(Report.mergedTargets(dir.resolve("absent.json"), List.of())).isEmpty();
    }

    @Test
    void aShorterRunNeverReplacesAFullRunsSummary() throws Exception {
        // nothing published yet, or a quick run's summary: this run's goes on top
        assertThat(Report.summaryFile(dir, "quick")).isEqualTo(dir.resolve("summary.json"));
        Files.writeString(dir.resolve("summary.json"), "{\"mode\": \"quick\", \"targets\": []}");
        assertThat(Report.summaryFile(dir, "quick")).isEqualTo(dir.resolve("summary.json"));
        assertThat(Report.summaryFile(dir, "full")).isEqualTo(dir.resolve("summary.json"));
        // a full run's summary on top: a quick run's goes beside its own files
        Files.writeString(dir.resolve("summary.json"), "{\"mode\": \"full\", \"targets\": []}");
        assertThat(Report.summaryFile(dir, "quick")).isEqualTo(dir.resolve("quick").resolve("summary.json"));
        assertThat(Report.summaryFile(dir, "smoke")).isEqualTo(dir.resolve("smoke").resolve("summary.json"));
        assertThat(Report.summaryFile(dir, "full")).isEqualTo(dir.resolve("summary.json"));
    }

    @Test
    void aSummaryBesideAFullRunsKeepsOnlyTheOtherToolsTargets() throws Exception {
        Path summary = dir.resolve("summary.json");
        Files.writeString(summary, """
                {"mode": "full", "targets": [
                  {"scenario": "image", "target": "old", "run": "full-1"},
                  {"scenario": "nlp", "target": "nlp_old", "run": "full-1"},
                  {"scenario": "all", "target": "gpu_simulated_device_gains", "run": "full-1"},
                  {"scenario": "qos", "target": "tenant_shares_3_to_1", "run": "qos/qos.json"}
                ]}""");
        List<Object> run = List.of(Map.of("scenario", "image", "target", "new", "run", "quick-1"));

        List<Object> beside = Report.mergedTargets(summary, run, true);
        List<Object> onTop = Report.mergedTargets(summary, run, false);

        // a quick run of image alone: the full run's nlp and run-wide targets are not this run's
        assertThat(beside.stream().map(t -> (Object) ((Map<?, ?>) t).get("target")).toList())
                .containsExactly("tenant_shares_3_to_1", "new");
        assertThat(onTop.stream().map(t -> (Object) ((Map<?, ?>) t).get("target")).toList())
                .containsExactly("nlp_old", "gpu_simulated_device_gains", "tenant_shares_3_to_1", "new");
    }
}
