package io.flinkgpu.bench.sut;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
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
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The records of the SQL configurations' Kafka tables. Every tensor column is {@code BYTES}
 * holding one sample's elements as raw little-endian bytes, exactly the tensor data the binary
 * wire format carries, and the record key is the request id ({@code 'key.format' = 'raw'}, on
 * both tables), which is how the harness matches answers to requests, as for the job.
 *
 * <ul>
 *   <li>A side with <b>one tensor</b> (the image model's input, every scenario's output) uses
 *       Flink's {@code raw} value format: the value <i>is</i> the tensor's bytes, nothing parsed
 *       or written per element. The raw format holds one column, so an answer's error travels as
 *       the record header {@value #ERROR_HEADER} ({@code "CODE: message"}, UTF-8; the sink's
 *       writable {@code headers} metadata column) with a null value; a success has no header.</li>
 *   <li>A side with <b>several tensors</b> (the recommendation model's {@code dense} and
 *       {@code sparse} inputs) uses Flink's {@code json} value format, one field per tensor whose
 *       BYTES value JSON carries as base64 ({@code {"dense": "<base64>", "sparse": "<base64>"}}),
 *       and on the answer side the error column as a string field.</li>
 * </ul>
 *
 * <p>The scenarios cycle through a fixed set of samples: a raw value is the sample tensor's own
 * byte array, a JSON value is written once per sample; a producer whose data is already in the
 * table's format. The SQL job still reads every record.
 *
 * <p>The rows carry no timings: a decoded answer has batch size 0 (unknown) and NaN queue and
 * inference times.
 */
public final class SqlRowCodec implements RecordCodec {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonFactory FACTORY = JSON.getFactory();
    /** The header of a raw answer that failed: {@code "CODE: message"}. */
    public static final String ERROR_HEADER = "error";
    /** Most samples whose JSON value is kept; later ones are written per request. */
    static final int MAX_CACHED_SAMPLES = 65_536;

    private final String model;
    private final List<TensorSpec> inputs;
    private final List<TensorSpec> outputs;
    private final String errorColumn;
    /** JSON values by the sample's first input tensor (the scenarios hand out the same objects). */
    private Map<Tensor, Cached> bodies;

    /** The JSON value of a sample, for exactly these tensors. */
    private record Cached(List<Tensor> tensors, byte[] body) {}

