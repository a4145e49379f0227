package io.flinkgpu.sql;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.service.InferenceService;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.testutils.InMemoryReporter;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.async.AsyncWaitOperatorFactory;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The {@code onnx} model provider in a real streaming TableEnvironment on a MiniCluster, with the
 * library's test models (echo models of every element type, an affine map with two outputs, a
 * variable-length sum, a model of two inputs).
 */
class OnnxModelProviderTest {
    static final String MODELS = Path.of("../gpu-operator-udf/src/test/resources/models").toAbsolutePath()
            .normalize().toString();

    static final InMemoryReporter REPORTER = InMemoryReporter.createWithRetainedMetrics();

    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setConfiguration(REPORTER.addToConfiguration(new Configuration()))
            .setNumberTaskManagers(1)
            .setNumberSlotsPerTaskManager(4)
            .build());

    StreamExecutionEnvironment env;
    StreamTableEnvironment tEnv;

    @BeforeEach
    void setUp() {
        env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        tEnv = StreamTableEnvironment.create(env);
        BAD_ROWS = view(BAD_ROWS_SELECT);
    }

    static String model(String name, String model, String input, String output, String... options) {
        StringBuilder with = new StringBuilder("'provider' = 'onnx', 'repository' = '" + MODELS + "', 'model' = '"
                + model + "'");
        for (int i = 0; i + 1 < options.length; i += 2) {
            with.append(", '").append(options[i]).append("' = '").append(options[i + 1]).append("'");
        }
        return "CREATE TEMPORARY MODEL " + name + " INPUT (" + input + ") OUTPUT (" + output + ") WITH (" + with + ")";
    }

    private static int views;

    /** A temporary view of {@code select} (ML_PREDICT takes a table by name). */
    static String view(StreamTableEnvironment tables, String select) {
        String name = "v" + views++;
        tables.executeSql("CREATE TEMPORARY VIEW " + name + " AS " + select);
        return name;
    }

    String view(String select) {
        return view(tEnv, select);
    }

    List<Row> collect(String query) throws Exception {
        List<Row> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(rows::add);
        }
        rows.sort((a, b) -> Integer.compare((Integer) a.getField(0), (Integer) b.getField(0)));
        return rows;
    }

    @Test
    void everyElementTypeRoundTripsThroughAnEchoModel() throws Exception {
        record Case(String model, String sqlType, String values, Object expected) {}
        List<Case> cases = List.of(
                new Case("echo-fp32", "ARRAY<FLOAT>", "CAST(ARRAY[1.5, -2.0, 3.25] AS ARRAY<FLOAT>)",
                        new Float[] {1.5f, -2.0f, 3.25f}),
                new Case("echo-fp16", "ARRAY<FLOAT>", "CAST(ARRAY[0.5, -2.0, 1024.0] AS ARRAY<FLOAT>)",
                        new Float[] {0.5f, -2.0f, 1024.0f}),
                new Case("echo-int64", "ARRAY<BIGINT>", "CAST(ARRAY[1, -9000000000, 7] AS ARRAY<BIGINT>)",
                        new Long[] {1L, -9_000_000_000L, 7L}),
                new Case("echo-int32", "ARRAY<INT>", "ARRAY[4, -5, 6]", new Integer[] {4, -5, 6}),
                new Case("echo-bool", "ARRAY<BOOLEAN>", "ARRAY[TRUE, FALSE, TRUE]", new Boolean[] {true, false, true}),
                new Case("echo-bytes", "ARRAY<STRING>", "ARRAY['a', 'ünï', '']", new String[] {"a", "ünï", ""}));
        for (Case c : cases) {
            String name = c.model().replace('-', '_');
            tEnv.executeSql(model(name, c.model(), "x " + c.sqlType(), "y " + c.sqlType()));
            List<Row> rows = collect("SELECT 1, y FROM ML_PREDICT(TABLE " + view("SELECT " + c.values() + " AS x")
                    + ", MODEL " + name + ", DESCRIPTOR(x))");
            assertThat(rows).as(c.model()).hasSize(1);
            assertThat((Object[]) rows.get(0).getField(1)).as(c.model()).containsExactly((Object[]) c.expected());
        }
    }

    @Test
    void outputsMapByNameInAnyOrderOrByPositionAndScalarsToOneElementTensors() throws Exception {
        tEnv.executeSql(model("by_name", "affine-fp32", "x ARRAY<FLOAT>", "norm FLOAT, y ARRAY<FLOAT>"));
        tEnv.executeSql(model("by_position", "affine-fp32", "features ARRAY<FLOAT>", "o1 ARRAY<FLOAT>, o2 FLOAT"));
        String source = view("SELECT * FROM (VALUES (1, CAST(ARRAY[1.0, 2.0, 0.5, -1.0] AS ARRAY<FLOAT>)), "
                + "(2, CAST(ARRAY[0.0, 0.0, 3.0, 4.0] AS ARRAY<FLOAT>))) AS v(id, x)");
        List<Row> named = collect("SELECT id, norm, y FROM ML_PREDICT(TABLE " + source + ", MODEL by_name, DESCRIPTOR(x))");
        List<Row> positional = collect("SELECT id, o2, o1 FROM ML_PREDICT(TABLE " + source
                + ", MODEL by_position, DESCRIPTOR(x))");
        // norm = sum(x * x)
        assertThat(named.get(0).getField(1)).isEqualTo(1f + 4f + 0.25f + 1f);
        assertThat(named.get(1).getField(1)).isEqualTo(25f);
        assertThat(positional).isEqualTo(named);
        assertThat((Float[]) named.get(0).getField(2)).hasSize(3);
    }

    @Test
    void aVariableDimensionComesFromTheArrayLengthAndTwoInputsMapByPosition() throws Exception {
        tEnv.executeSql(model("seq_sum", "seq-sum", "tokens ARRAY<BIGINT>", "total BIGINT"));
        List<Row> sums = collect("SELECT id, total FROM ML_PREDICT(TABLE " + view("SELECT * FROM (VALUES "
                + "(1, CAST(ARRAY[5] AS ARRAY<BIGINT>)), (2, CAST(ARRAY[1, 2, 3, 4, 5, 6, 7] AS ARRAY<BIGINT>)), "
                + "(3, CAST(ARRAY[-10, 4] AS ARRAY<BIGINT>))) AS v(id, tokens)") + ", MODEL seq_sum, DESCRIPTOR(tokens))");
        assertThat(sums).extracting(r -> r.getField(1)).containsExactly(5L, 28L, -6L);

        tEnv.executeSql(model("two", "two-inputs", "p ARRAY<FLOAT>, q ARRAY<BIGINT>", "s ARRAY<FLOAT>"));
        List<Row> two = collect("SELECT 1, s FROM ML_PREDICT(TABLE " + view("SELECT CAST(ARRAY[0.5, -1.0] AS ARRAY<FLOAT>) AS p, "
                + "CAST(ARRAY[1, 2] AS ARRAY<BIGINT>) AS q") + ", MODEL two, DESCRIPTOR(p, q))");
        assertThat((Float[]) two.get(0).getField(1)).containsExactly(1.5f, 1.0f);
    }

    @Test
    void aBytesColumnCarriesANumericTensorAsRawLittleEndianBytesBothWays() throws Exception {
        tEnv.executeSql(model("raw_in", "echo-fp32", "x BYTES", "y ARRAY<FLOAT>", "on-error", "ERROR_COLUMN",
                "error-column", "e").replace("y ARRAY<FLOAT>)", "y ARRAY<FLOAT>, e STRING)"));
        tEnv.executeSql(model("raw_both", "echo-fp32", "x BYTES", "y BYTES"));
        // 1.0f, 2.0f, 3.0f little-endian; then 8 bytes (two floats) and 5 bytes (not whole floats)
        String source = view("SELECT * FROM (VALUES (1, X'0000803F0000004000004040'), (2, X'0000803F00000040'), "
                + "(3, X'0000803F00')) AS v(id, x)");
        List<Row> floats = collect("SELECT id, y, e FROM ML_PREDICT(TABLE " + source + ", MODEL raw_in, DESCRIPTOR(x))");
        assertThat((Float[]) floats.get(0).getField(1)).containsExactly(1f, 2f, 3f);
        assertThat((String) floats.get(1).getField(2)).startsWith("SHAPE_MISMATCH: column 'x' has 2 elements");
        assertThat((String) floats.get(2).getField(2)).startsWith("SHAPE_MISMATCH: column 'x' has 5 bytes");
        List<Row> bytes = collect("SELECT id, y FROM ML_PREDICT(TABLE " + source + ", MODEL raw_both, DESCRIPTOR(x))");
        assertThat((byte[]) bytes.get(0).getField(1)).containsExactly(0, 0, (byte) 0x80, 0x3F, 0, 0, 0, 0x40, 0, 0,
                0x40, 0x40);
    }

    @Test
    void mismatchesAreRefusedWhenTheQueryIsPlannedWithAClearMessage() {
        record Refusal(String model, String input, String output, String expected, String[] options) {}
        List<Refusal> refusals = List.of(
                new Refusal("echo-fp32", "x ARRAY<DOUBLE>", "y ARRAY<FLOAT>", "declare the column as FLOAT",
                        new String[0]),
                new Refusal("echo-fp32", "x FLOAT", "y ARRAY<FLOAT>", "a scalar column needs a tensor of one element",
                        new String[0]),
                new Refusal("echo-fp32", "x ARRAY<ARRAY<FLOAT>>", "y ARRAY<FLOAT>", "2 nested ARRAYs for a tensor of 1",
                        new String[0]),
                new Refusal("two-inputs", "p ARRAY<FLOAT>", "s ARRAY<FLOAT>", "map by position, but the model has 2",
                        new String[0]),
                new Refusal("two-inputs", "a ARRAY<FLOAT>", "`sum` ARRAY<FLOAT>", "lacks the model's input(s) b",
                        new String[0]),
                new Refusal("no-such-model", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "has no model 'no-such-model'",
                        new String[0]),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "has no version '9'",
                        new String[] {"version", "9"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "unknown option 'inference.no-such-key'",
                        new String[] {"inference.no-such-key", "1"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "use 'max-batch-size' instead",
                        new String[] {"inference.batching.max-batch-size", "4"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "needs an OUTPUT column 'error'",
                        new String[] {"on-error", "ERROR_COLUMN"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "'max-batch-size' must be at least 1",
                        new String[] {"max-batch-size", "0"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "'device' must be cpu, cuda, auto or simulated",
                        new String[] {"device", "tpu"}),
                new Refusal("echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "Unsupported options",
                        new String[] {"max-batchsize", "4"}));
        int n = 0;
        for (Refusal r : refusals) {
            String name = "refused_" + n++;
            tEnv.executeSql(model(name, r.model(), r.input(), r.output(), r.options()));
            String firstInput = r.input().split(" ")[0];
            String source = view("SELECT CAST(NULL AS " + r.input().substring(firstInput.length() + 1).split(",")[0]
                    + ") AS " + firstInput);
            String query = "SELECT * FROM ML_PREDICT(TABLE " + source + ", MODEL " + name + ", DESCRIPTOR("
                    + firstInput + "))";
            assertThatThrownBy(() -> tEnv.explainSql(query)).as(r.expected())
                    .isInstanceOf(ValidationException.class)
                    .satisfies(e -> assertThat(messages(e)).contains(r.expected()));
        }
    }

    static String messages(Throwable e) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }

    static final String BAD_ROWS_SELECT = "SELECT * FROM (VALUES (1, CAST(ARRAY[1.0, 2.0, 3.0] AS ARRAY<FLOAT>)), "
            + "(2, CAST(ARRAY[1.0, 2.0] AS ARRAY<FLOAT>)), (3, CAST(NULL AS ARRAY<FLOAT>)), "
            + "(4, CAST(ARRAY[1.0, CAST(NULL AS FLOAT), 3.0] AS ARRAY<FLOAT>)), "
            + "(5, CAST(ARRAY[4.0, 5.0, 6.0] AS ARRAY<FLOAT>))) AS v(id, x)";
    String BAD_ROWS;


    @Test
    void badRowsGetNullOutputsByDefaultAndTheirErrorInTheErrorColumnWhenAsked() throws Exception {
        tEnv.executeSql(model("nulls", "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>"));
        List<Row> nulls = collect("SELECT id, y FROM ML_PREDICT(TABLE " + BAD_ROWS + ", MODEL nulls, DESCRIPTOR(x))");
        assertThat(nulls).hasSize(5);
        assertThat((Float[]) nulls.get(0).getField(1)).containsExactly(1f, 2f, 3f);
        assertThat(nulls.get(1).getField(1)).isNull();
        assertThat(nulls.get(2).getField(1)).isNull();
        assertThat(nulls.get(3).getField(1)).isNull();
        assertThat((Float[]) nulls.get(4).getField(1)).containsExactly(4f, 5f, 6f);

        tEnv.executeSql(model("errors", "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>, error STRING",
                "on-error", "ERROR_COLUMN"));
        List<Row> errors = collect("SELECT id, y, error FROM ML_PREDICT(TABLE " + BAD_ROWS
                + ", MODEL errors, DESCRIPTOR(x))");
        assertThat(errors.get(0).getField(2)).isNull();
        assertThat((String) errors.get(1).getField(2)).startsWith("SHAPE_MISMATCH: column 'x' has 2 elements");
        assertThat((String) errors.get(2).getField(2)).startsWith("MISSING_INPUT: column 'x' is null");
        assertThat((String) errors.get(3).getField(2)).startsWith("INVALID_FIELD: column 'x' holds a null element");
        assertThat(errors.get(4).getField(2)).isNull();
        assertThat(errors.get(1).getField(1)).isNull();
    }

    @Test
    void onErrorFailFailsTheQuery() {
        tEnv.executeSql(model("strict", "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "on-error", "FAIL"));
        assertThatThrownBy(() -> collect("SELECT id, y FROM ML_PREDICT(TABLE " + BAD_ROWS
                + ", MODEL strict, DESCRIPTOR(x))"))
                .satisfies(e -> assertThat(messages(e)).contains("on-error = FAIL").contains("SHAPE_MISMATCH"));
    }

    /** The planner's choice of operator: Flink's AsyncWaitOperator unless 'async' is false. */
    private boolean runsAsync(String query) {
        StreamExecutionEnvironment graphEnv = StreamExecutionEnvironment.getExecutionEnvironment();
        StreamTableEnvironment graphTables = StreamTableEnvironment.create(graphEnv);
        graphTables.executeSql(model("probe", "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>"));
        graphTables.executeSql("CREATE TEMPORARY VIEW probe_source AS SELECT CAST(ARRAY[1.0, 2.0, 3.0] AS ARRAY<FLOAT>) AS x");
        DataStream<Row> stream = graphTables.toDataStream(graphTables.sqlQuery(query));
        stream.sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
        boolean async = false;
        for (StreamNode node : graphEnv.getStreamGraph().getStreamNodes()) {
            async |= node.getOperatorFactory() instanceof AsyncWaitOperatorFactory;
        }
        return async;
    }

    @Test
    void mlPredictRunsOnFlinksAsyncOperatorByDefaultAndTheSyncFlavourGivesTheSameRows() throws Exception {
        String select = "SELECT CAST(ARRAY[1.0, 2.0, 3.0] AS ARRAY<FLOAT>) AS x";
        String source = view(select);
        assertThat(runsAsync("SELECT * FROM ML_PREDICT(TABLE probe_source, MODEL probe, DESCRIPTOR(x))")).isTrue();
        assertThat(runsAsync("SELECT * FROM ML_PREDICT(TABLE probe_source"
                + ", MODEL probe, DESCRIPTOR(x), MAP['async', 'false'])")).isFalse();
        assertThat(tEnv.explainSql("SELECT * FROM ML_PREDICT(TABLE " + source + ", MODEL nothing_yet, DESCRIPTOR(x))"
                .replace("nothing_yet", createEcho("explained")))).contains("MLPredictTableFunction");

        tEnv.executeSql(model("sync_echo", "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>"));
        List<Row> async = collect("SELECT id, y FROM ML_PREDICT(TABLE " + BAD_ROWS + ", MODEL sync_echo, DESCRIPTOR(x))");
        List<Row> sync = collect("SELECT id, y FROM ML_PREDICT(TABLE " + BAD_ROWS
                + ", MODEL sync_echo, DESCRIPTOR(x), MAP['async', 'false'])");
        assertThat(sync).isEqualTo(async);
    }

    private String createEcho(String name) {
        tEnv.executeSql(model(name, "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>"));
        return name;
    }

    /** Counter totals over every subtask of {@code job} whose identifier ends with {@code suffix}. */
    static long counterTotal(JobID job, String model, String suffix) {
        long total = 0;
        for (Map.Entry<org.apache.flink.metrics.MetricGroup, Map<String, Metric>> g
                : REPORTER.getMetricsByGroup().entrySet()) {
            if (!job.toString().equals(g.getKey().getAllVariables().get("<job_id>"))) {
                continue;
            }
            for (Map.Entry<String, Metric> e : g.getValue().entrySet()) {
                String id = g.getKey().getMetricIdentifier(e.getKey());
                if (id.contains(".model." + model + ".") && id.endsWith(suffix) && e.getValue() instanceof Counter c) {
                    total += c.getCount();
                }
            }
        }
        return total;
    }

    @Test
    void rowsOfEveryTaskMeetInOneBatchOnTheSharedRuntimeAndMaxBatchSizeOneTurnsItOff() throws Exception {
        int rows = 240;
        long batched = batchesFor("batched", rows, "16");
        long unbatched = batchesFor("unbatched", rows, "1");
        assertThat(unbatched).isEqualTo(rows);
        // Two tasks, up to 10 rows in flight each (ML_PREDICT's default max-concurrent-operations), on
        // a simulated GPU of 20 ms per batch: rows wait for each other and are batched.
        assertThat(batched).isLessThan(rows / 3);
        assertThat(InferenceService.openRuntimes()).isZero();
    }

    private long batchesFor(String name, int rows, String maxBatch) throws Exception {
        env.setParallelism(2);
        tEnv.executeSql(model(name, "echo-fp32", "x ARRAY<FLOAT>", "y ARRAY<FLOAT>", "max-batch-size", maxBatch,
                "max-queue-delay", "20 ms", "device", "simulated", "inference.device.simulated.speed", "20+0.01*b"));
        tEnv.executeSql("CREATE TEMPORARY TABLE src_" + name + " (id INT) WITH ('connector' = 'datagen', "
                + "'number-of-rows' = '" + rows + "', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', "
                + "'fields.id.end' = '" + rows + "')");
        TableResult result = tEnv.executeSql("SELECT id, y FROM ML_PREDICT(TABLE " + view("SELECT id, CAST(ARRAY[CAST(id AS FLOAT), "
                + "1.0, 2.0] AS ARRAY<FLOAT>) AS x FROM src_" + name) + ", MODEL " + name + ", DESCRIPTOR(x))");
        JobID job = result.getJobClient().orElseThrow().getJobID();
        int answered = 0;
        try (CloseableIterator<Row> it = result.collect()) {
            while (it.hasNext()) {
                Row r = it.next();
                assertThat(((Float[]) r.getField(1))[0]).isEqualTo(((Integer) r.getField(0)).floatValue());
                answered++;
            }
        }
        result.getJobClient().orElseThrow().getJobExecutionResult().get();
        assertThat(answered).isEqualTo(rows);
        assertThat(counterTotal(job, "echo-fp32", ".responsesOut")).isEqualTo(rows);
        return counterTotal(job, "echo-fp32", ".batches");
    }
}
