package io.flinkgpu.inference.protocol;

import static io.flinkgpu.inference.protocol.ProtocolFixtures.requestWith;
import static io.flinkgpu.inference.protocol.ProtocolFixtures.tensorOf;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

class JsonCodecTest {
    private final JsonCodec codec = new JsonCodec();

    private static byte[] json(String s) {
        return s.getBytes(UTF_8);
    }

    private ErrorCode requestError(String payload) {
        return requestError(json(payload));
    }

    private ErrorCode requestError(byte[] payload) {
        ProtocolException e = catchThrowableOfType(ProtocolException.class, () -> codec.decodeRequest(payload));
        assertThat(e).as("decoding must fail: %s", new String(payload, UTF_8)).isNotNull();
        return e.code();
    }

    private static String request(String tensor) {
        return "{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":[" + tensor + "]}";
    }

    // ---- round trips ------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(DataType.class)
    void requestRoundTripsEveryDatatype(DataType type) throws Exception {
        InferenceRequest original = requestWith(tensorOf(type));

        InferenceRequest decoded = codec.decodeRequest(codec.encodeRequest(original));

        assertThat(decoded).isEqualTo(original);
        assertThat(decoded.inputs().get(0).data()).isEqualTo(original.inputs().get(0).data());
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void responseRoundTripsEveryDatatype(DataType type) throws Exception {
        InferenceResponse original = InferenceResponse.success("req-9", "model-a", "2",
                List.of(tensorOf(type), Tensor.ofFloats("second", new long[] {1, 1}, 7.5f)),
                new Timings(1.25, 3.5, 12));

        InferenceResponse decoded = codec.decodeResponse(codec.encodeResponse(original));

        assertThat(decoded).isEqualTo(original);
        assertThat(decoded.isError()).isFalse();
    }

    @Test
    void requestWithAllDatatypesAtOnceRoundTrips() throws Exception {
        Tensor[] all = new Tensor[DataType.values().length];
        for (int i = 0; i < all.length; i++) {
            all[i] = tensorOf(DataType.values()[i]);
        }
        InferenceRequest original = requestWith(all);

        assertThat(codec.decodeRequest(codec.encodeRequest(original))).isEqualTo(original);
    }

    @Test
    void errorResponseRoundTripsWithCodeMessageAndTimings() throws Exception {
        InferenceResponse original = InferenceResponse.failure("req-2", "model-b", "7",
                new InferenceError(ErrorCode.SHAPE_MISMATCH, "input 'x' has shape [2, 5]; expected [batch, 4]"),
                new Timings(0.5, 0, 0));

        InferenceResponse decoded = codec.decodeResponse(codec.encodeResponse(original));

        assertThat(decoded).isEqualTo(original);
        assertThat(decoded.isError()).isTrue();
        assertThat(decoded.error().code()).isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(decoded.outputs()).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(ErrorCode.class)
    void everyErrorCodeSurvivesAResponseRoundTrip(ErrorCode code) throws Exception {
        InferenceResponse original = InferenceResponse.failure("id", "m", null, new InferenceError(code, "why"),
                Timings.NONE);

        assertThat(codec.decodeResponse(codec.encodeResponse(original)).error().code()).isEqualTo(code);
    }

    @Test
    void requestParametersRoundTrip() throws Exception {
        Tensor x = Tensor.ofFloats("x", new long[] {1, 1}, 1f);
        for (RequestParameters p : List.of(new RequestParameters(1, 0, null), new RequestParameters(0, 30_000, null),
                new RequestParameters(0, 0, "tenant-b"), new RequestParameters(9, Long.MAX_VALUE, "t"),
                RequestParameters.DEFAULTS)) {
            InferenceRequest original = new InferenceRequest("id", "m", null, List.of(x), p);

            InferenceRequest decoded = codec.decodeRequest(codec.encodeRequest(original));

            assertThat(decoded.parameters()).isEqualTo(p);
            assertThat(decoded.modelVersion()).isNull();
        }
    }

    @Test
    void readsParametersAndTimingsFromHandWrittenJson() throws Exception {
        InferenceRequest r = codec.decodeRequest(json("{\"id\":\"r\",\"model_name\":\"m\",\"model_version\":2,"
                + "\"parameters\":{\"priority\":3,\"timeout_ms\":1500,\"tenant\":\"acme\"},"
                + "\"inputs\":[{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,2],\"data\":[1.0,2.5]}]}"));
        InferenceResponse resp = codec.decodeResponse(json("{\"id\":\"r\",\"model_name\":\"m\",\"outputs\":[],"
                + "\"timings\":{\"queue_ms\":1.5,\"inference_ms\":2.25,\"batch_size\":8}}"));

        assertThat(r.parameters()).isEqualTo(new RequestParameters(3, 1500, "acme"));
        assertThat(r.modelVersion()).isEqualTo("2");
        assertThat(r.input("x").asFloats()).containsExactly(1.0f, 2.5f);
        assertThat(resp.timings()).isEqualTo(new Timings(1.5, 2.25, 8));
    }

    @Test
    void missingParametersMeanDefaults() throws Exception {
        InferenceRequest r = codec.decodeRequest(json(request(
                "{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[1],\"data\":[4]}")));

        assertThat(r.parameters()).isEqualTo(RequestParameters.DEFAULTS);
        assertThat(r.modelVersion()).isNull();
    }

    @Test
    void nestedDataArraysFlattenRowMajor() throws Exception {
        InferenceRequest nested = codec.decodeRequest(json(request(
                "{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2,2,2],\"data\":[[[1,2],[3,4]],[[5,6],[7,8]]]}")));
        InferenceRequest flat = codec.decodeRequest(json(request(
                "{\"name\":\"x\",\"datatype\":\"INT32\",\"shape\":[2,2,2],\"data\":[1,2,3,4,5,6,7,8]}")));

        assertThat(nested.input("x").asLongs()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
        assertThat(nested).isEqualTo(flat);
    }

    @Test
    void nestedFloatDataFlattensRowMajor() throws Exception {
        InferenceRequest r = codec.decodeRequest(json(request(
                "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2,3],\"data\":[[0.5,1.5,2.5],[3.5,4.5,5.5]]}")));

        assertThat(r.input("x").asFloats()).containsExactly(0.5f, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f);
    }

    @Test
    void nanAndInfinitySurviveRoundTrips() throws Exception {
        InferenceRequest original = requestWith(
                Tensor.ofFloats("f32", new long[] {1, 3}, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY),
                Tensor.ofDoubles("f64", new long[] {1, 3}, Double.NaN, Double.POSITIVE_INFINITY,
                        Double.NEGATIVE_INFINITY),
                Tensor.ofFp16("f16", new long[] {1, 3}, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY));

        InferenceRequest decoded = codec.decodeRequest(codec.encodeRequest(original));

        assertThat(decoded.input("f32").asFloats())
                .containsExactly(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY);
        assertThat(decoded.input("f16").asFloats())
                .containsExactly(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY);
        assertThat(decoded.input("f64").asFloats())
                .containsExactly(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY);
        assertThat(decoded).isEqualTo(original);
    }

    @Test
    void readsBareNanAndInfinityTokens() throws Exception {
        InferenceRequest r = codec.decodeRequest(json(request(
                "{\"name\":\"x\",\"datatype\":\"FP64\",\"shape\":[3],\"data\":[NaN,Infinity,-Infinity]}")));

        assertThat(r.input("x").asFloats()).containsExactly(Float.NaN, Float.POSITIVE_INFINITY,
                Float.NEGATIVE_INFINITY);
    }

    // ---- malformed payloads ---------------------------------------------------------------

    @Test
    void emptyPayloadIsMalformed() {
        assertThat(requestError(new byte[0])).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError("   ")).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(catchThrowableOfType(ProtocolException.class, () -> codec.decodeRequest(null)).code())
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void truncatedJsonIsMalformed() {
        String full = request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1.0]}");
        for (int cut : new int[] {1, 10, full.length() / 2, full.length() - 1}) {
            assertThat(requestError(full.substring(0, cut))).as("cut at %d", cut)
                    .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"[1,2,3]", "\"a string\"", "42", "true", "null"})
    void nonObjectJsonIsMalformed(String payload) {
        assertThat(requestError(payload)).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void invalidUtf8IsMalformed() {
        byte[] valid = json(request("{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[\"AB\"]}"));
        int at = new String(valid, UTF_8).indexOf("AB");
        byte[][] broken = {
            {(byte) 0xff}, // never valid in UTF-8
            {(byte) 0xc0, (byte) 0xaf}, // overlong '/'
            {(byte) 0xed, (byte) 0xa0, (byte) 0x80}, // UTF-16 surrogate D800
            {(byte) 0xe2, (byte) 0x82}, // truncated sequence
        };
        for (byte[] bad : broken) {
            byte[] payload = new byte[valid.length - 2 + bad.length];
            System.arraycopy(valid, 0, payload, 0, at);
            System.arraycopy(bad, 0, payload, at, bad.length);
            System.arraycopy(valid, at + 2, payload, at + bad.length, valid.length - at - 2);

            assertThat(requestError(payload)).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        }
    }

    @Test
    void duplicateJsonKeysAreRejected() {
        assertThat(requestError("{\"id\":\"a\",\"id\":\"b\",\"model_name\":\"m\",\"inputs\":[{\"name\":\"x\","
                + "\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}]}")).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError(request(
                "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1],\"data\":[2]}")))
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    // ---- missing and invalid fields -------------------------------------------------------

    @Test
    void missingTopLevelFieldsAreReported() {
        String tensor = "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}";
        assertThat(requestError("{\"model_name\":\"m\",\"inputs\":[" + tensor + "]}")).isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"inputs\":[" + tensor + "]}")).isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"model_name\":\"m\"}")).isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError("{\"id\":null,\"model_name\":\"m\",\"inputs\":[" + tensor + "]}"))
                .isEqualTo(ErrorCode.MISSING_FIELD);
    }

    @Test
    void missingTensorFieldsAreReported() {
        assertThat(requestError(request("{\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}")))
                .isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError(request("{\"name\":\"x\",\"shape\":[1],\"data\":[1]}")))
                .isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"data\":[1]}")))
                .isEqualTo(ErrorCode.MISSING_FIELD);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1]}")))
                .isEqualTo(ErrorCode.MISSING_FIELD);
    }

    @Test
    void wronglyTypedTopLevelFieldsAreInvalid() {
        String tensor = "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}";
        assertThat(requestError("{\"id\":7,\"model_name\":\"m\",\"inputs\":[" + tensor + "]}"))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"\",\"model_name\":\"m\",\"inputs\":[" + tensor + "]}"))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"model_name\":[\"m\"],\"inputs\":[" + tensor + "]}"))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":" + tensor + "}"))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":[]}")).isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":[7]}")).isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError("{\"id\":\"" + "x".repeat(257) + "\",\"model_name\":\"m\",\"inputs\":[" + tensor + "]}"))
                .isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void invalidParametersAreRejected() {
        String tensor = "{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[1]}";
        for (String params : List.of("\"high\"", "{\"priority\":-1}", "{\"priority\":1.5}", "{\"priority\":\"1\"}",
                "{\"timeout_ms\":-5}", "{\"timeout_ms\":2.5}", "{\"tenant\":42}")) {
            assertThat(requestError("{\"id\":\"r\",\"model_name\":\"m\",\"parameters\":" + params + ",\"inputs\":["
                    + tensor + "]}")).as(params).isEqualTo(ErrorCode.INVALID_FIELD);
        }
    }

    @Test
    void unknownDatatypeIsInvalid() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP8\",\"shape\":[1],\"data\":[1]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void stringInFloatTensorIsDatatypeMismatch() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[2],\"data\":[1.0,\"2.0\"]}")))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
    }

    @Test
    void fractionalNumberInIntegerTensorIsDatatypeMismatch() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"INT64\",\"shape\":[2],\"data\":[1,2.5]}")))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
    }

    @Test
    void nonBooleanInBoolTensorAndNonStringInBytesTensorAreDatatypeMismatches() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"BOOL\",\"shape\":[1],\"data\":[1]}")))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"BYTES\",\"shape\":[1],\"data\":[1]}")))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":[true]}")))
                .isEqualTo(ErrorCode.DATATYPE_MISMATCH);
    }

    @Test
    void integerOutOfRangeForItsDatatypeIsInvalid() {
        for (String t : List.of("\"UINT8\",\"shape\":[1],\"data\":[300]", "\"UINT8\",\"shape\":[1],\"data\":[-1]",
                "\"INT8\",\"shape\":[1],\"data\":[128]", "\"INT16\",\"shape\":[1],\"data\":[40000]",
                "\"INT32\",\"shape\":[1],\"data\":[2147483648]",
                "\"INT64\",\"shape\":[1],\"data\":[9223372036854775808]")) {
            ErrorCode code = requestError(request("{\"name\":\"x\",\"datatype\":" + t + "}"));
            assertThat(code).as(t).isIn(ErrorCode.INVALID_FIELD, ErrorCode.DATATYPE_MISMATCH);
        }
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"UINT8\",\"shape\":[1],\"data\":[300]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void integerBoundariesOfEachDatatypeAreAccepted() throws Exception {
        InferenceRequest r = codec.decodeRequest(json("{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":["
                + "{\"name\":\"u8\",\"datatype\":\"UINT8\",\"shape\":[2],\"data\":[0,255]},"
                + "{\"name\":\"i8\",\"datatype\":\"INT8\",\"shape\":[2],\"data\":[-128,127]},"
                + "{\"name\":\"i16\",\"datatype\":\"INT16\",\"shape\":[2],\"data\":[-32768,32767]},"
                + "{\"name\":\"i32\",\"datatype\":\"INT32\",\"shape\":[2],\"data\":[-2147483648,2147483647]},"
                + "{\"name\":\"i64\",\"datatype\":\"INT64\",\"shape\":[2],"
                + "\"data\":[-9223372036854775808,9223372036854775807]}]}"));

        assertThat(r.input("u8").asLongs()).containsExactly(0, 255);
        assertThat(r.input("i8").asLongs()).containsExactly(-128, 127);
        assertThat(r.input("i16").asLongs()).containsExactly(Short.MIN_VALUE, Short.MAX_VALUE);
        assertThat(r.input("i32").asLongs()).containsExactly(Integer.MIN_VALUE, Integer.MAX_VALUE);
        assertThat(r.input("i64").asLongs()).containsExactly(Long.MIN_VALUE, Long.MAX_VALUE);
    }

    @Test
    void negativeDimensionIsInvalid() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1,-3],\"data\":[1]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void nonIntegerDimensionsAndNonArrayShapeAreInvalid() {
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1.5],\"data\":[1]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[\"1\"],\"data\":[1]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":1,\"data\":[1]}")))
                .isEqualTo(ErrorCode.INVALID_FIELD);
    }

    @Test
    void absurdlyDeepDataNestingIsRejected() {
        String data = "[".repeat(100) + "1" + "]".repeat(100);
        assertThat(requestError(request("{\"name\":\"x\",\"datatype\":\"FP32\",\"shape\":[1],\"data\":" + data + "}")))
                .isIn(ErrorCode.INVALID_FIELD, ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void responsesWithMissingIdAreRejected() {
        ProtocolException e = catchThrowableOfType(ProtocolException.class,
                () -> codec.decodeResponse(json("{\"model_name\":\"m\",\"outputs\":[]}")));

        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(ErrorCode.MISSING_FIELD);
    }
}
