package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.formats.common.TimestampFormat;
import org.apache.flink.formats.json.JsonFormatOptions;
import org.apache.flink.formats.json.JsonRowDataDeserializationSchema;
import org.apache.flink.formats.json.JsonRowDataSerializationSchema;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The SQL configurations' records and statements: the id as the key, tensors as the binary
 * format's raw bytes (the whole value for one tensor, base64 fields of a JSON value for several,
 * read and written by Flink's own json format), answers' errors in a header or the error column,
 * and the DDL built from the job's options.
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

    static Configuration image(Path repo) throws Exception {
        new ImageScenario(FashionMnist.findRoot()).prepare(repo);
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repo.toString());
        return c;
    }

    static Configuration kafka(Configuration c) {
        c.set(InferenceJobOptions.BOOTSTRAP_SERVERS, "localhost:9092");
        c.set(InferenceJobOptions.REQUESTS_TOPIC, "req");
        c.set(InferenceJobOptions.RESPONSES_TOPIC, "resp");
        c.set(InferenceJobOptions.GROUP_ID, "g");
        c.set(InferenceJobOptions.STARTING_OFFSETS, "earliest");
        return c;
    }

    @Test
    void aSingleInputRequestsValueIsTheTensorsRawBytesTheBinaryFormatCarries(@TempDir Path repo) throws Exception {
        ImageScenario image = new ImageScenario(FashionMnist.findRoot());
        Configuration c = image(repo);
        SqlRowCodec rows = SqlPredict.codec(c, image.model());
        assertThat(rows.rawRequests()).isTrue();
        assertThat(rows.rawAnswers()).isTrue();
        InferenceRequest request = image.request("r0-3", 3);
        byte[] value = rows.requestValue(request);
        assertThat(value).hasSize(784 * 4);
        // exactly the tensor data inside the binary wire format's request
        Tensor tensor = request.inputs().get(0);
        assertThat(value).isEqualTo(tensor.data());
        assertThat(new BinaryCodec().decodeRequest(new BinaryCodec().encodeRequest(request)).inputs().get(0).data())
                .isEqualTo(value);
        InferenceRequest back = rows.readRequest(utf8("r0-3"), value);
        assertThat(back.id()).isEqualTo("r0-3");
        assertThat(back.inputs()).containsExactlyElementsOf(request.inputs());
        // a value of the wrong size is refused with a code, never taken
        assertThatThrownBy(() -> rows.readRequest(utf8("r0-4"), new byte[7])).isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.SHAPE_MISMATCH));
        assertThatThrownBy(() -> rows.readRequest(utf8("r0-4"), new byte[8])).isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.SHAPE_MISMATCH));
        assertThatThrownBy(() -> rows.readRequest(null, value)).isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.MISSING_FIELD));

        List<String> statements = SqlPredict.statements(kafka(c), image.model());
        assertThat(statements.get(0)).startsWith("CREATE TEMPORARY TABLE requests (`id` STRING, `input` BYTES)")
                .contains("'key.format' = 'raw'", "'key.fields' = 'id'", "'value.fields-include' = 'EXCEPT_KEY'",
                        "'value.format' = 'raw'").doesNotContain("json");
        assertThat(statements.get(1)).startsWith("CREATE TEMPORARY TABLE responses (`id` STRING, `logits` BYTES, "
                + "`headers` MAP<STRING, BYTES> METADATA)").contains("'value.format' = 'raw'", "'key.format' = 'raw'",
                "'key.fields' = 'id'", "'value.fields-include' = 'EXCEPT_KEY'").doesNotContain("json");
        assertThat(statements.get(2)).contains("INPUT (`input` BYTES) OUTPUT (`logits` BYTES, `error` STRING)");
        assertThat(statements.get(3)).startsWith("INSERT INTO responses SELECT `id`, `logits`, "
                + "MAP['error', CAST(`error` AS BYTES)] FROM ML_PREDICT(");
    }

    @Test
    void aRawAnswerIsTheOutputsBytesOrANullValueWithItsErrorInAHeader(@TempDir Path repo) throws Exception {
        ImageScenario image = new ImageScenario(FashionMnist.findRoot());
        SqlRowCodec rows = SqlPredict.codec(image(repo), image.model());
        float[] logits = new float[10];
        logits[3] = 2.5f;
        Tensor out = Tensor.ofFloats("logits", new long[] {1, 10}, logits);
        Timings unknown = new Timings(Double.NaN, Double.NaN, 0);
        InferenceResponse success = InferenceResponse.success("r1-9", image.model(), null, List.of(out), unknown);
        byte[] value = rows.answerValue(success);
        assertThat(value).isEqualTo(out.data());
        assertThat(rows.answerHeaders(success).toArray()).isEmpty();
        InferenceResponse ok = rows.readAnswer(utf8("r1-9"), value, new RecordHeaders());
        assertThat(ok.isError()).isFalse();
        assertThat(ok.id()).isEqualTo("r1-9");
        assertThat(ok.output("logits").asFloats()).containsExactly(logits);
        // the rows carry no timings: batch size unknown (0), times NaN
        assertThat(ok.timings().batchSize()).isZero();
        assertThat(ok.timings().queueMs()).isNaN();

        InferenceResponse failure = InferenceResponse.failure("r1-5", image.model(), null,
                new InferenceError(ErrorCode.SHAPE_MISMATCH, "column 'input' has 7 bytes"), unknown);
        assertThat(rows.answerValue(failure)).isNull();
        InferenceResponse bad = rows.readAnswer(utf8("r1-5"), null, rows.answerHeaders(failure));
        assertThat(bad.isError()).isTrue();
        assertThat(bad.error()).isEqualTo(failure.error());
        RecordHeaders odd = new RecordHeaders();
        odd.add(SqlRowCodec.ERROR_HEADER, utf8("odd: text"));
        assertThat(rows.readAnswer(utf8("r1-6"), null, odd).error())
                .isEqualTo(new InferenceError(ErrorCode.INTERNAL, "odd: text"));
        // a null value without an error (on-error = NULL) is a failed answer, never a success
        InferenceResponse silent = rows.readAnswer(utf8("r1-7"), null, new RecordHeaders());
        assertThat(silent.error().code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
        // an output of the wrong size is not a success either
        assertThatThrownBy(() -> rows.readAnswer(utf8("r1-8"), new byte[12], null))
                .isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.SHAPE_MISMATCH));
    }

    @Test
    void severalInputsAreAJsonValueOfBase64FieldsThatFlinksJsonFormatReadsAsTheTensorsBytes(@TempDir Path repo)
            throws Exception {
        SqlRowCodec rows = SqlPredict.codec(twoInputs(repo), "two");
        assertThat(rows.rawRequests()).isFalse();
        InferenceRequest request = twoInputRequest("r3-17", 1.5f, 42);
        byte[] value = rows.requestValue(request);
        JsonNode json = JSON.readTree(value);
        assertThat(json.size()).isEqualTo(2); // the id is the key, not a field
        assertThat(Base64.getDecoder().decode(json.get("dense").asText())).isEqualTo(request.inputs().get(0).data());
        assertThat(Base64.getDecoder().decode(json.get("sparse").asText())).isEqualTo(request.inputs().get(1).data());

        // what the requests table reads with Flink's json format: BYTES columns holding the tensors' bytes
        JsonRowDataDeserializationSchema flink = new JsonRowDataDeserializationSchema(
                rowType(new String[] {"dense", "sparse"}, new VarBinaryType(VarBinaryType.MAX_LENGTH),
                        new VarBinaryType(VarBinaryType.MAX_LENGTH)),
                InternalTypeInfo.of(rowType(new String[] {"dense", "sparse"},
                        new VarBinaryType(VarBinaryType.MAX_LENGTH), new VarBinaryType(VarBinaryType.MAX_LENGTH))),
                false, false, TimestampFormat.ISO_8601);
        flink.open(null);
        RowData row = flink.deserialize(value);
        assertThat(row.getBinary(0)).isEqualTo(request.inputs().get(0).data());
        assertThat(row.getBinary(1)).isEqualTo(request.inputs().get(1).data());

        assertThat(rows.readRequest(utf8("r3-17"), value).inputs()).containsExactlyElementsOf(request.inputs());
        // a sample's value is written once: the same bytes for every request of it
        assertThat(rows.requestValue(new InferenceRequest("r3-18", "two", null, request.inputs(),
                request.parameters()))).isSameAs(value);
        // the same first tensor with another second one is another sample: written afresh, not from the cache
        InferenceRequest other = twoInputRequest("r1-3", 1, 7);
        InferenceRequest mixed = new InferenceRequest("r1-3", "two", null,
                List.of(request.inputs().get(0), other.inputs().get(1)), request.parameters());
        assertThat(rows.readRequest(utf8("r1-3"), rows.requestValue(mixed)).inputs())
                .containsExactlyElementsOf(mixed.inputs());
        assertThatThrownBy(() -> rows.readRequest(utf8("r1-4"), utf8("{\"dense\":\""
                + Base64.getEncoder().encodeToString(new byte[52]) + "\",\"sparse\":null}")))
                .isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.MISSING_INPUT));
        assertThatThrownBy(() -> rows.readRequest(utf8("r1-4"), utf8("not json")))
                .isInstanceOf(ProtocolException.class)
                .satisfies(e -> assertThat(((ProtocolException) e).code()).isEqualTo(ErrorCode.MALFORMED_PAYLOAD));

        List<String> statements = SqlPredict.statements(kafka(twoInputs(repo)), "two");
        assertThat(statements.get(0)).startsWith("CREATE TEMPORARY TABLE requests (`id` STRING, `dense` BYTES, "
                + "`sparse` BYTES)").contains("'value.format' = 'json'", "'value.json.ignore-parse-errors' = 'true'",
                "'key.format' = 'raw'", "'key.fields' = 'id'", "'value.fields-include' = 'EXCEPT_KEY'");
        // one output: a raw answer
        assertThat(statements.get(1)).contains("`probability` BYTES, `headers` MAP<STRING, BYTES> METADATA",
                "'value.format' = 'raw'");
    }

    @Test
    void severalOutputsAreAJsonAnswerWithTheErrorColumnAsFlinksJsonFormatWritesIt(@TempDir Path repo)
            throws Exception {
        ModelRepoWriter.writeConfig(repo, "pair", 8, List.of(ModelRepoWriter.tensor("x", "FP32", 4)),
                List.of(ModelRepoWriter.tensor("a", "FP32", 2), ModelRepoWriter.tensor("b", "INT64", 1)), "test model");
        Files.write(repo.resolve("pair").resolve("1").resolve("model.onnx"), new byte[0]);
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repo.toString());
        SqlRowCodec rows = SqlPredict.codec(c, "pair");
        assertThat(rows.rawRequests()).isTrue();
        assertThat(rows.rawAnswers()).isFalse();
        Tensor a = Tensor.ofFloats("a", new long[] {1, 2}, 0.25f, -1f);
        Tensor b = Tensor.ofLongs("b", new long[] {1, 1}, 7L);

        // what the responses table's sink writes with Flink's json format
        RowType type = rowType(new String[] {"a", "b", "error"}, new VarBinaryType(VarBinaryType.MAX_LENGTH),
                new VarBinaryType(VarBinaryType.MAX_LENGTH), new VarCharType(VarCharType.MAX_LENGTH));
        JsonRowDataSerializationSchema flink = new JsonRowDataSerializationSchema(type, TimestampFormat.ISO_8601,
                JsonFormatOptions.MapNullKeyMode.FAIL, "null", false, false);
        flink.open(null);
        byte[] success = flink.serialize(GenericRowData.of(a.data(), b.data(), null));
        InferenceResponse ok = rows.readAnswer(utf8("r2-1"), success, null);
        assertThat(ok.isError()).isFalse();
        assertThat(ok.outputs()).containsExactly(a, b);
        byte[] failure = flink.serialize(GenericRowData.of(null, null,
                StringData.fromString("SHAPE_MISMATCH: column 'x' has 3 elements")));
        InferenceResponse bad = rows.readAnswer(utf8("r2-2"), failure, null);
        assertThat(bad.error()).isEqualTo(new InferenceError(ErrorCode.SHAPE_MISMATCH, "column 'x' has 3 elements"));
        // null outputs without an error are a failed answer
        assertThat(rows.readAnswer(utf8("r2-3"), flink.serialize(GenericRowData.of(null, null, null)), null)
                .error().code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
        // the codec's own writer agrees with Flink's
        InferenceResponse back = rows.readAnswer(utf8("r2-4"), rows.answerValue(ok), null);
        assertThat(back.outputs()).containsExactly(a, b);
        assertThat(rows.readAnswer(utf8("r2-5"), rows.answerValue(bad), null).error()).isEqualTo(bad.error());

        List<String> statements = SqlPredict.statements(kafka(c), "pair");
        assertThat(statements.get(1)).startsWith("CREATE TEMPORARY TABLE responses (`id` STRING, `a` BYTES, "
                + "`b` BYTES, `error` STRING)").contains("'value.format' = 'json'").doesNotContain("METADATA");
        assertThat(statements.get(3)).startsWith("INSERT INTO responses SELECT `id`, `a`, `b`, `error` FROM");
    }

    @Test
    void theStatementsCarryTheJobsOptionsToTheModelAndEnoughRowsInFlightToFillItsBatches(@TempDir Path repo)
            throws Exception {
        Configuration c = kafka(twoInputs(repo));
        c.set(GpuInferenceOptions.EXECUTION_THREADS, 2);
        c.setString("inference.device.intra-op-threads", "1");
        List<String> statements = SqlPredict.statements(c, "two");
        assertThat(statements).hasSize(4);
        assertThat(statements.get(0)).contains("'topic' = 'req'", "'scan.startup.mode' = 'earliest-offset'",
                "'properties.group.id' = 'g'");
        assertThat(statements.get(1)).contains("'topic' = 'resp'", "'sink.delivery-guarantee' = 'at-least-once'",
                "'properties.linger.ms' = '2'");
        String model = statements.get(2);
        // the library's defaults (max batch 128, delay 0), the job's device default and the options set
        assertThat(model).contains("'provider' = 'onnx'", "'model' = 'two'", "'max-batch-size' = '128'",
                "'max-queue-delay' = '0 ns'", "'device' = 'auto'", "'on-error' = 'ERROR_COLUMN'",
                "'inference.execution-threads' = '2'", "'inference.device.intra-op-threads' = '1'");
        // the job's Kafka options are not the model's
        assertThat(model).doesNotContain("inference.kafka", "inference.model-repository", "inference.batching");
        // 128 x (4 enqueued batches + 2 execution threads)
        assertThat(statements.get(3)).contains("ML_PREDICT(TABLE requests, MODEL bench_model, DESCRIPTOR(`dense`, "
                + "`sparse`)", "'max-concurrent-operations', '768'", "'output-mode', 'ALLOW_UNORDERED'");

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

    private static RowType rowType(String[] names, LogicalType... types) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            fields.add(new RowType.RowField(names[i], types[i]));
        }
        return new RowType(fields);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
