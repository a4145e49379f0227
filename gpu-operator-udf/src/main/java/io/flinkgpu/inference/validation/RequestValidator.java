package io.flinkgpu.inference.validation;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.Fp16;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * Checks a decoded request against its model's config, so that everything that reaches the
 * batcher can be stacked and run. Each failure carries its own {@link ErrorCode}.
 */
public final class RequestValidator {
    private final ModelRepository repository;
    private final ValidationLimits limits;

    public RequestValidator(ModelRepository repository, ValidationLimits limits) {
        this.repository = repository;
        this.limits = limits;
    }

    /** Checks the payload size before decoding. */
    public void checkPayloadSize(int bytes) throws ProtocolException {
        if (bytes > limits.maxRequestBytes()) {
            throw new ProtocolException(ErrorCode.TENSOR_TOO_LARGE,
                    "request of " + bytes + " bytes exceeds the limit of " + limits.maxRequestBytes());
        }
    }

    /** A request that passed validation, pinned to the version that will serve it. */
    public record Validated(InferenceRequest request, ModelRepository.ResolvedModel model) {}

    /** Validates the request and returns it pinned to the version that will serve it. */
    public InferenceRequest validate(InferenceRequest request) throws ProtocolException {
        return check(request).request();
    }

    /** Validates the request and resolves the model version that will serve it. */
    public Validated check(InferenceRequest request) throws ProtocolException {
        ModelRepository.ResolvedModel resolved = repository.resolve(request.modelName(), request.modelVersion());
        ModelConfig config = resolved.config();
        Set<String> seen = new HashSet<>();
        long batch = -1;
        for (Tensor t : request.inputs()) {
            if (!seen.add(t.name())) {
                throw new ProtocolException(ErrorCode.INVALID_FIELD, "input '" + t.name() + "' appears twice");
            }
            TensorSpec spec = config.input(t.name());
            if (spec == null) {
                throw new ProtocolException(ErrorCode.UNKNOWN_INPUT, "model '" + config.name() + "' has no input '"
                        + t.name() + "'; inputs: " + config.inputs());
            }
            batch = checkTensor(t, spec, config, batch);
        }
        for (TensorSpec spec : config.inputs()) {
            if (!seen.contains(spec.name())) {
                throw new ProtocolException(ErrorCode.MISSING_INPUT, "missing input " + spec);
            }
        }
        int priority = request.parameters().priority();
        int levels = config.scheduling().priorityLevels();
        if (priority > levels) {
            throw new ProtocolException(ErrorCode.INVALID_PRIORITY, "priority " + priority + " is outside 1.." + levels
                    + " (model '" + config.name() + "' has " + levels + " priority level" + (levels == 1 ? "" : "s") + ")");
        }
        InferenceRequest pinned = resolved.id().version().equals(request.modelVersion())
                ? request : request.withVersion(resolved.id().version());
        return new Validated(pinned, resolved);
    }

    private long checkTensor(Tensor t, TensorSpec spec, ModelConfig config, long batch) throws ProtocolException {
        String name = "input '" + t.name() + "'";
        if (t.datatype() != spec.datatype()) {
            throw new ProtocolException(ErrorCode.DATATYPE_MISMATCH,
                    name + " is " + t.datatype() + " but the model expects " + spec.datatype());
        }
        long[] shape = t.shape();
        long[] expected = spec.shape();
        if (shape.length != expected.length + 1) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, name + " has shape " + Arrays.toString(shape)
                    + "; expected [batch, " + dims(expected) + "]");
        }
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] >= 0 ? shape[i + 1] != expected[i] : shape[i + 1] < 1) {
                throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, name + " has shape " + Arrays.toString(shape)
                        + "; expected [batch, " + dims(expected) + "]");
            }
        }
        if (shape[0] < 1) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, name + " has an empty batch dimension");
        }
        if (batch >= 0 && shape[0] != batch) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH,
                    "inputs disagree on the batch dimension (" + batch + " vs " + shape[0] + ")");
        }
        if (shape[0] > config.maxBatchSize()) {
            throw new ProtocolException(ErrorCode.BATCH_TOO_LARGE, name + " carries " + shape[0]
                    + " samples; the model's max_batch_size is " + config.maxBatchSize());
        }
        long elements = t.elementCount();
        if (elements < 0 || elements > limits.maxTensorElements()) {
            throw new ProtocolException(ErrorCode.TENSOR_TOO_LARGE, name + " has " + (elements < 0 ? "over 2^63" : elements)
                    + " elements; the limit is " + limits.maxTensorElements());
        }
        long present = t.dataElementCount();
        if (present != elements) {
            throw new ProtocolException(ErrorCode.ELEMENT_COUNT_MISMATCH, name + " has shape " + Arrays.toString(shape)
                    + " (" + elements + " elements) but " + (present < 0 ? "malformed" : String.valueOf(present))
                    + " data elements");
        }
        if (t.datatype() == DataType.BYTES) {
            for (byte[] e : t.asByteElements()) {
                try {
                    StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(e));
                } catch (CharacterCodingException ex) {
                    throw new ProtocolException(ErrorCode.INVALID_FIELD, name + " has an element that is not UTF-8");
                }
            }
        }
        if (!spec.allowNan() && t.datatype().isFloatingPoint() && hasNonFinite(t)) {
            throw new ProtocolException(ErrorCode.NAN_NOT_ALLOWED,
                    name + " contains NaN or infinity, which model '" + config.name() + "' does not accept");
        }
        return shape[0];
    }

    private static boolean hasNonFinite(Tensor t) {
        ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
        switch (t.datatype()) {
            case FP32:
                while (b.remaining() >= 4) {
                    if (!Float.isFinite(b.getFloat())) {
                        return true;
                    }
                }
                return false;
            case FP64:
                while (b.remaining() >= 8) {
                    if (!Double.isFinite(b.getDouble())) {
                        return true;
                    }
                }
                return false;
            case FP16:
                while (b.remaining() >= 2) {
                    if (!Float.isFinite(Fp16.toFloat(b.getShort()))) {
                        return true;
                    }
                }
                return false;
            default:
                return false;
        }
    }

    private static String dims(long[] dims) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < dims.length; i++) {
            sb.append(i == 0 ? "" : ", ").append(dims[i] < 0 ? "*" : String.valueOf(dims[i]));
        }
        return sb.toString();
    }
}
