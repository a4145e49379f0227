package io.flinkgpu.inference.protocol;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The Open Inference Protocol's JSON encoding: tensors as {@code {name, datatype, shape, data}}
 * with {@code data} a flat (or nested, row-major) array. Non-finite floats travel as the bare
 * tokens {@code NaN}, {@code Infinity} and {@code -Infinity}.
 */
public class JsonCodec implements WireCodec {
    static final int MAX_ID_LENGTH = 256;
    static final int MAX_NAME_LENGTH = 256;

    // NaN is written as a bare token (not "NaN") so that it reads back as a number.
    static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
                    .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
                    .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
                    .build())
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .build();

    @Override
    public InferenceRequest decodeRequest(byte[] payload) throws ProtocolException {
        return parseRequest(readTree(payload), null);
    }

    @Override
    public InferenceResponse decodeResponse(byte[] payload) throws ProtocolException {
        return parseResponse(readTree(payload), null);
    }

    @Override
    public byte[] encodeRequest(InferenceRequest request) {
        return write(g -> writeRequest(g, request, false));
    }

    @Override
    public byte[] encodeResponse(InferenceResponse response) {
        return write(g -> writeResponse(g, response, false));
    }

    // ---- reading ------------------------------------------------------------------------

    static JsonNode readTree(byte[] payload) throws ProtocolException {
        return readTree(payload, 0, payload == null ? 0 : payload.length);
    }

    /** The JSON object in {@code length} bytes of {@code payload} from {@code offset} (read in place, not copied). */
    static JsonNode readTree(byte[] payload, int offset, int length) throws ProtocolException {
        if (payload == null || length == 0) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "empty payload");
        }
        try {
            // Strict UTF-8 first: Jackson lets some malformed sequences (overlong forms,
            // surrogates) through into strings.
            StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(payload, offset, length));
        } catch (CharacterCodingException e) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "payload is not valid UTF-8");
        }
        try {
            JsonNode root = MAPPER.readTree(payload, offset, length);
            if (root == null || root.isMissingNode()) {
                throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "empty payload");
            }
            if (!root.isObject()) {
                throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "payload is not a JSON object");
            }
            return root;
        } catch (JsonProcessingException e) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "malformed JSON: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "unreadable payload: " + e.getMessage());
        }
    }

    /** Source of raw tensor bytes following a binary header; null for plain JSON. */
    interface BinaryTail {
        byte[] take(String tensorName, long size) throws ProtocolException;
    }

    static InferenceRequest parseRequest(JsonNode root, BinaryTail tail) throws ProtocolException {
        String id = requiredText(root, "id", MAX_ID_LENGTH);
        String model = null;
        try {
            // From here on a failure names the request, so that its caller can be answered.
            model = requiredText(root, "model_name", MAX_NAME_LENGTH);
            String version = optionalText(root, "model_version", MAX_NAME_LENGTH);
            RequestParameters parameters = parseParameters(root.get("parameters"));
            JsonNode inputsNode = root.get("inputs");
            if (inputsNode == null || inputsNode.isNull()) {
                throw new ProtocolException(ErrorCode.MISSING_FIELD, "missing field 'inputs'");
            }
            if (!inputsNode.isArray() || inputsNode.isEmpty()) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "'inputs' must be a non-empty array");
            }
            List<Tensor> inputs = parseTensors(inputsNode, "inputs", tail);
            return new InferenceRequest(id, model, version, inputs, parameters);
        } catch (ProtocolException e) {
            throw e.forRequest(id, model);
        }
    }

    static InferenceResponse parseResponse(JsonNode root, BinaryTail tail) throws ProtocolException {
        String id = requiredText(root, "id", MAX_ID_LENGTH);
        String model = optionalText(root, "model_name", MAX_NAME_LENGTH);
        String version = optionalText(root, "model_version", MAX_NAME_LENGTH);
        JsonNode t = root.path("timings");
        Timings timings = new Timings(t.path("queue_ms").asDouble(), t.path("inference_ms").asDouble(),
                t.path("batch_size").asInt());
        JsonNode err = root.get("error");
        if (err != null && !err.isNull()) {
            ErrorCode code;
            try {
                code = ErrorCode.valueOf(err.path("code").asText());
            } catch (IllegalArgumentException e) {
                code = ErrorCode.INTERNAL;
            }
            return InferenceResponse.failure(id, model, version,
                    new InferenceError(code, err.path("message").asText()), timings);
        }
        JsonNode outputs = root.get("outputs");
        List<Tensor> tensors = outputs == null || !outputs.isArray() ? List.of() : parseTensors(outputs, "outputs", tail);
        return InferenceResponse.success(id, model, version, tensors, timings);
    }

    private static RequestParameters parseParameters(JsonNode node) throws ProtocolException {
        if (node == null || node.isNull()) {
            return RequestParameters.DEFAULTS;
        }
        if (!node.isObject()) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "'parameters' must be an object");
        }
        int priority = 0;
        JsonNode p = node.get("priority");
        if (p != null && !p.isNull()) {
            if (!p.canConvertToInt() || !p.isIntegralNumber() || p.intValue() < 0) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "'priority' must be a non-negative integer");
            }
            priority = p.intValue();
        }
        long timeout = 0;
        JsonNode t = node.get("timeout_ms");
        if (t != null && !t.isNull()) {
            if (!t.isIntegralNumber() || !t.canConvertToLong() || t.longValue() < 0) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "'timeout_ms' must be a non-negative integer");
            }
            timeout = t.longValue();
        }
        long deadline = 0;
        JsonNode d = node.get("deadline_unix_ms");
        if (d != null && !d.isNull()) {
            if (!d.isIntegralNumber() || !d.canConvertToLong() || d.longValue() < 0) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD,
                        "'deadline_unix_ms' must be a non-negative integer (milliseconds since the epoch)");
            }
            deadline = d.longValue();
        }
        String tenant = null;
        JsonNode tn = node.get("tenant");
        if (tn != null && !tn.isNull()) {
            if (!tn.isTextual() || tn.textValue().length() > MAX_NAME_LENGTH) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "'tenant' must be a string of at most "
                        + MAX_NAME_LENGTH + " characters");
            }
            tenant = tn.textValue();
        }
        String origin = optionalText(node, "origin", MAX_NAME_LENGTH);
        return new RequestParameters(priority, timeout, tenant, deadline, origin);
    }

    private static List<Tensor> parseTensors(JsonNode array, String field, BinaryTail tail) throws ProtocolException {
        List<Tensor> tensors = new ArrayList<>(array.size());
        for (JsonNode node : array) {
            if (!node.isObject()) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "each of '" + field + "' must be an object");
            }
            tensors.add(parseTensor(node, tail));
        }
        return tensors;
    }

    private static Tensor parseTensor(JsonNode node, BinaryTail tail) throws ProtocolException {
        String name = requiredText(node, "name", MAX_NAME_LENGTH);
        String typeName = requiredText(node, "datatype", 16);
        DataType type = DataType.parse(typeName).orElseThrow(() -> new ProtocolException(
                ErrorCode.INVALID_FIELD, "tensor '" + name + "': unknown datatype '" + typeName + "'"));
        JsonNode shapeNode = node.get("shape");
        if (shapeNode == null || shapeNode.isNull()) {
            throw new ProtocolException(ErrorCode.MISSING_FIELD, "tensor '" + name + "': missing field 'shape'");
        }
        if (!shapeNode.isArray()) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "tensor '" + name + "': 'shape' must be an array");
        }
        long[] shape = new long[shapeNode.size()];
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = shapeNode.get(i);
            if (!d.isIntegralNumber() || !d.canConvertToLong()) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD,
                        "tensor '" + name + "': shape dimensions must be integers");
            }
            shape[i] = d.longValue();
            if (shape[i] < 0) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD,
                        "tensor '" + name + "': negative dimension " + shape[i]);
            }
        }
        if (tail != null) {
            JsonNode size = node.path("parameters").get("binary_data_size");
            if (size == null || !size.isIntegralNumber() || size.longValue() < 0) {
                throw new ProtocolException(ErrorCode.MISSING_FIELD,
                        "tensor '" + name + "': missing 'parameters.binary_data_size'");
            }
            return new Tensor(name, type, shape, tail.take(name, size.longValue()));
        }
        JsonNode data = node.get("data");
        if (data == null || data.isNull()) {
            throw new ProtocolException(ErrorCode.MISSING_FIELD, "tensor '" + name + "': missing field 'data'");
        }
        return new Tensor(name, type, shape, encodeData(name, type, data));
    }

    private static byte[] encodeData(String name, DataType type, JsonNode data) throws ProtocolException {
        List<JsonNode> flat = new ArrayList<>();
        flatten(data, flat, 0);
        if (type == DataType.BYTES) {
            List<byte[]> elements = new ArrayList<>(flat.size());
            for (JsonNode v : flat) {
                if (!v.isTextual()) {
                    throw typeError(name, type, v);
                }
                elements.add(v.textValue().getBytes(StandardCharsets.UTF_8));
            }
            return Tensor.ofByteElements(name, new long[0], elements).data();
        }
        ByteBuffer b = ByteBuffer.allocate(flat.size() * type.elementSize()).order(ByteOrder.LITTLE_ENDIAN);
        for (JsonNode v : flat) {
            switch (type) {
                case BOOL:
                    if (!v.isBoolean()) {
                        throw typeError(name, type, v);
                    }
                    b.put((byte) (v.booleanValue() ? 1 : 0));
                    break;
                case FP16:
                    requireNumber(name, type, v);
                    b.putShort(Fp16.fromFloat(v.floatValue()));
                    break;
                case FP32:
                    requireNumber(name, type, v);
                    b.putFloat(v.floatValue());
                    break;
                case FP64:
                    requireNumber(name, type, v);
                    b.putDouble(v.doubleValue());
                    break;
                default:
                    long x = integral(name, type, v);
                    switch (type) {
                        case UINT8:
                        case INT8:
                            b.put((byte) x);
                            break;
                        case INT16:
                            b.putShort((short) x);
                            break;
                        case INT32:
                            b.putInt((int) x);
                            break;
                        default:
                            b.putLong(x);
                    }
            }
        }
        return b.array();
    }

    private static final int MAX_NESTING = 32;

    private static void flatten(JsonNode node, List<JsonNode> out, int depth) throws ProtocolException {
        if (depth > MAX_NESTING) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "'data' is nested too deeply");
        }
        if (node.isArray()) {
            for (JsonNode child : node) {
                flatten(child, out, depth + 1);
            }
        } else {
            out.add(node);
        }
    }

    private static void requireNumber(String name, DataType type, JsonNode v) throws ProtocolException {
        if (!v.isNumber()) {
            throw typeError(name, type, v);
        }
    }

    private static long integral(String name, DataType type, JsonNode v) throws ProtocolException {
        if (!v.isIntegralNumber() || !v.canConvertToLong()) {
            throw typeError(name, type, v);
        }
        long x = v.longValue();
        long min;
        long max;
        switch (type) {
            case UINT8:
                min = 0;
                max = 255;
                break;
            case INT8:
                min = Byte.MIN_VALUE;
                max = Byte.MAX_VALUE;
                break;
            case INT16:
                min = Short.MIN_VALUE;
                max = Short.MAX_VALUE;
                break;
            case INT32:
                min = Integer.MIN_VALUE;
                max = Integer.MAX_VALUE;
                break;
            default:
                return x;
        }
        if (x < min || x > max) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD,
                    "tensor '" + name + "': value " + x + " out of range for " + type);
        }
        return x;
    }

    private static ProtocolException typeError(String name, DataType type, JsonNode v) {
        return new ProtocolException(ErrorCode.DATATYPE_MISMATCH,
                "tensor '" + name + "': element " + abbreviate(v.toString()) + " is not a valid " + type + " value");
    }

    private static String abbreviate(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }

    static String requiredText(JsonNode node, String field, int maxLength) throws ProtocolException {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            throw new ProtocolException(ErrorCode.MISSING_FIELD, "missing field '" + field + "'");
        }
        if (!v.isTextual() || v.textValue().isEmpty() || v.textValue().length() > maxLength) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD,
                    "'" + field + "' must be a non-empty string of at most " + maxLength + " characters");
        }
        return v.textValue();
    }

    static String optionalText(JsonNode node, String field, int maxLength) throws ProtocolException {
        JsonNode v = node.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (v.isIntegralNumber()) { // "model_version": 2 is common; treat it as "2"
            return v.asText();
        }
        if (!v.isTextual() || v.textValue().length() > maxLength) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD,
                    "'" + field + "' must be a string of at most " + maxLength + " characters");
        }
        return v.textValue().isEmpty() ? null : v.textValue();
    }

    // ---- writing ------------------------------------------------------------------------

    interface GeneratorBody {
        void write(JsonGenerator g) throws IOException;
    }

    static byte[] write(GeneratorBody body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = MAPPER.getFactory().createGenerator(out)) {
            body.write(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    static void writeRequest(JsonGenerator g, InferenceRequest r, boolean binary) throws IOException {
        g.writeStartObject();
        g.writeStringField("id", r.id());
        g.writeStringField("model_name", r.modelName());
        if (r.modelVersion() != null) {
            g.writeStringField("model_version", r.modelVersion());
        }
        RequestParameters p = r.parameters();
        if (!p.equals(RequestParameters.DEFAULTS)) {
            g.writeObjectFieldStart("parameters");
            if (p.priority() != 0) {
                g.writeNumberField("priority", p.priority());
            }
            if (p.timeoutMs() != 0) {
                g.writeNumberField("timeout_ms", p.timeoutMs());
            }
            if (p.deadlineEpochMs() != 0) {
                g.writeNumberField("deadline_unix_ms", p.deadlineEpochMs());
            }
            g.writeStringField("tenant", p.tenant());
            if (p.origin() != null) {
                g.writeStringField("origin", p.origin());
            }
            g.writeEndObject();
        }
        g.writeArrayFieldStart("inputs");
        for (Tensor t : r.inputs()) {
            writeTensor(g, t, binary);
        }
        g.writeEndArray();
        g.writeEndObject();
    }

    static void writeResponse(JsonGenerator g, InferenceResponse r, boolean binary) throws IOException {
        g.writeStartObject();
        g.writeStringField("id", r.id());
        g.writeStringField("model_name", r.modelName());
        if (r.modelVersion() != null) {
            g.writeStringField("model_version", r.modelVersion());
        }
        if (r.isError()) {
            g.writeObjectFieldStart("error");
            g.writeStringField("code", r.error().code().name());
            g.writeStringField("message", r.error().message());
            g.writeEndObject();
        } else {
            g.writeArrayFieldStart("outputs");
            for (Tensor t : r.outputs()) {
                writeTensor(g, t, binary);
            }
            g.writeEndArray();
        }
        g.writeObjectFieldStart("timings");
        g.writeNumberField("queue_ms", r.timings().queueMs());
        g.writeNumberField("inference_ms", r.timings().inferenceMs());
        g.writeNumberField("batch_size", r.timings().batchSize());
        g.writeEndObject();
        g.writeEndObject();
    }

    private static void writeTensor(JsonGenerator g, Tensor t, boolean binary) throws IOException {
        g.writeStartObject();
        g.writeStringField("name", t.name());
        g.writeStringField("datatype", t.datatype().name());
        g.writeArrayFieldStart("shape");
        for (long d : t.shape()) {
            g.writeNumber(d);
        }
        g.writeEndArray();
        if (binary) {
            g.writeObjectFieldStart("parameters");
            g.writeNumberField("binary_data_size", t.data().length);
            g.writeEndObject();
        } else {
            g.writeArrayFieldStart("data");
            writeData(g, t);
            g.writeEndArray();
        }
        g.writeEndObject();
    }

    private static void writeData(JsonGenerator g, Tensor t) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
        switch (t.datatype()) {
            case BOOL:
                while (b.hasRemaining()) {
                    g.writeBoolean(b.get() != 0);
                }
                break;
            case UINT8:
                while (b.hasRemaining()) {
                    g.writeNumber(b.get() & 0xff);
                }
                break;
            case INT8:
                while (b.hasRemaining()) {
                    g.writeNumber(b.get());
                }
                break;
            case INT16:
                while (b.remaining() >= 2) {
                    g.writeNumber(b.getShort());
                }
                break;
            case INT32:
                while (b.remaining() >= 4) {
                    g.writeNumber(b.getInt());
                }
                break;
            case INT64:
                while (b.remaining() >= 8) {
                    g.writeNumber(b.getLong());
                }
                break;
            case FP16:
                while (b.remaining() >= 2) {
                    g.writeNumber(Fp16.toFloat(b.getShort()));
                }
                break;
            case FP32:
                while (b.remaining() >= 4) {
                    g.writeNumber(b.getFloat());
                }
                break;
            case FP64:
                while (b.remaining() >= 8) {
                    g.writeNumber(b.getDouble());
                }
                break;
            case BYTES:
                for (String s : t.asStrings()) {
                    g.writeString(s);
                }
                break;
            default:
                throw new IllegalStateException(t.datatype().name());
        }
    }
}
