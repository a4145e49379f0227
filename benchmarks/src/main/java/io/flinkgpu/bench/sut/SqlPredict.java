package io.flinkgpu.bench.sut;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

/**
 * The SQL configurations: the requests topic as a Kafka table whose tensor columns are BYTES
 * holding the binary format's raw tensor data ({@link SqlRowCodec}: value format {@code raw} for
 * one input, {@code json} with base64 fields for several), {@code ML_PREDICT} with the
 * {@code onnx} model provider, into a Kafka table of the same kind whose record key, like the
 * requests', is the request id:
 *
 * <pre>
 *   INSERT INTO responses SELECT id, &lt;outputs&gt;, MAP['error', CAST(error AS BYTES)]
 *   FROM ML_PREDICT(TABLE requests, MODEL bench_model, DESCRIPTOR(&lt;inputs&gt;),
 *                   MAP['async', 'true', 'max-concurrent-operations', 'N', 'output-mode', 'ALLOW_UNORDERED'])
 * </pre>
 *
 * (a JSON answer, of several outputs, carries the error column itself instead of the header).
 * The model's options come from the same configuration the DataStream job gets (defaults, the
 * run's {@code -D} options and the configuration's own): {@code max-batch-size},
 * {@code max-queue-delay} and {@code device} from their {@code inference.*} keys, every other
 * {@code inference.*} key of the library's runtime passed through as it is (execution threads,
 * intra-op threads, the simulated device's speed, ...). Like the job it runs at parallelism 1 on a
 * local cluster with RocksDB, the job's checkpoint interval, buffer timeout and object reuse, and
 * a Kafka sink with the job's 2 ms linger.
 */
public final class SqlPredict {
    private SqlPredict() {}

    /**
     * The configuration key (the benchmark's own, not Flink's) for ML_PREDICT's
     * {@code max-concurrent-operations}: rows its async operator keeps in flight per task.
     */
    public static final String MAX_CONCURRENT = "bench.sql.max-concurrent-operations";

    /** The model's name in the SQL catalog. */
    static final String SQL_MODEL = "bench_model";
    /** The OUTPUT column holding a row's error (on-error = ERROR_COLUMN). */
    static final String ERROR_COLUMN = "error";
    /** The responses table's writable metadata column of record headers (raw answers). */
    static final String HEADERS = "headers";

    /** The runtime options the provider takes as its own options rather than passed through. */
    private static final Set<String> TRANSLATED = io.flinkgpu.sql.OnnxModelOptions.OWNED_RUNTIME_KEYS.keySet();

    /**
     * The rows in flight that let ML_PREDICT fill batches as the job does: the job's operator takes
     * input until {@code max-enqueued-batches} full batches wait besides the one executing on each
     * execution thread, i.e. {@code max-batch-size x (max-enqueued-batches + execution-threads)}
     * requests, the execution threads as the runtime counts them where the option is unset (160 at
     * the defaults on a 2-core machine, where Flink's own default is 10, which would cap every
     * batch at 10 rows).
     */
    public static int concurrency(ReadableConfig c) {
        return c.get(GpuInferenceOptions.MAX_BATCH_SIZE)
                * (c.get(GpuInferenceOptions.MAX_ENQUEUED_BATCHES) + sharedRuntimeThreads(c));
    }

    /** The execution threads of the shared runtime {@code c} configures, on this machine's device. */
    static int sharedRuntimeThreads(ReadableConfig c) {
        return Deployments.executionThreads(c, null);
    }

    /** The rows' codec for {@code model} of the repository in {@code c}. */
    public static SqlRowCodec codec(ReadableConfig c, String model) {
        return new SqlRowCodec(model, config(c, model), ERROR_COLUMN);
    }

    private static ModelConfig config(ReadableConfig c, String model) {
        String repository = c.get(GpuInferenceOptions.MODEL_REPOSITORY);
        return ModelRepository.open(Path.of(repository)).model(model).orElseThrow(() ->
                new IllegalArgumentException("the repository " + repository + " has no model '" + model + "'"))
                .config();
    }

