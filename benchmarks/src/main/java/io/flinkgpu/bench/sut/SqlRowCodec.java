package io.flinkgpu.bench.sut;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The rows of the SQL configurations' Kafka tables, in Flink's {@code json} format: a request is
 * {@code {"id": "<request id>", "<input tensor>": [elements of one sample, row-major], ...}}, an
 * answer {@code {"id": ..., "<output tensor>": [...], ..., "error": null}} (or null outputs and
 * {@code "CODE: message"} in the error column, ML_PREDICT's {@code on-error = ERROR_COLUMN}). The
 * SQL sink writes the id as the record key ({@code 'key.format' = 'raw'}), which is how the
 * harness matches answers to requests, as it does for the job's responses.
 *
 * <p>The scenarios cycle through a fixed set of samples, so the inputs part of a request's JSON is
 * written once per sample and only the id is written per request: a producer whose data is
 * already JSON. The SQL job still parses every row in full.
 *
 * <p>The rows carry no timings: a decoded answer has batch size 0 (unknown) and NaN queue and
 * inference times.
 */
public final class SqlRowCodec implements io.flinkgpu.inference.protocol.WireCodec {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonFactory FACTORY = JSON.getFactory();
    /** Most samples whose JSON is kept; later ones are written per request. */
    static final int MAX_CACHED_SAMPLES = 65_536;
    /** The element types a row column can carry here (what the scenarios' models take and give). */
    static final Set<DataType> SUPPORTED = Set.of(DataType.FP32, DataType.FP64, DataType.INT64, DataType.INT32,
            DataType.BOOL);

    private final String model;
    private final List<TensorSpec> inputs;
    private final List<TensorSpec> outputs;
    private final String errorColumn;
    private static final byte[] ROW_START = "{\"id\":\"".getBytes(StandardCharsets.US_ASCII);
    /** Sample JSON by the sample's first input tensor (the scenarios hand out the same objects). */
    private transient Map<Tensor, Cached> bodies;

    /** The inputs part of a sample's row ({@code "a": [...], ...}}), for exactly these tensors. */
    private record Cached(List<Tensor> tensors, byte[] body) {}

    /** Rows for {@code model}, whose tensors are {@code config}'s; the error column is {@code errorColumn}. */
    public SqlRowCodec(String model, ModelConfig config, String errorColumn) {
        this.model = model;
        this.inputs = List.copyOf(config.inputs());
        this.outputs = List.copyOf(config.outputs());
        this.errorColumn = errorColumn;
        for (TensorSpec t : inputs) {
            check(t);
        }
        for (TensorSpec t : outputs) {
            check(t);
            if (t.name().equals(errorColumn) || t.name().equals("id")) {
                throw new IllegalArgumentException("model '" + model + "' has an output named '" + t.name()
                        + "', a column the rows already use");
            }
        }
    }

    private void check(TensorSpec t) {
        if (!SUPPORTED.contains(t.datatype())) {
            throw new IllegalArgumentException("model '" + model + "': tensor " + t + " has element type "
                    + t.datatype() + "; the SQL rows here carry " + SUPPORTED);
        }
    }

    public List<TensorSpec> inputs() {
        return inputs;
    }

    public List<TensorSpec> outputs() {
        return outputs;
    }

    public String errorColumn() {
        return errorColumn;
    }

    // ---- requests ------------------------------------------------------------------------

    @Override
    public byte[] encodeRequest(InferenceRequest request) {
        byte[] body = body(request.inputs());
        byte[] id = JsonStringEncoder.getInstance().quoteAsUTF8(request.id());
        byte[] row = new byte[ROW_START.length + id.length + 2 + body.length];
        System.arraycopy(ROW_START, 0, row, 0, ROW_START.length);
        int n = ROW_START.length;
        System.arraycopy(id, 0, row, n, id.length);
        n += id.length;
        row[n++] = '"';
        row[n++] = ',';
        System.arraycopy(body, 0, row, n, body.length);
        return row;
    }

    /** {@code "a": [...], "b": [...]}} for {@code tensors}, from the cache when they are a known sample's. */
    private byte[] body(List<Tensor> tensors) {
        if (tensors.isEmpty()) {
            throw new IllegalArgumentException("a request without inputs has no SQL row");
        }
        Tensor first = tensors.get(0);
        synchronized (this) {
            if (bodies == null) {
                bodies = new IdentityHashMap<>();
            }
            Cached c = bodies.get(first);
            if (c != null && sameTensors(c.tensors(), tensors)) {
                return c.body();
            }
        }
        byte[] body = writeBody(tensors);
        synchronized (this) {
            if (bodies.size() < MAX_CACHED_SAMPLES) {
                bodies.put(first, new Cached(List.copyOf(tensors), body));
            }
        }
        return body;
    }

    private static boolean sameTensors(List<Tensor> a, List<Tensor> b) {
        if (a.size() != b.size()) {
            return false;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i) != b.get(i)) {
                return false;
            }
        }
        return true;
    }

    private byte[] writeBody(List<Tensor> tensors) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            // the row's fields after the id: a JSON object whose opening brace is left out
            g.writeStartObject();
            for (Tensor t : tensors) {
                if (t.batchSize() != 1) {
                    throw new IllegalArgumentException("tensor '" + t.name() + "' holds " + t.batchSize()
                            + " samples; a SQL row holds one");
                }
                g.writeFieldName(t.name());
                writeElements(g, t);
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        byte[] whole = out.toByteArray();
        return java.util.Arrays.copyOfRange(whole, 1, whole.length); // without the '{'
    }

    private static void writeElements(JsonGenerator g, Tensor t) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
        int n = Math.toIntExact(t.elementCount());
        g.writeStartArray();
        for (int i = 0; i < n; i++) {
            switch (t.datatype()) {
                case FP32 -> g.writeNumber(b.getFloat(i * 4));
                case FP64 -> g.writeNumber(b.getDouble(i * 8));
                case INT64 -> g.writeNumber(b.getLong(i * 8));
                case INT32 -> g.writeNumber(b.getInt(i * 4));
                case BOOL -> g.writeBoolean(b.get(i) != 0);
                default -> throw new IllegalArgumentException("tensor '" + t.name() + "': " + t.datatype()
                        + " elements are not carried in SQL rows here");
            }
        }
        g.writeEndArray();
    }

    @Override
    public InferenceRequest decodeRequest(byte[] payload) throws ProtocolException {
        JsonNode row = read(payload);
        String id = text(row, "id");
        List<Tensor> tensors = new ArrayList<>();
        for (TensorSpec spec : inputs) {
            tensors.add(tensor(spec, row.get(spec.name()), true));
        }
        return new InferenceRequest(id, model, null, tensors, RequestParameters.DEFAULTS);
    }

    // ---- answers -------------------------------------------------------------------------

    @Override
    public InferenceResponse decodeResponse(byte[] payload) throws ProtocolException {
        JsonNode row = read(payload);
        String id = text(row, "id");
        Timings unknown = new Timings(Double.NaN, Double.NaN, 0);
        JsonNode error = row.get(errorColumn);
        if (error != null && !error.isNull()) {
            String text = error.asText();
            int colon = text.indexOf(':');
            ErrorCode code = ErrorCode.INTERNAL;
            if (colon > 0) {
                try {
                    code = ErrorCode.valueOf(text.substring(0, colon));
                } catch (IllegalArgumentException e) {
                    // not one of the protocol's codes: INTERNAL, with the text as it is
                }
            }
            String message = colon > 0 ? text.substring(colon + 1).trim() : text;
            return InferenceResponse.failure(id, model, null, new InferenceError(code, message), unknown);
        }
        List<Tensor> tensors = new ArrayList<>();
        for (TensorSpec spec : outputs) {
            JsonNode values = row.get(spec.name());
            if (values == null || values.isNull()) {
                return InferenceResponse.failure(id, model, null, new InferenceError(ErrorCode.INFERENCE_FAILED,
                        "the row has no value for output '" + spec.name() + "' and no error"), unknown);
            }
            tensors.add(tensor(spec, values, false));
        }
        return InferenceResponse.success(id, model, null, tensors, unknown);
    }

    @Override
    public byte[] encodeResponse(InferenceResponse response) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            g.writeStringField("id", response.id());
            for (TensorSpec spec : outputs) {
                Tensor t = response.isError() ? null : response.output(spec.name());
                g.writeFieldName(spec.name());
                if (t == null) {
                    g.writeNull();
                } else {
                    writeElements(g, t);
                }
            }
            if (response.isError()) {
                g.writeStringField(errorColumn, response.error().code() + ": " + response.error().message());
            } else {
                g.writeNullField(errorColumn);
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    // ---- reading -------------------------------------------------------------------------

    private static JsonNode read(byte[] payload) throws ProtocolException {
        JsonNode row;
        try {
            row = JSON.readTree(payload);
        } catch (IOException e) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "not a JSON row: " + e.getMessage());
        }
        if (row == null || !row.isObject()) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "a row must be a JSON object");
        }
        return row;
    }

    private static String text(JsonNode row, String field) throws ProtocolException {
        JsonNode v = row.get(field);
        if (v == null || !v.isTextual()) {
            throw new ProtocolException(ErrorCode.MISSING_FIELD, "the row has no string '" + field + "'");
        }
        return v.asText();
    }

    /**
     * One sample of {@code spec} from a JSON array (shape {@code [1, ...]}, a variable dimension
     * from the array's length); {@code input}: a request's column, else an answer's.
     */
    private static Tensor tensor(TensorSpec spec, JsonNode values, boolean input) throws ProtocolException {
        ErrorCode missing = input ? ErrorCode.MISSING_INPUT : ErrorCode.INFERENCE_FAILED;
        if (values == null || values.isNull()) {
            throw new ProtocolException(missing, "column '" + spec.name() + "' is null");
        }
        if (!values.isArray()) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "column '" + spec.name() + "' is not an array");
        }
        int n = values.size();
        long[] dims = spec.shape();
        long fixed = spec.fixedElementsPerSample();
        long[] shape = new long[dims.length + 1];
        shape[0] = 1;
        for (int i = 0; i < dims.length; i++) {
            shape[i + 1] = dims[i] < 0 ? (fixed > 0 && n % fixed == 0 ? n / fixed : -1) : dims[i];
        }
        if (Tensor.elementCount(shape) != n || n == 0) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, "column '" + spec.name() + "' has " + n
                    + " elements for " + spec);
        }
        ByteBuffer b = ByteBuffer.allocate(n * spec.datatype().elementSize()).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < n; i++) {
            JsonNode v = values.get(i);
            boolean ok = spec.datatype() == DataType.BOOL ? v.isBoolean() : v.isNumber();
            if (!ok) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "column '" + spec.name() + "' element " + i
                        + " is " + v.getNodeType() + ", not a " + spec.datatype());
            }
            switch (spec.datatype()) {
                case FP32 -> b.putFloat(v.floatValue());
                case FP64 -> b.putDouble(v.doubleValue());
                case INT64 -> b.putLong(v.longValue());
                case INT32 -> b.putInt(v.intValue());
                default -> b.put((byte) (v.booleanValue() ? 1 : 0));
            }
        }
        return new Tensor(spec.name(), spec.datatype(), shape, b.array());
    }
}
