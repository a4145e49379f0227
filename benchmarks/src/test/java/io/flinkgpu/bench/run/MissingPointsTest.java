package io.flinkgpu.bench.run;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.load.RequestClasses;
import io.flinkgpu.bench.sut.Deployments;
import io.flinkgpu.bench.sweep.RateSweep;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The points that depend on other configurations' results (the passthrough at each batching
 * configuration's low-load rate, a batching configuration at the per-record baseline's goodput)
 * are named as missing whichever order the configurations ran in, and not where a sweep point
 * already measured them.
 */
class MissingPointsTest {
    private static PointResult point(double rate, boolean pass) {
        return new PointResult("open", rate, 1, 10, 10, 0, 0, 0, rate, 1, 1, 1, 2, 1, 1, 1, 50, 1, pass, true,
                List.of(), 1, 0, 0, List.of(), 1, 0, null, List.of(), null, Double.NaN);
    }

    private static BenchmarkRunner.ConfigResult result(String name, String role, double... passingRates) {
        BenchmarkRunner.ConfigResult r = new BenchmarkRunner.ConfigResult(new BenchmarkRunner.SutConfig(name, role,
                Deployments.Kind.JOB, Map.of(), name));
        List<PointResult> points = new java.util.ArrayList<>();
        for (double rate : passingRates) {
            points.add(point(rate, true));
        }
        r.sweep = RateSweep.outcome(points);
        return r;
    }

    @Test
    void aConfigurationThatRanBeforeTheOnesItDependsOnHasThosePointsMissingUntilMeasured() {
        BenchmarkSettings quick = BenchmarkSettings.quick();
        BenchmarkRunner.ScenarioResult s = new BenchmarkRunner.ScenarioResult(null);
        // run in reverse: the passthrough and the batching configuration ran before the per-record one
        BenchmarkRunner.ConfigResult passthrough = result(BenchmarkRunner.PASSTHROUGH, "passthrough", 500, 1000, 2000);
        BenchmarkRunner.ConfigResult map = result("flink-map", "per-record", 500, 1000);
        BenchmarkRunner.ConfigResult job = result("job-tuned-2", "batching", 500, 1000, 2000, 4000);
        job.extra.put("at_10pct_of_capacity", point(400, true));
        BenchmarkRunner.ConfigResult other = result("job-batching-default", "batching", 500, 1000, 2000);
        other.extra.put("at_10pct_of_capacity", point(200, true));
        s.configs.put(passthrough.config.name(), passthrough);
        s.configs.put(map.config.name(), map);
        s.configs.put(job.config.name(), job);
        s.configs.put(other.config.name(), other);

        assertThat(BenchmarkRunner.perRecordGoodput(s)).isEqualTo(1000);
        assertThat(BenchmarkRunner.missingPoints(job, s, quick, RequestClasses.NONE))
                .containsOnlyKeys(BenchmarkRunner.AT_PER_RECORD);
        assertThat(BenchmarkRunner.missingPoints(map, s, quick, RequestClasses.NONE)).isEmpty();
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE))
                .containsOnlyKeys("at_low_load_of_job-tuned-2", "at_low_load_of_job-batching-default");

        // measured: nothing missing any more
        job.extra.put(BenchmarkRunner.AT_PER_RECORD, point(1000, true));
        passthrough.extra.put("at_low_load_of_job-tuned-2", point(400, true));
        passthrough.extra.put("at_low_load_of_job-batching-default", point(200, true));
        assertThat(BenchmarkRunner.missingPoints(job, s, quick, RequestClasses.NONE)).isEmpty();
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE)).isEmpty();

        // Kafka alone (the relay) is a floor too: measured at the batching configurations' low-load rates
        BenchmarkRunner.ConfigResult relay = result(BenchmarkRunner.KAFKA_RELAY, BenchmarkRunner.RELAY_ROLE, 500, 1000);
        s.configs.put(relay.config.name(), relay);
        assertThat(BenchmarkRunner.missingPoints(relay, s, quick, RequestClasses.NONE))
                .containsOnlyKeys("at_low_load_of_job-tuned-2", "at_low_load_of_job-batching-default");
        assertThat(BenchmarkRunner.missingPoints(relay, s, quick, RequestClasses.NONE)
                .get("at_low_load_of_job-tuned-2").rate()).isEqualTo(400);
    }

    @Test
    void thePassthroughsSweepPointAtALowLoadRateIsNotMeasuredTwiceUnlessTheLowLoadPointIsLonger() {
        BenchmarkSettings quick = BenchmarkSettings.quick();
        BenchmarkRunner.ScenarioResult s = new BenchmarkRunner.ScenarioResult(null);
        BenchmarkRunner.ConfigResult passthrough = result(BenchmarkRunner.PASSTHROUGH, "passthrough", 500, 1000, 2000);
        BenchmarkRunner.ConfigResult job = result("job-tuned-2", "batching", 5000);
        job.extra.put("at_10pct_of_capacity", point(500, true));
        s.configs.put(passthrough.config.name(), passthrough);
        s.configs.put(job.config.name(), job);
        // quick mode: a low-load point is as long as a sweep point, and the sweep has one at 500/s
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE)).isEmpty();
        // full mode wants 100 requests per class: at 500/s that needs no longer a window either
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, BenchmarkSettings.full(), RequestClasses.NONE))
                .isEmpty();
        // four classes at 0.5 req/s each need a longer point than the sweep's: measured on its own
        RequestClasses four = new RequestClasses(List.of("a", "b", "c", "d"), seq -> seq % 4);
        job.extra.put("at_10pct_of_capacity", point(2, true));
        passthrough.sweep = RateSweep.outcome(List.of(point(2, true), point(4, true)));
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, BenchmarkSettings.full(), four))
                .containsOnlyKeys("at_low_load_of_job-tuned-2");
        // and at a rate the sweep did not offer, likewise
        job.extra.put("at_10pct_of_capacity", point(3, true));
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE))
                .containsOnlyKeys("at_low_load_of_job-tuned-2");
        // two configurations with the same low-load rate: one point serves both
        BenchmarkRunner.ConfigResult twin = result("job-batching-default", "batching", 5000);
        twin.extra.put("at_10pct_of_capacity", point(3, true));
        s.configs.put(twin.config.name(), twin);
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE))
                .containsOnlyKeys("at_low_load_of_job-tuned-2");
        passthrough.extra.put("at_low_load_of_job-tuned-2", point(3, true));
        assertThat(BenchmarkRunner.missingPoints(passthrough, s, quick, RequestClasses.NONE)).isEmpty();
    }
}
