package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.functions.ScalarFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ML_PREDICT} with the {@code onnx} provider in a real streaming TableEnvironment: a Kafka
 * table of Fashion-MNIST images (JSON, the in-process broker) through the shipped CNN into a Kafka
 * table, answered as the DataStream job answers the same images; bad rows follow the chosen
 * policy; a killed task and a savepoint restore lose no row.
 */
class SqlPredictEndToEndTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    static final ObjectMapper JSON = new ObjectMapper();
    static EmbeddedKafka kafka;
    static FashionMnist images;
    static Path models;

    @BeforeAll
    static void start() throws Exception {
        kafka = EmbeddedKafka.start();
        Path root = FashionMnist.findRoot();
        images = FashionMnist.load(root);
        models = root.resolve("models").toAbsolutePath();
    }

    @AfterAll
    static void stop() throws Exception {
        kafka.close();
    }

    /** Rows {"id": i, "image": [784 floats]}; every {@code badEvery}-th row has 10 pixels instead. */
    static List<ProducerRecord<byte[], byte[]>> imageRows(int from, int n, int badEvery) {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
        for (int i = from; i < from + n; i++) {
            ObjectNode row = JSON.createObjectNode();
            row.put("id", i);
            ArrayNode pixels = row.putArray("image");
            float[] image = images.image(i % images.size());
            int count = badEvery > 0 && i % badEvery == badEvery - 1 ? 10 : image.length;
            for (int p = 0; p < count; p++) {
                pixels.add(image[p]);
            }
            out.add(new ProducerRecord<>("unused", null, row.toString().getBytes(StandardCharsets.UTF_8)));
        }
        return out;
    }

    StreamTableEnvironment tables(int parallelism, long checkpointMs) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        if (checkpointMs > 0) {
            env.enableCheckpointing(checkpointMs);
        }
        return StreamTableEnvironment.create(env);
    }

    void createTables(StreamTableEnvironment t, String in, String out, boolean bounded, String modelOptions) {
        t.executeSql("CREATE TABLE images (id BIGINT, image ARRAY<FLOAT>) WITH ('connector' = 'kafka', 'topic' = '"
                + in + "', 'properties.bootstrap.servers' = '" + kafka.bootstrapServers() + "', "
                + "'properties.group.id' = '" + in + "', 'scan.startup.mode' = 'earliest-offset', "
                + (bounded ? "'scan.bounded.mode' = 'latest-offset', " : "") + "'format' = 'json')");
        t.executeSql("CREATE TABLE scores (id BIGINT, logits ARRAY<FLOAT>, error STRING) WITH ('connector' = 'kafka', "
                + "'topic' = '" + out + "', 'properties.bootstrap.servers' = '" + kafka.bootstrapServers() + "', "
                + "'format' = 'json')");
        t.executeSql("CREATE MODEL fashion INPUT (image ARRAY<FLOAT>) OUTPUT (logits ARRAY<FLOAT>, error STRING) "
                + "WITH ('provider' = 'onnx', 'repository' = '" + models + "', 'model' = 'fashion-mnist-cnn', "
                + "'max-batch-size' = '32', 'on-error' = 'ERROR_COLUMN'" + modelOptions + ")");
    }

    static final String INSERT = "INSERT INTO scores SELECT id, logits, error FROM ML_PREDICT(TABLE images, "
            + "MODEL fashion, DESCRIPTOR(image))";

    /** The scores topic's rows by id (the last one wins), once {@code n} distinct ids arrived. */
    static Map<Long, JsonNode> scores(String topic, int n, Duration timeout) {
        Map<Long, JsonNode> byId = new HashMap<>();
        KafkaTopics.read(kafka.bootstrapServers(), topic, got -> {
            for (ConsumerRecord<byte[], byte[]> r : got.subList(byId.isEmpty() ? 0 : 0, got.size())) {
                try {
                    JsonNode row = JSON.readTree(r.value());
                    byId.put(row.get("id").asLong(), row);
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
            return byId.size() >= n;
        }, timeout, Duration.ZERO);
        return byId;
    }

    @Test
    void mlPredictAnswersEveryRowAsTheDataStreamJobAnswersTheSameImages() throws Exception {
        int n = 200;
        kafka.createTopics(2, "sql-images", "sql-scores");
        KafkaTopics.produce(kafka.bootstrapServers(), "sql-images", imageRows(0, n, 40));
        StreamTableEnvironment t = tables(2, 0);
        createTables(t, "sql-images", "sql-scores", true, "");
        t.executeSql(INSERT).await();
        Map<Long, JsonNode> sql = scores("sql-scores", n, Duration.ofSeconds(60));
        assertThat(sql).hasSize(n);

        // The DataStream job on the same images, as protocol requests.
        Configuration config = TestJobs.config(kafka, "sql-ds", 2, models);
        List<ProducerRecord<byte[], byte[]>> requests = TestJobs.imageRequests(images, "fashion-mnist-cnn", 0, n);
        for (int i = 39; i < n; i += 40) {
            // the same bad rows: 10 pixels
            var bad = io.flinkgpu.inference.protocol.Tensor.ofFloats("input", new long[] {1, 10},
                    java.util.Arrays.copyOf(images.image(i % images.size()), 10));
            var r = new io.flinkgpu.inference.protocol.InferenceRequest("req-" + i, "fashion-mnist-cnn", null,
                    List.of(bad), new io.flinkgpu.inference.protocol.RequestParameters(0, 0, "it"));
            requests.set(i, new ProducerRecord<>("unused", r.id().getBytes(StandardCharsets.UTF_8),
                    new io.flinkgpu.inference.protocol.JsonCodec().encodeRequest(r)));
        }
        KafkaTopics.produce(kafka.bootstrapServers(), TestJobs.requests("sql-ds"), requests);
        JobClient job = TestJobs.start(config, 2, "datastream job beside ML_PREDICT");
        Map<String, InferenceResponse> ds = new HashMap<>();
        try {
            for (ConsumerRecord<byte[], byte[]> r : KafkaTopics.read(kafka.bootstrapServers(),
                    TestJobs.responses("sql-ds"), got -> got.size() >= n, Duration.ofSeconds(90), Duration.ZERO)) {
                InferenceResponse response = WireFormat.JSON.decodeResponse(r.value());
                ds.put(response.id(), response);
            }
        } finally {
            job.cancel().get();
        }
        assertThat(ds).hasSize(n);
        int compared = 0;
        for (int i = 0; i < n; i++) {
            JsonNode row = sql.get((long) i);
            InferenceResponse response = ds.get("req-" + i);
            if (response.isError()) {
                assertThat(row.get("logits").isNull()).isTrue();
                assertThat(row.get("error").asText()).startsWith(response.error().code().name() + ":");
                continue;
            }
            assertThat(row.get("error").isNull()).as("row %d: %s", i, row).isTrue();
            float[] expected = response.outputs().get(0).asFloats();
            assertThat(row.get("logits")).hasSize(expected.length);
            for (int k = 0; k < expected.length; k++) {
                // Batches are cut differently in the two runs; ONNX Runtime's sums may differ in the last bits.
                assertThat((float) row.get("logits").get(k).asDouble()).isCloseTo(expected[k],
                        org.assertj.core.data.Offset.offset(1e-4f));
            }
            compared++;
        }
        assertThat(compared).isEqualTo(n - n / 40);
    }

    /** Fails its task once, at the row with id {@link #FAIL_AT}, after the rows before it were checkpointed. */
    public static class FailOnce extends ScalarFunction {
        static final AtomicInteger FAILURES = new AtomicInteger();
        static final long FAIL_AT = 150;

        public Long eval(Long id) {
            if (id == FAIL_AT && FAILURES.getAndIncrement() == 0) {
                throw new IllegalStateException("killing the task at row " + id);
            }
            return id;
        }
    }

    @Test
    void aKilledTaskLosesNoRowThatWasInFlight() throws Exception {
        int n = 300;
        kafka.createTopics(1, "sql-fail-images", "sql-fail-scores");
        StreamTableEnvironment t = tables(1, 100);
        t.getConfig().set("restart-strategy.type", "fixed-delay");
        t.getConfig().set("restart-strategy.fixed-delay.attempts", "3");
        t.getConfig().set("restart-strategy.fixed-delay.delay", "200 ms");
        // A simulated GPU of 20 ms per batch keeps rows in flight (queued or executing) at every checkpoint.
        createTables(t, "sql-fail-images", "sql-fail-scores", false,
                ", 'device' = 'simulated', 'inference.device.simulated.speed' = '20+0.2*b'");
        t.createTemporarySystemFunction("FAIL_ONCE", FailOnce.class);
        TableResult result = t.executeSql("INSERT INTO scores SELECT FAIL_ONCE(id), logits, error FROM "
                + "ML_PREDICT(TABLE images, MODEL fashion, DESCRIPTOR(image))");
        JobClient job = result.getJobClient().orElseThrow();
        try {
            KafkaTopics.produce(kafka.bootstrapServers(), "sql-fail-images", imageRows(0, n, 0));
            Map<Long, JsonNode> rows = scores("sql-fail-scores", n, Duration.ofSeconds(120));
            assertThat(FailOnce.FAILURES.get()).as("the task was killed and restarted").isGreaterThanOrEqualTo(1);
            assertThat(rows).hasSize(n);
            assertThat(rows.values()).allSatisfy(r -> {
                assertThat(r.get("error").isNull()).isTrue();
                assertThat(r.get("logits")).hasSize(10);
            });
            assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.RUNNING);
        } finally {
            job.cancel().get();
        }
    }

    @Test
    void aSavepointRestoreCarriesOnWhereTheQueryStopped(@TempDir Path savepoints) throws Exception {
        kafka.createTopics(1, "sql-sp-images", "sql-sp-scores");
        StreamTableEnvironment first = tables(1, 200);
        createTables(first, "sql-sp-images", "sql-sp-scores", false,
                ", 'device' = 'simulated', 'inference.device.simulated.speed' = '10+0.2*b'");
        JobClient job = first.executeSql(INSERT).getJobClient().orElseThrow();
        KafkaTopics.produce(kafka.bootstrapServers(), "sql-sp-images", imageRows(0, 100, 0));
        assertThat(scores("sql-sp-scores", 100, Duration.ofSeconds(60))).hasSize(100);
        String savepoint = job.stopWithSavepoint(false, savepoints.toUri().toString(), SavepointFormatType.CANONICAL)
                .get();

        KafkaTopics.produce(kafka.bootstrapServers(), "sql-sp-images", imageRows(100, 100, 0));
        StreamTableEnvironment second = tables(1, 200);
        second.getConfig().set("execution.state-recovery.path", savepoint);
        createTables(second, "sql-sp-images", "sql-sp-scores", false,
                ", 'device' = 'simulated', 'inference.device.simulated.speed' = '10+0.2*b'");
        JobClient restored = second.executeSql(INSERT).getJobClient().orElseThrow();
        try {
            Map<Long, JsonNode> rows = scores("sql-sp-scores", 200, Duration.ofSeconds(60));
            assertThat(rows).hasSize(200);
            assertThat(rows.values()).allSatisfy(r -> assertThat(r.get("logits")).hasSize(10));
        } finally {
            restored.cancel().get();
        }
    }
}
