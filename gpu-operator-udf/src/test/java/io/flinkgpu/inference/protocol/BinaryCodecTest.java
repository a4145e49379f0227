package io.flinkgpu.inference.protocol;

import static io.flinkgpu.inference.protocol.ProtocolFixtures.requestWith;
import static io.flinkgpu.inference.protocol.ProtocolFixtures.tensorOf;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class BinaryCodecTest {
    private final BinaryCodec binary = new BinaryCodec();
    private final JsonCodec json = new JsonCodec();

    /** Builds a binary frame by hand: magic, header length, header, tensor bytes. */
    private static byte[] frame(byte[] magic, int declaredHeaderLength, String header, byte[] tail) {
        byte[] h = header.getBytes(UTF_8);
        ByteBuffer b = ByteBuffer.allocate(magic.length + 4 + h.length + tail.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put(magic).putInt(declaredHeaderLength).put(h).put(tail);
        return b.array();
    }

    private static final byte[] MAGIC = {'F', 'G', 'I', 1};
    private static final String HEADER_8_BYTES = "{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":[{\"name\":\"x\","
            + "\"datatype\":\"FP32\",\"shape\":[1,2],\"parameters\":{\"binary_data_size\":8}}]}";

    private ErrorCode requestError(byte[] payload) {
        ProtocolException e = catchThrowableOfType(ProtocolException.class, () -> binary.decodeRequest(payload));
        assertThat(e).as("decoding must fail").isNotNull();
        return e.code();
    }

    private static byte[] floats(float... values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putFloat(v);
        }
        return b.array();
    }

    // ---- round trips ------------------------------------------------------------------------

    @ParameterizedTest
    @EnumSource(DataType.class)
    void requestRoundTripsEveryDatatype(DataType type) throws Exception {
        InferenceRequest original = requestWith(tensorOf(type), Tensor.ofLongs("second", new long[] {2, 1}, 5, -6));

        byte[] encoded = binary.encodeRequest(original);
        InferenceRequest decoded = binary.decodeRequest(encoded);

        assertThat(BinaryCodec.hasMagic(encoded)).isTrue();
        assertThat(decoded).isEqualTo(original);
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void responseRoundTripsEveryDatatype(DataType type) throws Exception {
        InferenceResponse original = InferenceResponse.success("id-1", "model", "4", List.of(tensorOf(type)),
                new Timings(0.125, 9.75, 32));

        assertThat(binary.decodeResponse(binary.encodeResponse(original))).isEqualTo(original);
    }

    @Test
    void errorResponseRoundTrips() throws Exception {
        InferenceResponse original = InferenceResponse.failure("id-1", "model", null,
                new InferenceError(ErrorCode.BATCH_TOO_LARGE, "carries 99 samples"), new Timings(2, 0, 0));

        InferenceResponse decoded = binary.decodeResponse(binary.encodeResponse(original));

        assertThat(decoded).isEqualTo(original);
        assertThat(decoded.error()).isEqualTo(new InferenceError(ErrorCode.BATCH_TOO_LARGE, "carries 99 samples"));
    }

    @Test
    void nonUtf8BytesElementsSurviveTheBinaryFormat() throws Exception {
        Tensor raw = Tensor.ofByteElements("blob", new long[] {2},
                List.of(new byte[] {(byte) 0xff, 0, (byte) 0xc0}, new byte[0]));
        InferenceRequest original = requestWith(raw);

        InferenceRequest decoded = binary.decodeRequest(binary.encodeRequest(original));

        assertThat(decoded.input("blob").asByteElements()).containsExactly(new byte[] {(byte) 0xff, 0, (byte) 0xc0},
                new byte[0]);
    }

    @Test
    void nanAndInfinitySurviveBinaryRoundTrips() throws Exception {
        InferenceRequest original = requestWith(
                Tensor.ofFloats("x", new long[] {3}, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY));

        assertThat(binary.decodeRequest(binary.encodeRequest(original))).isEqualTo(original);
    }

    @ParameterizedTest
    @EnumSource(DataType.class)
    void jsonAndBinaryDecodeToEqualObjects(DataType type) throws Exception {
        InferenceRequest request = requestWith(tensorOf(type), Tensor.ofFloats("f", new long[] {2, 1}, 1.5f, -2f));
        InferenceResponse response = InferenceResponse.success("id", "m", "1", List.of(tensorOf(type)),
                new Timings(1, 2, 3));

        InferenceRequest fromJson = json.decodeRequest(json.encodeRequest(request));
        InferenceRequest fromBinary = binary.decodeRequest(binary.encodeRequest(request));

        assertThat(fromBinary).isEqualTo(fromJson);
        assertThat(fromBinary.hashCode()).isEqualTo(fromJson.hashCode());
        assertThat(binary.decodeResponse(binary.encodeResponse(response)))
                .isEqualTo(json.decodeResponse(json.encodeResponse(response)));
    }

    @Test
    void handWrittenJsonAndBinaryOfTheSameTensorAreEqual() throws Exception {
        InferenceRequest fromJson = json.decodeRequest(("{\"id\":\"r\",\"model_name\":\"m\",\"inputs\":[{\"name\":"
                + "\"x\",\"datatype\":\"FP32\",\"shape\":[1,2],\"data\":[[0.25,-8]]}]}").getBytes(UTF_8));
        InferenceRequest fromBinary = binary.decodeRequest(
                frame(MAGIC, HEADER_8_BYTES.length(), HEADER_8_BYTES, floats(0.25f, -8f)));

        assertThat(fromBinary).isEqualTo(fromJson);
    }

    @Test
    void binaryImageIsCompactAndJsonIsSeveralTimesLarger() {
        Random random = new Random(7);
        float[] pixels = new float[28 * 28];
        for (int i = 0; i < pixels.length; i++) {
            pixels[i] = (1 + random.nextInt(255)) / 255f; // typical normalised image: no short literals
        }
        InferenceRequest request = new InferenceRequest("image-0001", "fashion-mnist-cnn", null,
                List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, pixels)), null);

        int binarySize = binary.encodeRequest(request).length;
        int jsonSize = json.encodeRequest(request).length;

        assertThat(binarySize).isGreaterThanOrEqualTo(28 * 28 * 4).isLessThan(4096);
        // ~10 characters of shortest decimal text per float against 4 bytes
        assertThat(jsonSize).isGreaterThan(2 * binarySize);
    }

    // ---- malformed frames -------------------------------------------------------------------

    @Test
    void wellFormedHandBuiltFrameDecodes() throws Exception {
        InferenceRequest r = binary.decodeRequest(frame(MAGIC, HEADER_8_BYTES.length(), HEADER_8_BYTES,
                floats(1f, 2f)));

        assertThat(r.input("x").asFloats()).containsExactly(1f, 2f);
    }

    @Test
    void badMagicIsMalformed() {
        assertThat(requestError(frame(new byte[] {'F', 'G', 'X', 1}, HEADER_8_BYTES.length(), HEADER_8_BYTES,
                floats(1f, 2f)))).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError(frame(new byte[] {'F', 'G', 'I', 2}, HEADER_8_BYTES.length(), HEADER_8_BYTES,
                floats(1f, 2f)))).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError("{\"id\":\"r\"}".getBytes(UTF_8))).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError(new byte[0])).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void payloadShorterThanThePrefixIsMalformed() {
        assertThat(requestError(new byte[] {'F', 'G', 'I', 1, 5, 0})).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(requestError(MAGIC.clone())).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void headerLengthPastTheEndIsMalformed() {
        byte[] tail = floats(1f, 2f);
        int available = HEADER_8_BYTES.length() + tail.length;
        for (int declared : new int[] {available + 1, Integer.MAX_VALUE, -1, 0}) {
            assertThat(requestError(frame(MAGIC, declared, HEADER_8_BYTES, tail))).as("declared %d", declared)
                    .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        }
    }

    @Test
    void headerLengthCuttingTheJsonIsMalformed() {
        assertThat(requestError(frame(MAGIC, HEADER_8_BYTES.length() - 5, HEADER_8_BYTES, floats(1f, 2f))))
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void tensorSizePastTheEndIsMalformed() {
        assertThat(requestError(frame(MAGIC, HEADER_8_BYTES.length(), HEADER_8_BYTES, floats(1f))))
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        String huge = HEADER_8_BYTES.replace("\"binary_data_size\":8", "\"binary_data_size\":9223372036854775807");
        assertThat(requestError(frame(MAGIC, huge.length(), huge, floats(1f, 2f))))
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void trailingBytesAreMalformed() {
        byte[] valid = binary.encodeRequest(requestWith(tensorOf(DataType.INT32)));
        byte[] longer = Arrays.copyOf(valid, valid.length + 1);

        assertThat(requestError(longer)).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);

        byte[] response = binary.encodeResponse(
                InferenceResponse.success("i", "m", null, List.of(tensorOf(DataType.FP64)), null));
        byte[] responseWithTrailer = Arrays.copyOf(response, response.length + 3);
        ProtocolException e = catchThrowableOfType(ProtocolException.class,
                () -> binary.decodeResponse(responseWithTrailer));
        assertThat(e).isNotNull();
        assertThat(e.code()).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void truncatedTensorBytesAreMalformed() {
        byte[] valid = binary.encodeRequest(requestWith(tensorOf(DataType.INT64)));

        assertThat(requestError(Arrays.copyOf(valid, valid.length - 1))).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void tensorWithoutBinaryDataSizeIsMissingAField() {
        String header = HEADER_8_BYTES.replace(",\"parameters\":{\"binary_data_size\":8}", "");

        assertThat(requestError(frame(MAGIC, header.length(), header, new byte[0])))
                .isEqualTo(ErrorCode.MISSING_FIELD);
    }

    @Test
    void headerThatIsNotJsonIsMalformed() {
        String header = "not json at all";
        assertThat(requestError(frame(MAGIC, header.length(), header, new byte[0])))
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    // ---- format detection -----------------------------------------------------------------

    @Test
    void autoPicksTheCodecByMagicBytes() throws Exception {
        InferenceRequest request = requestWith(tensorOf(DataType.FP32), tensorOf(DataType.BYTES));
        byte[] asBinary = binary.encodeRequest(request);
        byte[] asJson = json.encodeRequest(request);

        assertThat(WireFormat.AUTO.codecFor(asBinary)).isInstanceOf(BinaryCodec.class);
        assertThat(WireFormat.AUTO.codecFor(asJson)).isInstanceOf(JsonCodec.class);
        assertThat(WireFormat.AUTO.decodeRequest(asBinary)).isEqualTo(request);
        assertThat(WireFormat.AUTO.decodeRequest(asJson)).isEqualTo(request);
    }

    @Test
    void autoDecodesResponsesOfBothFormats() throws Exception {
        InferenceResponse response = InferenceResponse.success("id", "m", "1", List.of(tensorOf(DataType.INT16)),
                new Timings(1, 1, 1));

        assertThat(WireFormat.AUTO.decodeResponse(binary.encodeResponse(response))).isEqualTo(response);
        assertThat(WireFormat.AUTO.decodeResponse(json.encodeResponse(response))).isEqualTo(response);
    }

    @Test
    void fixedFormatsUseTheirOwnCodecAndAutoWritesJson() {
        byte[] anything = binary.encodeRequest(requestWith(tensorOf(DataType.INT8)));

        assertThat(WireFormat.JSON.codecFor(anything)).isInstanceOf(JsonCodec.class);
        assertThat(WireFormat.BINARY.codecFor("{}".getBytes(UTF_8))).isInstanceOf(BinaryCodec.class);
        assertThat(WireFormat.AUTO.writer()).isInstanceOf(JsonCodec.class);
        assertThat(WireFormat.BINARY.writer()).isInstanceOf(BinaryCodec.class);
        assertThat(catchThrowableOfType(ProtocolException.class, () -> WireFormat.JSON.decodeRequest(anything)).code())
                .isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
    }

    @Test
    void autoRejectsGarbageAsMalformed() {
        for (byte[] garbage : List.of(new byte[0], new byte[] {'F', 'G'}, "hello".getBytes(UTF_8))) {
            ProtocolException e = catchThrowableOfType(ProtocolException.class,
                    () -> WireFormat.AUTO.decodeRequest(garbage));
            assertThat(e).isNotNull();
            assertThat(e.code()).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        }
    }
}
