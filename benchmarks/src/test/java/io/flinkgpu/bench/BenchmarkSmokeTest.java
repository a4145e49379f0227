package io.flinkgpu.bench;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * A tiny end-to-end run (embedded Kafka, MiniCluster, the image scenario, seconds per point):
 * checks that the harness completes and writes well-formed results, never how fast anything is.
 */
class BenchmarkSmokeTest {
    @Test
    void aTinyRunWritesItsResultReportPlotsAndSummary(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("run");
        Path publish = dir.resolve("published");
        int exit = new CommandLine(new BenchmarkMain()).execute("--mode=smoke", "--scenarios=image",
                "--configs=ceiling,job-batching-off,job-batching-default", "--out=" + out, "--publish=" + publish);
        assertThat(exit).isZero();

        JsonNode result = new ObjectMapper().readTree(out.resolve("result.json").toFile());
        assertThat(result.path("mode").asText()).isEqualTo("smoke");
        assertThat(result.path("machine").path("nproc").asInt()).isPositive();
        assertThat(result.path("machine").path("java_version").asText()).isNotEmpty();
        assertThat(result.path("versions").path("flink").asText()).isNotEmpty();
        assertThat(result.path("command_line").asText()).contains("--mode=smoke");
        JsonNode image = result.path("scenarios").get(0);
        assertThat(image.path("name").asText()).isEqualTo("image");
        assertThat(image.path("ceiling")).isNotEmpty();
        JsonNode batching = image.path("configs").path("job-batching-default");
        assertThat(batching.path("failure").isNull()).isTrue();
        assertThat(batching.path("sweep")).isNotEmpty();
        assertThat(batching.path("sweep").get(0).path("p99").isNumber()).isTrue();
        assertThat(result.path("targets")).isNotEmpty();

        String report = Files.readString(out.resolve("report.md"));
        assertThat(report).contains("## image", "| configuration |", "job-batching-default", "## Targets");
        for (String png : new String[] {"image-throughput.png", "image-latency-p50.png", "image-latency-p99.png"}) {
            byte[] bytes = Files.readAllBytes(out.resolve(png));
            assertThat(bytes).startsWith(0x89, 'P', 'N', 'G');
            assertThat(report).contains("](" + png + ")");
        }

        JsonNode summary = new ObjectMapper().readTree(publish.resolve("summary.json").toFile());
        assertThat(summary.path("run_id").asText()).isEqualTo(result.path("run_id").asText());
        assertThat(summary.path("targets")).isNotEmpty();
        for (JsonNode t : summary.path("targets")) {
            assertThat(t.has("target") && t.has("measured") && t.has("goal") && t.has("pass")).isTrue();
        }
        assertThat(publish.resolve("smoke").resolve("result.json")).exists();
    }

    /**
     * Every scenario runs alone: each prepares itself before the Kafka floor (which sends the first
     * scenario's samples) and before any point, so no scenario depends on another having run first.
     */
    @ParameterizedTest
    @ValueSource(strings = {"recommendation", "nlp", "nlp-int8"})
    void eachScenarioRunsAlone(String scenario, @TempDir Path dir) throws Exception {
        if (scenario.equals("recommendation")) {
            // The DLRM export needs PyTorch; .ci/run installs python3-torch, so CI always runs this.
            org.junit.jupiter.api.Assumptions.assumeTrue(pythonHasTorch(),
                    "/usr/bin/python3 cannot import torch (apt-get install python3-torch)");
        }
        Path out = dir.resolve("run");
        int exit = new CommandLine(new BenchmarkMain()).execute("--mode=smoke", "--scenarios=" + scenario,
                "--configs=job-batching-default", "--out=" + out, "--publish=" + dir.resolve("published"));
        assertThat(exit).isZero();
        JsonNode result = new ObjectMapper().readTree(out.resolve("result.json").toFile());
        assertThat(result.path("kafka_floor_closed_loop").path("answered").asLong()).isPositive();
        JsonNode only = result.path("scenarios").get(0);
        assertThat(result.path("scenarios")).hasSize(1);
        assertThat(only.path("name").asText()).isEqualTo(scenario);
        JsonNode batching = only.path("configs").path("job-batching-default");
        assertThat(batching.path("failure").isNull()).as("%s", batching.path("failure")).isTrue();
        assertThat(batching.path("sweep").get(0).path("p99").isNumber()).isTrue();
    }

    private static boolean pythonHasTorch() throws InterruptedException {
        try {
            Process p = new ProcessBuilder("/usr/bin/python3", "-c", "import torch").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            return p.waitFor() == 0;
        } catch (java.io.IOException e) {
            return false;
        }
    }
}
