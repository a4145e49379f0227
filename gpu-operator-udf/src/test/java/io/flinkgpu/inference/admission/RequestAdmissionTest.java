package io.flinkgpu.inference.admission;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.inference.qos.TenantGate;
import io.flinkgpu.inference.qos.TenantRegistry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RequestAdmissionTest {
    static final Path MODELS = Path.of("src/test/resources/models");

    private static ModelRepository repository;
    private static RequestAdmission validator;

    @BeforeAll
    static void openRepository() {
        repository = ModelRepository.open(MODELS);
        validator = new RequestAdmission(repository, ValidationLimits.DEFAULTS);
    }

    private static InferenceRequest request(String model, String version, Tensor... inputs) {
        return new InferenceRequest("req", model, version, List.of(inputs), RequestParameters.DEFAULTS);
    }

    private static Tensor floats(String name, long[] shape, int count) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = i * 0.5f;
        }
        return Tensor.ofFloats(name, shape, values);
    }

    private static ErrorCode rejection(RequestAdmission v, InferenceRequest request) {
        ProtocolException e = catchThrowableOfType(ProtocolException.class, () -> v.validate(request));
        assertThat(e).as("validation of %s must fail", request).isNotNull();
        assertThat(e.getMessage()).isNotBlank();
        return e.code();
    }

    private static ErrorCode rejection(InferenceRequest request) {
        return rejection(validator, request);
    }

    // ---- accepted -------------------------------------------------------------------------

    @Test
    void validRequestWithoutVersionIsPinnedToTheOnlyVersion() throws Exception {
        InferenceRequest r = request("echo-fp32", null, floats("x", new long[] {2, 3}, 6));

        RequestAdmission.Validated v = validator.check(r);

        assertThat(v.request().modelVersion()).isEqualTo("1");
        assertThat(v.request().inputs()).isEqualTo(r.inputs());
        assertThat(v.model().id()).isEqualTo(new ModelId("echo-fp32", "1"));
    }

    @Test
    void validRequestWithoutVersionIsPinnedToTheHighestVersion(@TempDir Path temp) throws Exception {
        Path model = temp.resolve("echo-fp32");
        Files.createDirectories(model);
        Files.copy(MODELS.resolve("echo-fp32/config.json"), model.resolve("config.json"));
        for (String version : List.of("1", "2", "10")) {
            Files.createDirectories(model.resolve(version));
            Files.copy(MODELS.resolve("echo-fp32/1/model.onnx"), model.resolve(version).resolve("model.onnx"));
        }
        RequestAdmission v = new RequestAdmission(ModelRepository.open(temp), ValidationLimits.DEFAULTS);

        InferenceRequest pinned = v.validate(request("echo-fp32", null, floats("x", new long[] {1, 3}, 3)));
        InferenceRequest explicit = v.validate(request("echo-fp32", "2", floats("x", new long[] {1, 3}, 3)));

        assertThat(pinned.modelVersion()).as("10 is numerically highest").isEqualTo("10");
        assertThat(explicit.modelVersion()).isEqualTo("2");
    }

    @Test
    void validRequestsOfEveryTestModelPass() throws Exception {
        List<InferenceRequest> valid = List.of(
                request("echo-fp16", "1", Tensor.ofFp16("x", new long[] {1, 3}, 1f, 2f, 3f)),
                request("echo-int64", null, Tensor.ofLongs("x", new long[] {2, 3}, 1, 2, 3, 4, 5, 6)),
                request("echo-int32", null, Tensor.ofInts("x", new long[] {1, 3}, 1, 2, 3)),
                request("echo-bool", null, Tensor.ofBooleans("x", new long[] {1, 3}, true, false, true)),
                request("echo-bytes", null, Tensor.ofStrings("x", new long[] {1, 3}, "a", "", "\u00e9")),
                request("affine-fp32", null, floats("x", new long[] {16, 4}, 64)),
                request("seq-sum", null, Tensor.ofLongs("tokens", new long[] {2, 5}, new long[10])),
                request("seq-sum", null, Tensor.ofLongs("tokens", new long[] {1, 1}, 7)),
                request("two-inputs", null, Tensor.ofLongs("b", new long[] {1, 2}, 1, 2),
                        floats("a", new long[] {1, 2}, 2)));
        for (InferenceRequest r : valid) {
            assertThat(validator.validate(r).modelVersion()).as(r.toString()).isEqualTo("1");
        }
    }

    // ---- one test per error code ----------------------------------------------------------

    @Test
    void unknownModelIsRejected() {
        assertThat(rejection(request("no-such-model", null, floats("x", new long[] {1, 3}, 3))))
                .isEqualTo(ErrorCode.UNKNOWN_MODEL);
        assertThat(rejection(request("../models", null, floats("x", new long[] {1, 3}, 3))))
                .isEqualTo(ErrorCode.UNKNOWN_MODEL);
    }

    @Test
    void unknownVersionIsRejected() {
        assertThat(rejection(request("echo-fp32", "2", floats("x", new long[] {1, 3}, 3))))
                .isEqualTo(ErrorCode.UNKNOWN_VERSION);
        assertThat(rejection(request("echo-fp32", "../1", floats("x", new long[] {1, 3}, 3))))
                .isEqualTo(ErrorCode.UNKNOWN_VERSION);
    }

    @Test
    void inputTheModelDoesNotDeclareIsRejected() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {1, 3}, 3),
                floats("z", new long[] {1, 3}, 3)))).isEqualTo(ErrorCode.UNKNOWN_INPUT);
        assertThat(rejection(request("echo-fp32", null, floats("X", new long[] {1, 3}, 3))))
                .isEqualTo(ErrorCode.UNKNOWN_INPUT);
    }

    @Test
    void missingDeclaredInputIsRejected() {
        assertThat(rejection(request("two-inputs", null, floats("a", new long[] {1, 2}, 2))))
                .isEqualTo(ErrorCode.MISSING_INPUT);
    }

    @Test
    void wrongDatatypeIsRejected() {
        assertThat(rejection(request("echo-fp32", null, Tensor.ofInts("x", new long[] {1, 3}, 1, 2, 3))))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
        assertThat(rejection(request("echo-fp32", null, Tensor.ofDoubles("x", new long[] {1, 3}, 1, 2, 3))))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
        assertThat(rejection(request("two-inputs", null, floats("a", new long[] {1, 2}, 2),
                floats("b", new long[] {1, 2}, 2)))).isEqualTo(ErrorCode.DATATYPE_MISMATCH);
    }

    @Test
    void wrongRankIsAShapeMismatch() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {3}, 3))))
                .as("missing batch dimension").isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {1, 1, 3}, 3))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[0], 1))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
    }

    @Test
    void fixedDimensionThatDiffersIsAShapeMismatch() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {1, 4}, 4))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(rejection(request("affine-fp32", null, floats("x", new long[] {2, 3}, 6))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
    }

    @Test
    void emptyVariableDimensionIsAShapeMismatch() {
        assertThat(rejection(request("seq-sum", null, Tensor.ofLongs("tokens", new long[] {1, 0}))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
    }

    @Test
    void inputsDisagreeingOnTheBatchDimensionAreAShapeMismatch() {
        assertThat(rejection(request("two-inputs", null, floats("a", new long[] {1, 2}, 2),
                Tensor.ofLongs("b", new long[] {2, 2}, 1, 2, 3, 4)))).isEqualTo(ErrorCode.SHAPE_MISMATCH);
    }

    @Test
    void zeroBatchIsAShapeMismatch() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {0, 3}, 0))))
                .isEqualTo(ErrorCode.SHAPE_MISMATCH);
    }

    @Test
    void batchOverMaxBatchSizeIsRejected() {
        // max_batch_size is 16 in every test model's config
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {17, 3}, 51))))
                .isEqualTo(ErrorCode.BATCH_TOO_LARGE);
    }

    @Test
    void tensorOverTheElementLimitIsRejected() throws Exception {
        RequestAdmission small = new RequestAdmission(repository, new ValidationLimits(6, 1024));

        assertThat(small.validate(request("echo-fp32", null, floats("x", new long[] {2, 3}, 6))))
                .as("exactly at the limit").isNotNull();
        assertThat(rejection(small, request("echo-fp32", null, floats("x", new long[] {3, 3}, 9))))
                .isEqualTo(ErrorCode.TENSOR_TOO_LARGE);
    }

    @Test
    void payloadOverTheByteLimitIsRejectedBeforeDecodingAndNamesTheOption() {
        ValidationLimits limits = new ValidationLimits(100, 1024);
        byte[] key = "k-1".getBytes(java.nio.charset.StandardCharsets.UTF_8);

        RequestAdmission.Decoded fits = RequestAdmission.decode(new byte[1024], key, WireFormat.JSON, limits);
        assertThat(fits.error().code()).as("1024 bytes are decoded (and fail as JSON)")
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        RequestAdmission.Decoded over = RequestAdmission.decode(new byte[1025], key, WireFormat.JSON, limits);
        assertThat(over.error().code()).isEqualTo(ErrorCode.TENSOR_TOO_LARGE);
        assertThat(over.error().getMessage()).contains("inference.validation.max-request-size");
        assertThat(over.requestId()).as("the Kafka key names the request").isEqualTo("k-1");
    }

    @Test
    void aRequestWithAnInvalidParameterKeepsItsIdSoThatItsCallerIsAnswered() {
        byte[] json = ("{\"id\":\"neg-timeout\",\"model_name\":\"echo-fp32\",\"parameters\":{\"timeout_ms\":-5},"
                + "\"inputs\":[{\"name\":\"x\",\"shape\":[1,3],\"datatype\":\"FP32\",\"data\":[1,2,3]}]}")
                .getBytes(java.nio.charset.StandardCharsets.UTF_8);
        RequestAdmission.Decoded d = RequestAdmission.decode(json, null, WireFormat.JSON, ValidationLimits.DEFAULTS);
        assertThat(d.ok()).isFalse();
        assertThat(d.error().code()).isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(d.requestId()).isEqualTo("neg-timeout");
        assertThat(d.modelName()).isEqualTo("echo-fp32");
    }

    @Test
    void theEffectiveBatchLimitIsTheSmallerOfTheModelsAndTheOperatorsAndTheRefusalSaysWhich() {
        // echo-fp32 allows more samples than this operator batches
        int modelMax = repository.model("echo-fp32").orElseThrow().config().maxBatchSize();
        int operatorMax = modelMax / 2;
        RequestAdmission admission = new RequestAdmission(repository, ValidationLimits.DEFAULTS, c -> operatorMax,
                "inference.batching.max-batch-size", new TenantGate(TenantRegistry.unlimited()), System::nanoTime);

        RequestAdmission.Decision fits = admission.admit(
                request("echo-fp32", null, floats("x", new long[] {operatorMax, 3}, operatorMax * 3)));
        assertThat(fits).isInstanceOf(RequestAdmission.Admitted.class);
        assertThat(((RequestAdmission.Admitted) fits).samples()).isEqualTo(operatorMax);

        RequestAdmission.Decision over = admission.admit(
                request("echo-fp32", null, floats("x", new long[] {operatorMax + 1, 3}, (operatorMax + 1) * 3)));
        assertThat(over).isInstanceOfSatisfying(RequestAdmission.Refused.class, r -> {
            assertThat(r.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
            assertThat(r.badInput()).isTrue();
            assertThat(r.error().message()).contains("inference.batching.max-batch-size").contains("max_batch_size");
        });

        RequestAdmission.Decision overModel = admission.admit(
                request("echo-fp32", null, floats("x", new long[] {modelMax + 1, 3}, (modelMax + 1) * 3)));
        assertThat(((RequestAdmission.Refused) overModel).error().message()).contains("the model's max_batch_size");
    }

    @Test
    void anAdmittedRequestCarriesItsLevelQueueAndDeadline() {
        RequestAdmission admission = new RequestAdmission(repository, ValidationLimits.DEFAULTS);
        InferenceRequest r = new InferenceRequest("q", "echo-fp32", null, List.of(floats("x", new long[] {2, 3}, 6)),
                new RequestParameters(0, 250, "team-a"));
        RequestAdmission.Admitted a = (RequestAdmission.Admitted) admission.admit(r);
        var scheduling = repository.model("echo-fp32").orElseThrow().config().scheduling();
        assertThat(a.level()).isEqualTo(scheduling.defaultPriority());
        assertThat(a.tenant()).isEqualTo("team-a");
        assertThat(a.key().model()).isEqualTo(new ModelId("echo-fp32", "1"));
        assertThat(a.request().modelVersion()).isEqualTo("1");
        assertThat(a.deadlineNanos()).isNotEqualTo(Long.MAX_VALUE);
        assertThat(a.scheduling().level()).isEqualTo(a.level());
    }

    @Test
    void aTenantOverItsQuotaIsRefusedButNotAsBadInput() throws Exception {
        Path tenants = Files.createTempFile("tenants", ".json");
        Files.writeString(tenants, "{\"tenants\": [{\"name\": \"small\", \"max_in_flight\": 1}]}");
        RequestAdmission admission = new RequestAdmission(repository, ValidationLimits.DEFAULTS, c -> 64, "",
                new TenantGate(TenantRegistry.load(tenants)), System::nanoTime);
        InferenceRequest r = new InferenceRequest("t", "echo-fp32", null, List.of(floats("x", new long[] {1, 3}, 3)),
                new RequestParameters(0, 0, "small"));
        RequestAdmission.Admitted first = (RequestAdmission.Admitted) admission.admit(r);
        RequestAdmission.Refused second = (RequestAdmission.Refused) admission.admit(r);
        assertThat(second.code()).isEqualTo(ErrorCode.QUOTA_EXCEEDED);
        assertThat(second.badInput()).isFalse();
        admission.release(first);
        assertThat(admission.admit(r)).isInstanceOf(RequestAdmission.Admitted.class);
    }

    @Test
    void dataThatDoesNotMatchTheShapeIsAnElementCountMismatch() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {2, 3}, 5))))
                .isEqualTo(ErrorCode.ELEMENT_COUNT_MISMATCH);
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {1, 3}, 4))))
                .isEqualTo(ErrorCode.ELEMENT_COUNT_MISMATCH);
        assertThat(rejection(request("echo-fp32", null, new Tensor("x", DataType.FP32, new long[] {1, 3},
                new byte[11])))).as("partial element").isEqualTo(ErrorCode.ELEMENT_COUNT_MISMATCH);
        assertThat(rejection(request("echo-bytes", null, Tensor.ofStrings("x", new long[] {1, 3}, "a", "b"))))
                .isEqualTo(ErrorCode.ELEMENT_COUNT_MISMATCH);
        assertThat(rejection(request("echo-bytes", null, new Tensor("x", DataType.BYTES, new long[] {1, 3},
                new byte[] {100, 0, 0, 0, 1})))).as("broken length prefix").isEqualTo(ErrorCode.ELEMENT_COUNT_MISMATCH);
    }

    @Test
    void nanOrInfinityIsRejectedWhenTheConfigForbidsIt() {
        // every test model's config says "allow_nan": false
        for (float bad : new float[] {Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
            assertThat(rejection(request("echo-fp32", null, Tensor.ofFloats("x", new long[] {1, 3}, 1f, bad, 3f))))
                    .isEqualTo(ErrorCode.NAN_NOT_ALLOWED);
            assertThat(rejection(request("echo-fp16", null, Tensor.ofFp16("x", new long[] {1, 3}, 1f, 2f, bad))))
                    .isEqualTo(ErrorCode.NAN_NOT_ALLOWED);
        }
        assertThat(rejection(request("two-inputs", null, Tensor.ofFloats("a", new long[] {1, 2}, Float.NaN, 0f),
                Tensor.ofLongs("b", new long[] {1, 2}, 1, 2)))).isEqualTo(ErrorCode.NAN_NOT_ALLOWED);
    }

    @Test
    void nanIsAcceptedWhenTheConfigAllowsIt(@TempDir Path temp) throws Exception {
        Path model = temp.resolve("echo-fp32");
        Files.createDirectories(model.resolve("1"));
        Files.copy(MODELS.resolve("echo-fp32/1/model.onnx"), model.resolve("1/model.onnx"));
        String config = Files.readString(MODELS.resolve("echo-fp32/config.json"));
        assertThat(config).contains("\"allow_nan\": false");
        Files.writeString(model.resolve("config.json"), config.replace("\"allow_nan\": false", "\"allow_nan\": true"));
        RequestAdmission lenient = new RequestAdmission(ModelRepository.open(temp), ValidationLimits.DEFAULTS);

        InferenceRequest r = request("echo-fp32", null, Tensor.ofFloats("x", new long[] {1, 3}, Float.NaN,
                Float.POSITIVE_INFINITY, 0f));

        assertThat(lenient.validate(r).modelVersion()).isEqualTo("1");
    }

    @Test
    void largeFiniteFloatsAreNotMistakenForInfinity() throws Exception {
        assertThat(validator.validate(request("echo-fp32", null,
                Tensor.ofFloats("x", new long[] {1, 3}, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE))))
                .isNotNull();
        assertThat(validator.validate(request("echo-fp16", null,
                Tensor.ofFp16("x", new long[] {1, 3}, 65504f, -65504f, 0x1p-24f)))).isNotNull();
    }

    @Test
    void duplicateInputIsAnInvalidField() {
        assertThat(rejection(request("echo-fp32", null, floats("x", new long[] {1, 3}, 3),
                floats("x", new long[] {1, 3}, 3)))).isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void bytesElementThatIsNotUtf8IsAnInvalidField() {
        Tensor bad = Tensor.ofByteElements("x", new long[] {1, 3},
                List.of(new byte[] {'a'}, new byte[] {(byte) 0xff, (byte) 0xfe}, new byte[0]));

        assertThat(rejection(request("echo-bytes", null, bad))).isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void validationDoesNotChangeAnAlreadyPinnedRequest() throws Exception {
        InferenceRequest r = request("echo-int32", "1", Tensor.ofInts("x", new long[] {1, 3}, 7, 8, 9));

        assertThat(validator.validate(r)).isEqualTo(r);
    }
}