    /** The model's WITH options for {@code model} under {@code c}, in order. */
    public static Map<String, String> modelOptions(Configuration c, String model) {
        Map<String, String> with = new LinkedHashMap<>();
        with.put("provider", "onnx");
        with.put("repository", c.get(GpuInferenceOptions.MODEL_REPOSITORY));
        with.put("model", model);
        with.put("max-batch-size", String.valueOf(c.get(GpuInferenceOptions.MAX_BATCH_SIZE)));
        with.put("max-queue-delay", c.get(GpuInferenceOptions.MAX_QUEUE_DELAY).toNanos() + " ns");
        with.put("device", c.get(GpuInferenceOptions.DEVICE_TYPE));
        with.put("on-error", "ERROR_COLUMN");
        with.put("error-column", ERROR_COLUMN);
        Set<String> runtime = io.flinkgpu.sql.OnnxModelProviderFactory.runtimeOptionKeys();
        new java.util.TreeMap<>(c.toMap()).forEach((k, v) -> {
            if (runtime.contains(k) && !TRANSLATED.contains(k)) {
                with.put(k, v);
            }
        });
        return with;
    }

    /**
     * The runtime settings the provider builds from {@link #modelOptions}: equal to the query's,
     * so that {@link io.flinkgpu.inference.service.InferenceService#acquire} with them finds the
     * query's shared runtime.
     */
    public static InferenceSettings runtimeSettings(Configuration c, String model) {
        Configuration runtime = new Configuration();
        modelOptions(c, model).forEach((k, v) -> {
            if (k.startsWith("inference.")) {
                runtime.setString(k, v);
            }
        });
        runtime.set(GpuInferenceOptions.MODEL_REPOSITORY, c.get(GpuInferenceOptions.MODEL_REPOSITORY));
        runtime.set(GpuInferenceOptions.MAX_BATCH_SIZE, c.get(GpuInferenceOptions.MAX_BATCH_SIZE));
        runtime.set(GpuInferenceOptions.MAX_QUEUE_DELAY, java.time.Duration.ofNanos(
                c.get(GpuInferenceOptions.MAX_QUEUE_DELAY).toNanos()));
        runtime.set(GpuInferenceOptions.DEVICE_TYPE, c.get(GpuInferenceOptions.DEVICE_TYPE));
        return InferenceSettings.fromConfiguration(runtime);
    }

