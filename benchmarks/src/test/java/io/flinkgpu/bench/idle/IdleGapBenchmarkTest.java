package io.flinkgpu.bench.idle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class IdleGapBenchmarkTest {

    @Test
    void comparesEachPointWithTheBackToBackPointOfItsBatchSize() {
        IdleGapBenchmark.Point b1 = new IdleGapBenchmark.Point(1, 0, 100, 25, 30);
        IdleGapBenchmark.Point b1gap = new IdleGapBenchmark.Point(1, 1000, 50, 100, 110);
        IdleGapBenchmark.Point b8 = new IdleGapBenchmark.Point(8, 0, 10, 160, 170);
        IdleGapBenchmark.Point b8gap = new IdleGapBenchmark.Point(8, 1000, 10, 240, 250);
        List<IdleGapBenchmark.Point> points = List.of(b1, b1gap, b8, b8gap);
        assertEquals(1.0, IdleGapBenchmark.vsBackToBack(points, b1), 1e-9);
        assertEquals(4.0, IdleGapBenchmark.vsBackToBack(points, b1gap), 1e-9);
        assertEquals(1.5, IdleGapBenchmark.vsBackToBack(points, b8gap), 1e-9);
        assertEquals(30.0, b8gap.cpuUsPerSample(), 1e-9);
        assertTrue(Double.isNaN(IdleGapBenchmark.vsBackToBack(List.of(b1gap), b1gap)));
        String table = IdleGapBenchmark.table(points);
        assertTrue(table.contains("| 1 | 1000 us | 50 | 100.0 us | 100.0 us | 4.00 | 110.0 us |"), table);
        assertTrue(table.contains("| 8 | none (back to back) | 10 | 160.0 us | 20.0 us | 1.00 | 170.0 us |"), table);
    }

    @Test
    void aShortRunOfTheShippedModelWritesEveryPoint(@TempDir Path out) throws Exception {
        int rc = new CommandLine(new IdleGapBenchmark()).execute("--batches=1,4", "--gaps-us=0,500",
                "--seconds=0.3", "--warmup-seconds=0.2", "--out=" + out);
        assertEquals(0, rc);
        JsonNode result = new ObjectMapper().readTree(out.resolve("idle-gap.json").toFile());
        JsonNode points = result.get("points");
        assertEquals(4, points.size());
        for (JsonNode p : points) {
            assertTrue(p.get("runs").asLong() > 0, p.toString());
            assertTrue(p.get("cpu_us_per_batch").asDouble() > 0, p.toString());
            assertTrue(p.get("wall_us_p50").asDouble() > 0, p.toString());
        }
        assertEquals(1.0, points.get(0).get("cpu_vs_back_to_back").asDouble(), 1e-9);
        assertTrue(result.get("command").asText().contains("--gaps-us=0,500"));
        String md = Files.readString(out.resolve("idle-gap.md"));
        assertTrue(md.startsWith("<!-- written by IdleGapBenchmark"), md);
        assertTrue(md.contains("\n# A batch after an idle gap\n"), md);
        assertTrue(md.contains("| 4 | 500 us |"), md);
    }
}
