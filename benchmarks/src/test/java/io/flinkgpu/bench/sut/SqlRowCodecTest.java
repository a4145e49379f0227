package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQL configurations' rows and statements: requests as the JSON rows the Kafka table reads,
 * answers (outputs or ML_PREDICT's error column) back into responses, and the DDL built from the
 * job's options.
 */
class SqlRowCodecTest {
    static final ObjectMapper JSON = new ObjectMapper();

    /** A repository with a two-input model (FP32 [13], INT64 [26]) of one FP32 output. */
    static Configuration twoInputs(Path repo) throws Exception {
        ModelRepoWriter.writeConfig(repo, "two", 128,
                List.of(ModelRepoWriter.tensor("dense", "FP32", 13), ModelRepoWriter.tensor("sparse", "INT64", 26)),
                List.of(ModelRepoWriter.tensor("probability", "FP32", 1)), "test model");
        Files.write(repo.resolve("two").resolve("1").resolve("model.onnx"), new byte[0]);
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repo.toString());
        return c;
    }

    static InferenceRequest twoInputRequest(String id, float first, long firstId) {
        float[] dense = new float[13];
        dense[0] = first;
        dense[12] = -0.25f;
        long[] sparse = new long[26];
        sparse[0] = firstId;
        sparse[25] = 9_000_000_000L;
        return new InferenceRequest(id, "two", null, List.of(Tensor.ofFloats("dense", new long[] {1, 13}, dense),
                Tensor.ofLongs("sparse", new long[] {1, 26}, sparse)), RequestParameters.DEFAULTS);
    }

    @Test
    void aRequestIsAJsonRowOfItsIdAndOneArrayPerInputThatReadsBackAsTheSameTensors(@TempDir Path repo)
            throws Exception {
        SqlRowCodec rows = SqlPredict.codec(twoInputs(repo), "two");
        InferenceRequest request = twoInputRequest("r3-17", 1.5f, 42);
        byte[] row = rows.encodeRequest(request);
        JsonNode json = JSON.readTree(row);
        assertThat(json.get("id").asText()).isEqualTo("r3-17");
        assertThat(json.get("dense")).hasSize(13);
        assertThat(json.get("dense").get(0).floatValue()).isEqualTo(1.5f);
        assertThat(json.get("sparse").get(25).longValue()).isEqualTo(9_000_000_000L);
        assertThat(json.size()).isEqualTo(3);

        InferenceRequest back = rows.decodeRequest(row);
        assertThat(back.id()).isEqualTo("r3-17");
        assertThat(back.inputs()).containsExactlyElementsOf(request.inputs());
    }

    @Test
    void aSamplesJsonIsWrittenOnceAndOnlyTheIdPerRequest(@TempDir Path repo) throws Exception {
        SqlRowCodec rows = SqlPredict.codec(twoInputs(repo), "two");
        InferenceRequest a = twoInputRequest("r1-1", 1, 1);
        byte[] first = rows.encodeRequest(a);
        byte[] again = rows.encodeRequest(new InferenceRequest("r1-2", "two", null, a.inputs(), a.parameters()));
        String firstText = new String(first, StandardCharsets.UTF_8);
        String againText = new String(again, StandardCharsets.UTF_8);
        assertThat(againText).isEqualTo(firstText.replace("\"r1-1\"", "\"r1-2\""));
        // the same first tensor with another second one is another sample: written afresh, not from the cache
        InferenceRequest other = twoInputRequest("r1-3", 1, 7);
        InferenceRequest mixed = new InferenceRequest("r1-3", "two", null,
                List.of(a.inputs().get(0), other.inputs().get(1)), a.parameters());
        assertThat(rows.decodeRequest(rows.encodeRequest(mixed)).inputs()).containsExactlyElementsOf(mixed.inputs());
        // an id that needs escaping stays valid JSON
        byte[] quoted = rows.encodeRequest(new InferenceRequest("a\"b\\c", "two", null, a.inputs(), a.parameters()));
        assertThat(JSON.readTree(quoted).get("id").asText()).isEqualTo("a\"b\\c");
    }

    @Test
    void anAnswerRowBecomesAResponseWithItsOutputsOrItsErrorCode(@TempDir Path repo) throws Exception {
        SqlRowCodec rows = SqlPredict.codec(twoInputs(repo), "two");
        InferenceResponse ok = rows.decodeResponse(utf8("{\"id\":\"r1-4\",\"probability\":[0.75],\"error\":null}"));
        assertThat(ok.isError()).isFalse();
        assertThat(ok.id()).isEqualTo("r1-4");
        assertThat(ok.output("probability").asFloats()).containsExactly(0.75f);
        // the rows carry no timings: batch size unknown (0), times NaN
        assertThat(ok.timings().batchSize()).isZero();
        assertThat(ok.timings().queueMs()).isNaN();

        InferenceResponse bad = rows.decodeResponse(utf8("{\"id\":\"r1-5\",\"probability\":null,"
                + "\"error\":\"SHAPE_MISMATCH: column 'dense' has 10 elements\"}"));
        assertThat(bad.isError()).isTrue();
        assertThat(bad.error().code()).isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(bad.error().message()).isEqualTo("column 'dense' has 10 elements");
        assertThat(rows.decodeResponse(utf8("{\"id\":\"r1-6\",\"probability\":null,\"error\":\"odd\"}")).error().code())
                .isEqualTo(ErrorCode.INTERNAL);
        // null outputs without an error (on-error = NULL) are a failed answer, never a success
        InferenceResponse silent = rows.decodeResponse(utf8("{\"id\":\"r1-7\",\"probability\":null,\"error\":null}"));
        assertThat(silent.isError()).isTrue();
        assertThat(silent.error().code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
        // an output of the wrong size is not a success either
        assertThatThrownBy(() -> rows.decodeResponse(utf8("{\"id\":\"r1-8\",\"probability\":[1,2],\"error\":null}")))
                .isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.SHAPE_MISMATCH));
        assertThatThrownBy(() -> rows.decodeResponse(utf8("not json")))
                .isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.MALFORMED_PAYLOAD));

        // what the SQL sink writes reads back as the response it came from
        InferenceResponse success = InferenceResponse.success("r1-9", "two", null,
                List.of(Tensor.ofFloats("probability", new long[] {1, 1}, 0.5f)), ok.timings());
        assertThat(rows.decodeResponse(rows.encodeResponse(success)).outputs()).isEqualTo(success.outputs());
        InferenceResponse failure = rows.decodeResponse(rows.encodeResponse(bad));
        assertThat(failure.error()).isEqualTo(bad.error());
    }

    @Test
    void theImageScenariosRequestsAreRowsOfOneFlatArray(@TempDir Path repo) throws Exception {
        ImageScenario image = new ImageScenario(FashionMnist.findRoot());
        image.prepare(repo);
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repo.toString());
        SqlRowCodec rows = SqlPredict.codec(c, image.model());
        InferenceRequest request = image.request("r0-3", 3);
        JsonNode json = JSON.readTree(rows.encodeRequest(request));
        assertThat(json.get("input")).hasSize(784);
        assertThat(rows.decodeRequest(rows.encodeRequest(request)).inputs()).containsExactlyElementsOf(
                request.inputs());
    }

    @Test
    void theStatementsCarryTheJobsOptionsToTheModelAndEnoughRowsInFlightToFillItsBatches(@TempDir Path repo)
            throws Exception {
        Configuration c = twoInputs(repo);
        c.set(InferenceJobOptions.BOOTSTRAP_SERVERS, "localhost:9092");
        c.set(InferenceJobOptions.REQUESTS_TOPIC, "req");
        c.set(InferenceJobOptions.RESPONSES_TOPIC, "resp");
        c.set(InferenceJobOptions.GROUP_ID, "g");
        c.set(InferenceJobOptions.STARTING_OFFSETS, "earliest");
        c.set(GpuInferenceOptions.EXECUTION_THREADS, 2);
        c.setString("inference.device.intra-op-threads", "1");
        List<String> statements = SqlPredict.statements(c, "two");
        assertThat(statements).hasSize(4);
        assertThat(statements.get(0)).startsWith("CREATE TEMPORARY TABLE requests (`id` STRING, `dense` ARRAY<FLOAT>, "
                + "`sparse` ARRAY<BIGINT>)").contains("'topic' = 'req'", "'format' = 'json'",
                "'scan.startup.mode' = 'earliest-offset'", "'json.ignore-parse-errors' = 'true'");
        assertThat(statements.get(1)).contains("`probability` ARRAY<FLOAT>, `error` STRING", "'key.fields' = 'id'",
                "'key.format' = 'raw'", "'value.format' = 'json'", "'topic' = 'resp'");
        String model = statements.get(2);
        // the library's defaults (max batch 32, delay 0), the job's device default and the options set
        assertThat(model).contains("'provider' = 'onnx'", "'model' = 'two'", "'max-batch-size' = '32'",
                "'max-queue-delay' = '0 ns'", "'device' = 'auto'", "'on-error' = 'ERROR_COLUMN'",
                "'inference.execution-threads' = '2'", "'inference.device.intra-op-threads' = '1'");
        // the job's Kafka options are not the model's
        assertThat(model).doesNotContain("inference.kafka", "inference.model-repository", "inference.batching");
        // 32 x (4 enqueued batches + 2 execution threads)
        assertThat(statements.get(3)).contains("ML_PREDICT(TABLE requests, MODEL bench_model, DESCRIPTOR(`dense`, "
                + "`sparse`)", "'max-concurrent-operations', '192'", "'output-mode', 'ALLOW_UNORDERED'");

        c.setString(GpuInferenceOptions.MAX_BATCH_SIZE.key(), "1");
        c.setString(SqlPredict.MAX_CONCURRENT, "160");
        List<String> one = SqlPredict.statements(c, "two");
        assertThat(one.get(2)).contains("'max-batch-size' = '1'").doesNotContain(SqlPredict.MAX_CONCURRENT);
        assertThat(one.get(3)).contains("'max-concurrent-operations', '160'");
        assertThat(SqlPredict.runtimeSettings(c, "two").batching().maxBatchSize()).isEqualTo(1);
        assertThat(SqlPredict.runtimeSettings(c, "two").executionThreads()).isEqualTo(2);
    }

    @Test
    void tensorsARowCannotCarryAreRefusedUpFront(@TempDir Path repo) throws Exception {
        ModelRepoWriter.writeConfig(repo, "text", 8, List.of(ModelRepoWriter.tensor("text", "BYTES", 1)),
                List.of(ModelRepoWriter.tensor("y", "FP32", 1)), "test model");
        Files.write(repo.resolve("text").resolve("1").resolve("model.onnx"), new byte[0]);
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repo.toString());
        assertThatThrownBy(() -> SqlPredict.codec(c, "text")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("BYTES");
        assertThatThrownBy(() -> SqlPredict.codec(c, "absent")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no model 'absent'");
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
