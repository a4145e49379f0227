package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.bench.load.CpuSplit;
import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.run.BenchmarkRunner;
import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sweep.RateSweep;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PipelineCpuTest {
    private static PointResult point(double rate, double jobUs, long answers) {
        CpuSplit split = new CpuSplit(answers, 1, jobUs * 2, jobUs, Map.of("job_source", jobUs), 0, 1, 0, 0, 0, Map.of(), null, null);
        return new PointResult("open", rate, 1, answers, answers, 0, 0, 0, rate, 1, 1, 1, 1, 1, 1, 1, 50, 1, true,
                true, List.of(), 1, 0, 0, List.of(), 1, 0, split, List.of(), null, Double.NaN);
    }

    @Test
    void thePassthroughIsReadAtTheJobsRateNotAtItsOwnGoodput() {
        List<PointResult> points = List.of(point(1000, 200, 1000), point(4000, 100, 4000), point(8000, 50, 8000));
        // at a measured rate: that point
        assertThat(Targets.passthroughJobUsAt(points, 4000)).isCloseTo(100, within(1e-9));
        // between two: log-log, so halfway (in log rate) between 4000 and 8000 is the geometric mean
        assertThat(Targets.passthroughJobUsAt(points, Math.sqrt(4000 * 8000.0)))
                .isCloseTo(Math.sqrt(100 * 50.0), within(1e-9));
        // outside the sweep: not measured
        assertThat(Targets.passthroughJobUsAt(points, 500)).isNaN();
        assertThat(Targets.passthroughJobUsAt(points, 16000)).isNaN();
        // the whole process's CPU (here twice the job's) is read the same way
        assertThat(Targets.passthroughUsAt(points, Math.sqrt(4000 * 8000.0), CpuSplit::processUs))
                .isCloseTo(2 * Math.sqrt(100 * 50.0), within(1e-9));
    }

    @Test
    void repeatedPointsAtOneRateCountByTheirMedianAndPointsWithoutAnswersAreIgnored() {
        List<PointResult> points = List.of(point(2000, 100, 2000), point(2000, 140, 2000), point(2000, 900, 2000),
                point(4000, 9999, 0), point(4000, 60, 4000));
        assertThat(Targets.passthroughJobUsAt(points, 2000)).isCloseTo(140, within(1e-9));
        assertThat(Targets.passthroughJobUsAt(points, 4000)).isCloseTo(60, within(1e-9));
    }

    private static PointResult withClasses(List<PointResult.ClassLatency> classes) {
        return new PointResult("open", 10, 1, 10, 10, 0, 0, 0, 10, 1, 1, 1, 1, 1, 1, 1, 50, 1, true, true, List.of(),
                1, 0, 0, List.of(), 1, 0, null, classes, null, Double.NaN);
    }

    @Test
    void lowLoadLatencyIsJudgedPerClassAgainstThatClassesOwnServiceTime() {
        // 16-token requests take 5 ms alone, 128-token ones 30 ms: over the mix a "service time" of
        // ~7 ms would fail the long ones for being long and pass short ones that queued
        PointResult unloaded = withClasses(List.of(new PointResult.ClassLatency("16 tokens", 900, 5, 8),
                new PointResult.ClassLatency("128 tokens", 100, 30, 40)));
        PointResult low = withClasses(List.of(new PointResult.ClassLatency("16 tokens", 90, 6, 9),
                new PointResult.ClassLatency("128 tokens", 10, 33, 42),
                new PointResult.ClassLatency("64 tokens", 0, Double.NaN, Double.NaN)));
        List<String> parts = new java.util.ArrayList<>();
        List<Map<String, Object>> ratios = Targets.classRatios(low, unloaded, parts);
        assertThat(ratios).extracting(e -> e.get("class")).containsExactly("16 tokens", "128 tokens");
        assertThat((Double) ratios.get(0).get("ratio")).isCloseTo(9 / 5.0, within(1e-9));
        assertThat((Double) ratios.get(1).get("ratio")).isCloseTo(42 / 30.0, within(1e-9));
        assertThat(parts).hasSize(3).anyMatch(p -> p.equals("64 tokens: not measured"));
    }

    @Test
    void thePipelinesCpuIsJudgedWhereItOutweighsInferenceAndComparedElsewhere() {
        assertThat(Targets.pipelineCpuGoal("image")).isEqualTo("<= 1.25");
        assertThat(Targets.pipelineCpuGoal("recommendation")).isEqualTo("<= 1.25");
        assertThat(Targets.pipelineCpuGoal("nlp")).isEqualTo("compare");
        assertThat(Targets.pipelineCpuGoal("nlp-int8")).isEqualTo("compare");
    }

    @Test
    void thePipelinesCpuDetailNamesReadingsARunLacksInsteadOfPrintingNaN() {
        String full = Targets.pipelineCpuDetail(5657, 71, 68, 62, 5.1, 24, 310, 294);
        assertThat(full).isEqualTo("at 5657 req/s: job 71 us outside the inference threads vs passthrough 68 us; "
                + "the inference threads 62 us, raw ONNX Runtime at mean batch 5.1 24 us; the whole process 310 us "
                + "vs the passthrough's 294 us at the same rate (x1.05)");
        String noCeiling = Targets.pipelineCpuDetail(11314, 36, 33, 31, 14.6, Double.NaN, 200, Double.NaN);
        assertThat(noCeiling).doesNotContain("NaN")
                .contains("raw ONNX Runtime at mean batch 14.6 not measured in this run (no ceiling)")
                .contains("the whole process 200 us, the passthrough's not measured at that rate");
    }

    private static PointResult latency(String mode, double rate, double p50, double p99) {
        return new PointResult(mode, rate, 1, 10, 10, 0, 0, 0, rate, p50, 1, 1, p99, 1, 1, 1, 50, 1, true, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, null, List.of(), null, Double.NaN);
    }

    @Test
    void theLowLoadFloorIsThePassthroughsOwnRatioAtTheNearestRate() {
        PointResult unloaded = latency("closed", 1, 4, 9);
        List<PointResult> sweep = List.of(latency("open", 500, 4.4, 19.5), latency("open", 1000, 4.5, 12),
                latency("closed", 476, 4, 99));
        Map<String, Object> f = Targets.passthroughFloor(unloaded, sweep, 476);
        assertThat(f).containsEntry("rate", 500.0).containsEntry("p99_ms", 19.5).containsEntry("service_time_ms", 4.0);
        assertThat((Double) f.get("ratio")).isCloseTo(19.5 / 4, within(1e-9));
        assertThat(Targets.passthroughFloor(unloaded, sweep, 900).get("rate")).isEqualTo(1000.0);
        // a rate no point lies within a factor of 2 of (the NLP scenario's 2 req/s), or no service time: none
        assertThat(Targets.passthroughFloor(unloaded, sweep, 200)).isNull();
        assertThat(Targets.passthroughFloor(null, sweep, 500)).isNull();
    }

    @Test
    void theLowLoadFloorTakesThePassthroughsOwnPointAtTheLowLoadRateWhereItHasOne() {
        BenchmarkRunner.ScenarioResult s = new BenchmarkRunner.ScenarioResult(null);
        BenchmarkRunner.ConfigResult floor = new BenchmarkRunner.ConfigResult(new BenchmarkRunner.SutConfig(
                BenchmarkRunner.PASSTHROUGH, "passthrough", Deployments.Kind.PASSTHROUGH, Map.of(), "floor"));
        floor.unloaded = latency("closed", 1, 4, 9);
        floor.sweep = RateSweep.outcome(List.of(latency("open", 50, 4.5, 14), latency("open", 71, 4.7, 17)));
        s.configs.put(BenchmarkRunner.PASSTHROUGH, floor);
        PointResult low = latency("open", 13, 20, 26);
        // NLP's low-load rate lies more than a factor of 2 below the passthrough's sweep: no floor
        assertThat(Targets.withPassthroughFloor(new java.util.LinkedHashMap<>(Map.of("detail", "d")), s, low))
                .doesNotContainKey("passthrough_floor");
        // with the passthrough's own point at that rate, that point is the floor
        floor.extra.put("at_low_load_of_job-tuned-3", latency("open", 13, 4.2, 8.4));
        Map<String, Object> t = Targets.withPassthroughFloor(new java.util.LinkedHashMap<>(Map.of("detail", "d")), s,
                low);
        @SuppressWarnings("unchecked")
        Map<String, Object> f = (Map<String, Object>) t.get("passthrough_floor");
        assertThat(f).containsEntry("rate", 13.0).containsEntry("p99_ms", 8.4);
        assertThat((Double) f.get("ratio")).isCloseTo(8.4 / 4, within(1e-9));
        assertThat((String) t.get("detail")).contains("Flink and Kafka alone (passthrough) at 13 req/s");
    }

    @Test
    void theLowLoadEntrySaysWhereItsTailIs() {
        PointResult low = new PointResult("open", 100, 1, 10, 10, 0, 0, 0, 100, 4, 1, 1, 15, 1, 1, 1, 50, 1, true, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, null, List.of(),
                new PointResult.StageTail(10, 0.1, 0.3, 0.4, 0.9, 3.5, 14.2), Double.NaN);
        Map<String, Object> t = new java.util.LinkedHashMap<>(Map.of("detail", "p99 15.00 ms"));
        Targets.withStages(t, low);
        assertThat(t.get("stages")).isEqualTo(Map.of("queue_p99_ms", 0.3, "inference_p99_ms", 0.9,
                "outside_p50_ms", 3.5, "outside_p99_ms", 14.2));
        assertThat((String) t.get("detail")).endsWith("queued 0.30 ms, inference 0.90 ms, outside the operator's "
                + "batch 14.20 ms");
        Map<String, Object> none = new java.util.LinkedHashMap<>(Map.of("detail", "d"));
        Targets.withStages(none, latency("open", 100, 4, 15));
        assertThat(none).doesNotContainKey("stages").containsEntry("detail", "d");
    }
    @Test
    void aPointsAllocationAndPausesReadAsOneDetailClause() {
        Map<String, Double> bytes = new java.util.LinkedHashMap<>();
        bytes.put("job_source", 300.0);
        bytes.put("job_operator_mailbox", 600.0);
        bytes.put("broker", 1200.0);
        CpuSplit split = new CpuSplit(1000, 1, 100, 50, Map.of("job_source", 50.0), 0, 0.1, 0, 0, 0, bytes,
                new io.flinkgpu.bench.load.GcPauses.Summary(3, 41, 18), null);
        assertThat(Targets.memory(split))
                .isEqualTo("; allocated 2100 bytes per request (job 900); GC paused 3 times, 41 ms in all, longest 18 ms");
        CpuSplit quiet = new CpuSplit(1000, 1, 100, 50, Map.of("job_source", 50.0), 0, 0.1, 0, 0, 0, Map.of(),
                new io.flinkgpu.bench.load.GcPauses.Summary(0, 0, 0), null);
        assertThat(Targets.memory(quiet)).isEqualTo("; no GC pause");
        assertThat(Targets.memory(null)).isEmpty();
        // the report's "Every point" cells: KB per request (process / job), pauses / longest
        assertThat(Report.memoryCells(split)).isEqualTo("2.1 / 0.9 | 3 / 18");
        assertThat(Report.memoryCells(quiet)).isEqualTo("- | 0 / 0");
        assertThat(Report.memoryCells(null)).isEqualTo("- | -");
    }
}
