package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.bench.sut.Ceiling;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QueueBoundTest {
    /** One shape, 1 ms a request at batch 1 and no gain from batching. */
    private static final List<QueueBound.Group> ONE_MS = List.of(
            new QueueBound.Group("all", 1, new int[] {1}, new double[] {0.001}));

    @Test
    void oneServerWithoutBatchingIsAnMd1QueueWhoseMeanTimeMatchesPollaczekKhinchine() {
        for (double rho : new double[] {0.5, 0.8}) {
            // M/D/1: mean wait rho s / (2 (1 - rho)), plus the service time s
            double expected = 0.001 + rho * 0.001 / (2 * (1 - rho));
            QueueBound.Stats stats = QueueBound.simulate(ONE_MS, 1, 1, rho * 1000);
            assertThat(stats.meanSeconds()).as("rho %s", rho).isCloseTo(expected, within(0.04 * expected));
            assertThat(stats.meanBatch()).isEqualTo(1.0);
            assertThat(stats.p99Seconds()).isGreaterThan(stats.meanSeconds());
        }
    }

    @Test
    void theBoundApproachesCapacityAsTheBudgetGrowsAndIsZeroBelowTheServiceTime() {
        double tight = QueueBound.maxRate(ONE_MS, 1, 1, 0.005);
        double loose = QueueBound.maxRate(ONE_MS, 1, 1, 0.050);
        assertThat(tight).isGreaterThan(100).isLessThan(loose);
        assertThat(loose).isGreaterThan(900).isLessThan(1000);
        // at the bound the p99 is within the budget, and 2% above it no longer
        assertThat(QueueBound.simulate(ONE_MS, 1, 1, tight).p99Seconds()).isLessThanOrEqualTo(0.005);
        assertThat(QueueBound.simulate(ONE_MS, 1, 1, tight * 1.02).p99Seconds()).isGreaterThan(0.005);
        // a lone request takes 1 ms: a 0.5 ms budget admits no rate
        assertThat(QueueBound.maxRate(ONE_MS, 1, 1, 0.0005)).isZero();
    }

    @Test
    void moreThreadsAndBatchingThatPaysRaiseTheBound() {
        double one = QueueBound.maxRate(ONE_MS, 1, 1, 0.005);
        double two = QueueBound.maxRate(ONE_MS, 2, 1, 0.005);
        assertThat(two).isGreaterThan(one).isLessThan(2000);
        // 1 ms at batch 1, 4 ms at batch 32: batching lets one thread serve well past 1,000 req/s
        List<QueueBound.Group> batching = List.of(
                new QueueBound.Group("all", 1, new int[] {1, 32}, new double[] {0.001, 0.004}));
        double batched = QueueBound.maxRate(batching, 1, 32, 0.020);
        assertThat(batched).isGreaterThan(3000);
        assertThat(QueueBound.simulate(batching, 1, 32, batched).meanBatch()).isGreaterThan(2);
        assertThat(QueueBound.maxRate(batching, 1, 1, 0.020)).isLessThan(1000);
    }

    @Test
    void aLongShapeHoldsUpTheShortOnesSoAMixServesLessThanItsMeanServiceTimeSuggests() {
        // 90% of requests 1 ms, 10% 19 ms: a mean of 2.8 ms, but the long ones set the tail
        List<QueueBound.Group> mix = List.of(
                new QueueBound.Group("[16]", 0.9, new int[] {1}, new double[] {0.001}),
                new QueueBound.Group("[128]", 0.1, new int[] {1}, new double[] {0.019}));
        List<QueueBound.Group> uniform = List.of(
                new QueueBound.Group("all", 1, new int[] {1}, new double[] {0.0028}));
        assertThat(QueueBound.maxRate(mix, 1, 1, 0.060)).isLessThan(QueueBound.maxRate(uniform, 1, 1, 0.060));
        // at 10% load one thread still makes a short request wait behind a long one now and then,
        // often enough to set its p99; a second thread takes it at once
        QueueBound.Stats one = QueueBound.simulate(mix, 1, 1, 0.1 / 0.0028);
        assertThat(one.groupP99Seconds()[0]).isGreaterThan(0.005);
        assertThat(one.groupP99Seconds()[1]).isGreaterThan(one.groupP99Seconds()[0]);
        QueueBound.Stats two = QueueBound.simulate(mix, 2, 1, 0.1 / 0.0028);
        assertThat(two.groupP99Seconds()[0]).isLessThan(0.0015);
    }

    @Test
    void shortestFirstServesTheShortShapeSoonerAndTheLongOneLater() {
        List<QueueBound.Group> mix = List.of(
                new QueueBound.Group("[16]", 0.9, new int[] {1}, new double[] {0.001}),
                new QueueBound.Group("[128]", 0.1, new int[] {1}, new double[] {0.019}));
        double rate = 0.6 / 0.0028;
        QueueBound.Stats fifo = QueueBound.simulate(mix, 1, 1, rate);
        QueueBound.Stats sjf = QueueBound.simulate(mix, 1, 1, rate, QueueBound.Order.SHORTEST_FIRST);
        assertThat(sjf.groupP99Seconds()[0]).isLessThan(fifo.groupP99Seconds()[0]);
        assertThat(sjf.groupP99Seconds()[1]).isGreaterThan(fifo.groupP99Seconds()[1]);
        assertThat(sjf.meanSeconds()).as("shortest job first minimises the mean").isLessThan(fifo.meanSeconds());
        // one group: the order changes nothing
        List<QueueBound.Group> one = List.of(mix.get(0));
        assertThat(QueueBound.simulate(one, 1, 1, rate, QueueBound.Order.SHORTEST_FIRST).p99Seconds())
                .isEqualTo(QueueBound.simulate(one, 1, 1, rate).p99Seconds());
    }

    @Test
    void aGroupsBatchTimeIsInterpolatedBetweenMeasuredSizesAndScaledPerRequestOutsideThem() {
        QueueBound.Group g = new QueueBound.Group("g", 1, new int[] {2, 10}, new double[] {0.002, 0.006});
        assertThat(g.seconds(1)).isCloseTo(0.001, within(1e-12));
        assertThat(g.seconds(6)).isCloseTo(0.004, within(1e-12));
        assertThat(g.seconds(20)).isCloseTo(0.012, within(1e-12));
        assertThatThrownBy(() -> new QueueBound.Group("g", 1, new int[] {}, new double[] {}))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void groupsComeFromTheCeilingsPerShapePointsWithTheirSharesOrFromItsRawPoints() {
        List<Ceiling.Point> oneShape = List.of(new Ceiling.Point("raw", 1, 1000, 1, 1, 10, 0),
                new Ceiling.Point("onnxmodel", 1, 1, 1, 1, 10, 0), new Ceiling.Point("raw", 8, 4000, 1, 1, 10, 0));
        List<QueueBound.Group> one = QueueBound.groups(oneShape, Map.of());
        assertThat(one).hasSize(1);
        assertThat(one.get(0).share()).isEqualTo(1.0);
        assertThat(one.get(0).batches()).containsExactly(1, 8);
        assertThat(one.get(0).batchSeconds()).containsExactly(0.001, 0.002);

        List<Ceiling.Point> shapes = List.of(new Ceiling.Point("raw", 1, 60, 1, 1, 10, 0),
                new Ceiling.Point("raw [16]", 1, 200, 1, 1, 10, 0), new Ceiling.Point("raw [128]", 1, 25, 1, 1, 10, 0));
        List<QueueBound.Group> two = QueueBound.groups(shapes, Map.of("[16]", 3.0, "[128]", 1.0));
        assertThat(two).extracting(QueueBound.Group::label).containsExactly("[16]", "[128]");
        assertThat(two.get(0).share()).isEqualTo(0.75);
        assertThat(two.get(1).batchSeconds()).containsExactly(0.04);
        assertThatThrownBy(() -> QueueBound.groups(shapes, Map.of("[16]", 1.0)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[128]");
    }

    @Test
    void theReportReadsARunsRooflineEntriesAndFindsTheBoundOfEach() throws Exception {
        JsonNode result = new ObjectMapper().readTree("""
                {"run_id": "r1", "user_options": {},
                 "scenarios": [{"name": "nlp", "slo_p99_ms": 30,
                   "facts": {"samples_per_bucket": {"16": 90, "128": 10}},
                   "ceiling": [{"path": "raw", "batch": 1, "samplesPerSecond": 357, "p50Ms": 1, "p99Ms": 1, "runs": 1,
                                "otherCores": 0},
                               {"path": "raw [16]", "batch": 1, "samplesPerSecond": 1000, "p50Ms": 1, "p99Ms": 1,
                                "runs": 1, "otherCores": 0},
                               {"path": "raw [128]", "batch": 1, "samplesPerSecond": 52.63, "p50Ms": 1, "p99Ms": 1,
                                "runs": 1, "otherCores": 0}],
                   "configs": {"job-tuned-1": {"options": {"inference.batching.max-batch-size": "1",
                                                           "inference.execution-threads": "1"}, "goodput": 200,
                                               "extra_points": {"at_10pct_of_capacity": {"offered": 20}}},
                               "passthrough": {"unloaded_closed_loop_1": {"p50": 5.0}, "goodput": 9000}}}],
                 "targets": [{"scenario": "nlp", "target": "low_load_p99_vs_service_time", "config": "job-tuned-1",
                              "measured": 2.0, "per_class": [{"class": "16 tokens", "ratio": 2.0},
                                                             {"class": "128 tokens", "ratio": 1.2}]},
                             {"scenario": "nlp", "target": "goodput_vs_roofline", "config": "job-tuned-1 (best found)",
                              "roofline": 340, "measured": 0.59, "ceiling_sessions": 1},
                             {"scenario": "nlp", "target": "goodput_vs_roofline", "config": "job-batching-default",
                              "roofline": null, "measured": null}]}
                """);
        List<QueueBoundReport.Row> rows = QueueBoundReport.rows(result);
        assertThat(rows).hasSize(1);
        QueueBoundReport.Row row = rows.get(0);
        assertThat(row.config()).isEqualTo("job-tuned-1");
        assertThat(row.maxBatch()).isEqualTo(1);
        assertThat(row.budgetMs()).isEqualTo(25.0);
        assertThat(row.goodput()).isEqualTo(200);
        assertThat(row.groups()).extracting(QueueBound.Group::share).containsExactlyInAnyOrder(0.9, 0.1);
        assertThat(row.bound()).isCloseTo(QueueBound.maxRate(row.groups(), 1, 1, 0.025), within(1e-9));
        assertThat(row.shortestFirstBound()).isCloseTo(Math.min(1, QueueBound.maxRate(row.groups(), 1, 1, 0.025,
                QueueBound.Order.SHORTEST_FIRST) / row.roofline()), within(1e-9));
        assertThat(row.bound()).isPositive().isLessThan(340);
        assertThat(row.shareBound()).isCloseTo(row.bound() / 340, within(1e-9));
        List<QueueBoundReport.LowLoadRow> low = QueueBoundReport.lowLoadRows(result);
        assertThat(low).hasSize(1);
        assertThat(low.get(0).rate()).isEqualTo(20);
        assertThat(low.get(0).sessions()).isEqualTo(1);
        assertThat(low.get(0).classes()).extracting(QueueBoundReport.LowLoadClass::name)
                .containsExactly("16 tokens", "128 tokens");
        QueueBoundReport.LowLoadClass shortClass = low.get(0).classes().get(0);
        assertThat(shortClass.serviceMs()).isCloseTo(5.0 + 1.0, within(1e-6)); // floor + 1 ms at batch 1
        assertThat(shortClass.measuredRatio()).isEqualTo(2.0);
        assertThat(shortClass.idealRatio()).isCloseTo(shortClass.idealP99Ms() / shortClass.serviceMs(), within(1e-9))
                .isGreaterThanOrEqualTo(1.0);
        assertThat(QueueBoundReport.lowLoadMarkdown(low)).contains("| r1 | nlp | job-tuned-1 | 1 | 20.0 | 16 tokens |");
        assertThat(QueueBoundReport.groupOfClass(row.groups(), "128 tokens")).isEqualTo(
                row.groups().get(0).label().equals("[128]") ? 0 : 1);
        assertThat(QueueBoundReport.groupOfClass(row.groups(), "all")).isEqualTo(-1);
        String md = QueueBoundReport.markdown(rows, List.of("runs/r1/result.json"));
        assertThat(md).contains("| r1 | nlp | job-tuned-1 | 1 | 1 | 30 / 25.0 | 200 | 340 |", "`runs/r1/result.json`",
                "[16] 90%: 1.000 ms");
    }

    @Test
    void aRooflineEntryGetsTheSlosBoundBesideIt() {
        String detail = Targets.sloBoundDetail(2, 32, 126.6, 83, 0.72);
        assertThat(detail).contains("126.6 ms", "max batch 32", "2 threads", "83 req/s, 0.72 of R",
                "the goal is above what the SLO allows");
        assertThat(Targets.sloBoundDetail(1, 32, 56.8, 50673, 1.0)).contains("1 thread at").doesNotContain("goal");
        assertThat(Targets.maxBatch(Map.of("inference.batching.max-batch-size", "128"), Map.of())).isEqualTo(128);
        assertThat(Targets.maxBatch(Map.of(), Map.of("inference.batching.max-batch-size", "8"))).isEqualTo(8);
        assertThat(Targets.maxBatch(Map.of(), Map.of())).isEqualTo(128);
    }

    @Test
    void aRunIsReadWithTheDefaultsItRanWith() throws Exception {
        ObjectMapper json = new ObjectMapper();
        // a run before result.json recorded the operator's defaults ran with the batch cap of then
        JsonNode before = json.readTree("{\"user_options\": {\"inference.execution-threads\": \"2\"}}");
        Map<String, String> old = QueueBoundReport.runOptions(before);
        assertThat(Targets.maxBatch(Map.of(), old)).isEqualTo(32);
        assertThat(old).containsEntry("inference.execution-threads", "2");
        assertThat(Targets.maxBatch(Map.of("inference.batching.max-batch-size", "128"), old)).isEqualTo(128);
        // a run that recorded them, with a -D over them
        JsonNode recorded = json.readTree("{\"operator_defaults\": {\"inference.batching.max-batch-size\": \"64\"},"
                + " \"user_options\": {}}");
        assertThat(Targets.maxBatch(Map.of(), QueueBoundReport.runOptions(recorded))).isEqualTo(64);
        JsonNode overridden = json.readTree("{\"operator_defaults\": {\"inference.batching.max-batch-size\": \"64\"},"
                + " \"user_options\": {\"inference.batching.max-batch-size\": \"8\"}}");
        assertThat(Targets.maxBatch(Map.of(), QueueBoundReport.runOptions(overridden))).isEqualTo(8);
    }
}