    /** The statements that set the query up, in order, the INSERT last. */
    public static List<String> statements(Configuration c, String model) {
        SqlRowCodec rows = codec(c, model);
        String bootstrap = c.get(InferenceJobOptions.BOOTSTRAP_SERVERS);
        String inputs = rows.inputs().stream().map(t -> column(t.name())).collect(Collectors.joining(", "));
        String outputs = rows.outputs().stream().map(t -> column(t.name())).collect(Collectors.joining(", "));
        Map<String, String> read = new LinkedHashMap<>(Map.of("connector", "kafka",
                "topic", c.get(InferenceJobOptions.REQUESTS_TOPIC),
                "properties.bootstrap.servers", bootstrap,
                "properties.group.id", c.get(InferenceJobOptions.GROUP_ID),
                "scan.startup.mode", startupMode(c.get(InferenceJobOptions.STARTING_OFFSETS)),
                "key.format", "raw", "key.fields", "id", "value.fields-include", "EXCEPT_KEY"));
        if (rows.rawRequests()) {
            read.put("value.format", "raw");
        } else {
            read.put("value.format", "json");
            // a value that is not JSON or not base64 is skipped (the harness counts it lost), never a failed task
            read.put("value.json.ignore-parse-errors", "true");
        }
        String requests = "CREATE TEMPORARY TABLE requests (`id` STRING, " + inputs + ") WITH (" + options(read) + ")";
        Map<String, String> write = new LinkedHashMap<>(Map.of("connector", "kafka",
                "topic", c.get(InferenceJobOptions.RESPONSES_TOPIC),
                "properties.bootstrap.servers", bootstrap,
                "key.format", "raw", "key.fields", "id", "value.fields-include", "EXCEPT_KEY",
                "value.format", rows.rawAnswers() ? "raw" : "json",
                "sink.delivery-guarantee", "at-least-once",
                "properties.linger.ms", "2"));
        // raw holds one column: a failed row's error goes into a record header, its value is null
        String answerColumns = rows.rawAnswers()
                ? outputs + ", `" + HEADERS + "` MAP<STRING, BYTES> METADATA"
                : outputs + ", `" + ERROR_COLUMN + "` STRING";
        String responses = "CREATE TEMPORARY TABLE responses (`id` STRING, " + answerColumns + ") WITH ("
                + options(write) + ")";
        String createModel = "CREATE TEMPORARY MODEL " + SQL_MODEL + " INPUT (" + inputs + ") OUTPUT (" + outputs
                + ", `" + ERROR_COLUMN + "` STRING) WITH (" + options(modelOptions(c, model)) + ")";
        String descriptor = rows.inputs().stream().map(t -> "`" + t.name() + "`").collect(Collectors.joining(", "));
        String outputNames = rows.outputs().stream().map(t -> "`" + t.name() + "`").collect(Collectors.joining(", "));
        // a null map value writes no header: a success has none
        String error = rows.rawAnswers()
                ? "MAP['" + SqlRowCodec.ERROR_HEADER + "', CAST(`" + ERROR_COLUMN + "` AS BYTES)]"
                : "`" + ERROR_COLUMN + "`";
        int concurrent = c.getOptional(org.apache.flink.configuration.ConfigOptions.key(MAX_CONCURRENT).intType()
                .noDefaultValue()).orElse(concurrency(c));
        String insert = "INSERT INTO responses SELECT `id`, " + outputNames + ", " + error + " FROM ML_PREDICT("
                + "TABLE requests, MODEL " + SQL_MODEL + ", DESCRIPTOR(" + descriptor + "), MAP['async', 'true', "
                + "'max-concurrent-operations', '" + concurrent + "', 'output-mode', 'ALLOW_UNORDERED'])";
        return List.of(requests, responses, createModel, insert);
    }

    /**
     * Starts the query on a local cluster of its own (the caller picks the thread group). {@code c}
     * holds the topics, the model repository and every option of the run.
     */
    static JobClient start(Configuration c, String model, String name) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(c);
        env.setParallelism(1);
        Configuration state = new Configuration();
        if (c.getOptional(StateBackendOptions.STATE_BACKEND).isEmpty()) {
            state.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        }
        env.configure(state);
        env.setBufferTimeout(c.get(InferenceJobOptions.BUFFER_TIMEOUT).toMillis());
        env.getConfig().enableObjectReuse();
        long interval = c.get(InferenceJobOptions.CHECKPOINT_INTERVAL).toMillis();
        if (interval > 0) {
            env.enableCheckpointing(interval);
        }
        StreamTableEnvironment tables = StreamTableEnvironment.create(env);
        tables.getConfig().set("pipeline.name", name);
        List<String> statements = statements(c, model);
        for (String ddl : statements.subList(0, statements.size() - 1)) {
            tables.executeSql(ddl);
        }
        return tables.executeSql(statements.get(statements.size() - 1)).getJobClient().orElseThrow(() ->
                new IllegalStateException("the INSERT started no job"));
    }

    static String startupMode(String startingOffsets) {
        return switch (startingOffsets.toLowerCase(java.util.Locale.ROOT)) {
            case "earliest" -> "earliest-offset";
            case "latest" -> "latest-offset";
            default -> throw new IllegalArgumentException("starting offsets '" + startingOffsets + "': the SQL "
                    + "configurations read from earliest or latest");
        };
    }

    /** {@code `name` BYTES}: one sample of the tensor as raw little-endian bytes (the binary format's data). */
    static String column(String name) {
        return "`" + name.replace("`", "``") + "` BYTES";
    }

    private static String options(Map<String, String> options) {
        return new java.util.TreeMap<>(options).entrySet().stream()
                .map(e -> quote(e.getKey()) + " = " + quote(e.getValue()))
                .collect(Collectors.joining(", "));
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "''") + "'";
    }
}
