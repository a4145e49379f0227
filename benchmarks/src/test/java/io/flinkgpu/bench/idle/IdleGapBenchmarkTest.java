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
    void comparesEachPointWithTheBackToBackPointAloneOfItsBatchSize() {
        IdleGapBenchmark.Point b1 = new IdleGapBenchmark.Point(1, 0, 0, 100, 25, 30);
        IdleGapBenchmark.Point b1gap = new IdleGapBenchmark.Point(1, 1000, 0, 50, 100, 110);
        IdleGapBenchmark.Point b1busy = new IdleGapBenchmark.Point(1, 0, 2, 80, 50, 60);
        IdleGapBenchmark.Point b8 = new IdleGapBenchmark.Point(8, 0, 0, 10, 160, 170);
        IdleGapBenchmark.Point b8gap = new IdleGapBenchmark.Point(8, 1000, 0, 10, 240, 250);
        List<IdleGapBenchmark.Point> points = List.of(b1busy, b1, b1gap, b8, b8gap);
        assertEquals(1.0, IdleGapBenchmark.vsBackToBack(points, b1), 1e-9);
        assertEquals(4.0, IdleGapBenchmark.vsBackToBack(points, b1gap), 1e-9);
        // a back-to-back point beside neighbours is compared with the one alone, not with itself
        assertEquals(2.0, IdleGapBenchmark.vsBackToBack(points, b1busy), 1e-9);
        assertEquals(1.5, IdleGapBenchmark.vsBackToBack(points, b8gap), 1e-9);
        assertEquals(30.0, b8gap.cpuUsPerSample(), 1e-9);
        assertTrue(Double.isNaN(IdleGapBenchmark.vsBackToBack(List.of(b1gap, b1busy), b1gap)));
        String table = IdleGapBenchmark.table(points);
        assertTrue(table.contains("| 1 | 1000 us | 0 | 50 | 100.0 us | 100.0 us | 4.00 | 110.0 us |"), table);
        assertTrue(table.contains("| 1 | none (back to back) | 2 | 80 | 50.0 us | 50.0 us | 2.00 | 60.0 us |"), table);
        assertTrue(table.contains("| 8 | none (back to back) | 0 | 10 | 160.0 us | 20.0 us | 1.00 | 170.0 us |"), table);
    }

    @Test
    void neighboursKeepWorkingUntilClosedAndThenStop() throws Exception {
        IdleGapBenchmark.Neighbours busy = IdleGapBenchmark.Neighbours.start(2, 1);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (busy.passes() < 10 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue(busy.passes() >= 10, "passes " + busy.passes());
        busy.close();
        long after = busy.passes();
        Thread.sleep(50);
        assertEquals(after, busy.passes());
        assertEquals(0, Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("idle-gap-neighbour-")).count());
    }

    @Test
    void aShortRunOfTheShippedModelWritesEveryPoint(@TempDir Path out) throws Exception {
        int rc = new CommandLine(new IdleGapBenchmark()).execute("--batches=1,4", "--gaps-us=0,500",
                "--neighbours=0,1", "--neighbour-mib=1", "--seconds=0.3", "--warmup-seconds=0.2", "--out=" + out);
        assertEquals(0, rc);
        JsonNode result = new ObjectMapper().readTree(out.resolve("idle-gap.json").toFile());
        JsonNode points = result.get("points");
        assertEquals(8, points.size());
        for (JsonNode p : points) {
            assertTrue(p.get("runs").asLong() > 0, p.toString());
            assertTrue(p.get("cpu_us_per_batch").asDouble() > 0, p.toString());
            assertTrue(p.get("wall_us_p50").asDouble() > 0, p.toString());
        }
        assertEquals(1.0, points.get(0).get("cpu_vs_back_to_back").asDouble(), 1e-9);
        assertTrue(result.get("command").asText().contains("--gaps-us=0,500 --neighbours=0,1 --neighbour-mib=1"));
        assertEquals(1, points.get(2).get("neighbours").asInt(), points.get(2).toString());
        assertEquals(0, points.get(4).get("neighbours").asInt(), points.get(4).toString());
        String md = Files.readString(out.resolve("idle-gap.md"));
        assertTrue(md.startsWith("<!-- written by IdleGapBenchmark"), md);
        assertTrue(md.contains("\n# A batch after an idle gap\n"), md);
        assertTrue(md.contains("| 4 | 500 us | 1 |"), md);
    }
}