    /** Rows for {@code model}, whose tensors are {@code config}'s; the error column is {@code errorColumn}. */
    public SqlRowCodec(String model, ModelConfig config, String errorColumn) {
        this.model = model;
        this.inputs = List.copyOf(config.inputs());
        this.outputs = List.copyOf(config.outputs());
        this.errorColumn = errorColumn;
        if (inputs.isEmpty() || outputs.isEmpty()) {
            throw new IllegalArgumentException("model '" + model + "' has no inputs or no outputs");
        }
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
        if (!t.datatype().isFixedSize()) {
            throw new IllegalArgumentException("model '" + model + "': tensor " + t + " has element type "
                    + t.datatype() + "; the SQL rows here carry numeric tensors as raw bytes");
        }
        if (java.util.Arrays.stream(t.shape()).filter(d -> d < 0).count() > 1) {
            throw new IllegalArgumentException("model '" + model + "': tensor " + t + " has more than one "
                    + "variable dimension, which raw bytes cannot give");
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

    /** Whether the requests table's value format is {@code raw} (one input), else {@code json}. */
    public boolean rawRequests() {
        return inputs.size() == 1;
    }

    /** Whether the responses table's value format is {@code raw} (one output), else {@code json}. */
    public boolean rawAnswers() {
        return outputs.size() == 1;
    }

    // ---- requests ------------------------------------------------------------------------

    @Override
    public byte[] requestValue(InferenceRequest request) {
        List<Tensor> tensors = request.inputs();
        if (tensors.size() != inputs.size()) {
            throw new IllegalArgumentException("a request of " + tensors.size() + " tensors for model '" + model
                    + "' of " + inputs.size() + " inputs");
        }
        for (Tensor t : tensors) {
            if (t.batchSize() != 1) {
                throw new IllegalArgumentException("tensor '" + t.name() + "' holds " + t.batchSize()
                        + " samples; a SQL row holds one");
            }
        }
        if (rawRequests()) {
            return tensors.get(0).data(); // the tensor's own bytes: the producer copies them into its batch
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
        byte[] body = writeJson(tensors, null, false);
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

    /** {@code {"<tensor>": "<base64>", ...}} and, with {@code withError}, the error field (null for none). */
    private byte[] writeJson(List<Tensor> tensors, String error, boolean withError) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(256);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            g.writeStartObject();
            for (Tensor t : tensors) {
                g.writeFieldName(t.name());
                g.writeBinary(t.data());
            }
            if (withError) {
                g.writeStringField(errorColumn, error);
            }
            g.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }

    /** The request the requests table reads from a record of key {@code key} and value {@code value}. */
    public InferenceRequest readRequest(byte[] key, byte[] value) throws ProtocolException {
        String id = id(key);
        List<Tensor> tensors = new ArrayList<>();
        if (rawRequests()) {
            tensors.add(tensor(inputs.get(0), value, true));
        } else {
            JsonNode row = read(value);
            for (TensorSpec spec : inputs) {
                tensors.add(tensor(spec, bytes(row, spec.name(), true), true));
            }
        }
        return new InferenceRequest(id, model, null, tensors, RequestParameters.DEFAULTS);
    }

    // ---- answers -------------------------------------------------------------------------

    @Override
    public InferenceResponse answer(ConsumerRecord<byte[], byte[]> record) throws ProtocolException {
        return readAnswer(record.key(), record.value(), record.headers());
    }

    /** The response an answer record (key, value, headers) carries. */
    public InferenceResponse readAnswer(byte[] key, byte[] value, Headers headers) throws ProtocolException {
        String id = id(key);
        Timings unknown = new Timings(Double.NaN, Double.NaN, 0);
        String error;
        JsonNode row = null;
        if (rawAnswers()) {
            Header h = headers == null ? null : headers.lastHeader(ERROR_HEADER);
            error = h == null || h.value() == null ? null : new String(h.value(), StandardCharsets.UTF_8);
        } else {
            row = value == null ? null : read(value);
            JsonNode e = row == null ? null : row.get(errorColumn);
            error = e == null || e.isNull() ? null : e.asText();
        }
        if (error != null) {
            return InferenceResponse.failure(id, model, null, parseError(error), unknown);
        }
        List<Tensor> tensors = new ArrayList<>();
        for (TensorSpec spec : outputs) {
            byte[] bytes = rawAnswers() ? value : row == null ? null : bytes(row, spec.name(), false);
            if (bytes == null) {
                return InferenceResponse.failure(id, model, null, new InferenceError(ErrorCode.INFERENCE_FAILED,
                        "the answer has no value for output '" + spec.name() + "' and no error"), unknown);
            }
            tensors.add(tensor(spec, bytes, false));
        }
        return InferenceResponse.success(id, model, null, tensors, unknown);
    }

    /** {@code "CODE: message"} as an error; text without one of the protocol's codes is INTERNAL. */
    static InferenceError parseError(String text) {
        int colon = text.indexOf(':');
        if (colon > 0) {
            try {
                return new InferenceError(ErrorCode.valueOf(text.substring(0, colon)),
                        text.substring(colon + 1).trim());
            } catch (IllegalArgumentException e) {
                // not one of the protocol's codes: INTERNAL, with the text as it is
            }
        }
        return new InferenceError(ErrorCode.INTERNAL, text);
    }

    /** The value the responses table's sink writes for {@code response} (null for a failed raw answer). */
    public byte[] answerValue(InferenceResponse response) {
        if (rawAnswers()) {
            if (response.isError()) {
                return null;
            }
            Tensor t = response.output(outputs.get(0).name());
            return t == null ? null : t.data();
        }
        List<Tensor> tensors = new ArrayList<>();
        if (!response.isError()) {
            for (TensorSpec spec : outputs) {
                Tensor t = response.output(spec.name());
                if (t != null) {
                    tensors.add(t);
                }
            }
        }
        return writeJson(tensors, response.isError() ? errorText(response.error()) : null, true);
    }

    /** The headers the responses table's sink writes for {@code response}: the error of a failed raw answer. */
    public Headers answerHeaders(InferenceResponse response) {
        RecordHeaders h = new RecordHeaders();
        if (rawAnswers() && response.isError()) {
            h.add(ERROR_HEADER, errorText(response.error()).getBytes(StandardCharsets.UTF_8));
        }
        return h;
    }

    private static String errorText(InferenceError e) {
        return e.code() + ": " + e.message();
    }

    // ---- reading -------------------------------------------------------------------------

    private static String id(byte[] key) throws ProtocolException {
        if (key == null) {
            throw new ProtocolException(ErrorCode.MISSING_FIELD, "the record has no key (the request id)");
        }
        return new String(key, StandardCharsets.UTF_8);
    }

    private static JsonNode read(byte[] payload) throws ProtocolException {
        if (payload == null) {
            throw new ProtocolException(ErrorCode.MALFORMED_PAYLOAD, "the record has no value");
        }
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

    /** A BYTES field of a JSON row (base64), or null when it is absent or null. */
    private static byte[] bytes(JsonNode row, String field, boolean input) throws ProtocolException {
        JsonNode v = row.get(field);
        if (v == null || v.isNull()) {
            if (input) {
                throw new ProtocolException(ErrorCode.MISSING_INPUT, "column '" + field + "' is null");
            }
            return null;
        }
        if (!v.isTextual()) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "column '" + field + "' is not a base64 string");
        }
        try {
            return v.binaryValue();
        } catch (IOException | IllegalArgumentException e) {
            throw new ProtocolException(ErrorCode.INVALID_FIELD, "column '" + field + "' is not base64: "
                    + e.getMessage());
        }
    }

    /**
     * One sample of {@code spec} from its raw little-endian bytes (shape {@code [1, ...]}, a
     * variable dimension from the length); {@code input}: a request's column, else an answer's.
     */
    static Tensor tensor(TensorSpec spec, byte[] bytes, boolean input) throws ProtocolException {
        if (bytes == null) {
            throw new ProtocolException(input ? ErrorCode.MISSING_INPUT : ErrorCode.INFERENCE_FAILED,
                    "column '" + spec.name() + "' is null");
        }
        DataType type = spec.datatype();
        int size = type.elementSize();
        if (bytes.length % size != 0) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, "column '" + spec.name() + "' has "
                    + bytes.length + " bytes, not a whole number of " + type + " elements");
        }
        long n = bytes.length / size;
        long[] dims = spec.shape();
        long fixed = spec.fixedElementsPerSample();
        long[] shape = new long[dims.length + 1];
        shape[0] = 1;
        for (int i = 0; i < dims.length; i++) {
            shape[i + 1] = dims[i] < 0 ? (fixed > 0 && n % fixed == 0 ? n / fixed : -1) : dims[i];
        }
        if (n == 0 || Tensor.elementCount(shape) != n) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, "column '" + spec.name() + "' has " + n
                    + " elements for " + spec);
        }
        return new Tensor(spec.name(), type, shape, bytes);
    }
}
