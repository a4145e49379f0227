package io.flinkgpu.inference.admission;

import io.flinkgpu.inference.batching.BatchKey;
import io.flinkgpu.inference.batching.DynamicBatcher;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.Fp16;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.inference.qos.SchedulingConfig;
import io.flinkgpu.inference.qos.TenantGate;
import io.flinkgpu.inference.qos.TenantRegistry;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.function.ToIntFunction;

/**
 * The one place that decides whether a request is served: bytes become a decoded request
 * ({@link #decode}), a decoded request becomes an {@link Admitted} request or a {@link Refused}
 * one ({@link #admit}), and a queue that will not take an admitted request turns it into a
 * refusal ({@link #refuseQueued}). Every refusal has a stable {@link ErrorCode} and a message that
 * names the limit and where it comes from; "why was my request refused" is answered here.
 *
 * <p>The decision travels with the request: the batcher queues it under the {@link BatchKey},
 * level and deadline decided here and re-derives nothing. Limits are the effective ones: the
 * smaller of the model's {@code max_batch_size} and the operator's batch limit, so nothing that
 * is admitted can fail to fit a batch.
 */
public final class RequestAdmission {

    /** The outcome of {@link #admit}: admitted or refused. */
    public sealed interface Decision permits Admitted, Refused {}

    /**
     * An admitted request, pinned to the version that serves it.
     *
     * @param key the queue it joins (model version and non-batch dimensions)
     * @param level its priority level, 1 the highest
     * @param deadlineNanos its deadline on the admission's clock ({@link Long#MAX_VALUE}: none)
     */
    public record Admitted(InferenceRequest request, ModelRepository.ResolvedModel model, BatchKey key, int samples,
            int level, String tenant, long deadlineNanos) implements Decision {
        public DynamicBatcher.Request scheduling() {
            return new DynamicBatcher.Request(level, tenant, deadlineNanos);
        }
    }

    /**
     * A refused request and why.
     *
     * @param model the resolved model version, null when it was not resolved
     * @param badInput whether the request itself is at fault (dead-letter it), as opposed to a
     *     refusal for load, quota or deadline that the same request could pass later
     */
    public record Refused(InferenceRequest request, ModelId model, InferenceError error, boolean badInput)
            implements Decision {
        public ErrorCode code() {
            return error.code();
        }
    }

    /** The outcome of {@link #decode}: a request, or the error and whatever identifies the record. */
    public record Decoded(InferenceRequest request, ProtocolException error, String requestId, String modelName) {
        public boolean ok() {
            return request != null;
        }
    }

    private final ModelRepository repository;
    private final ValidationLimits limits;
    private final ToIntFunction<ModelConfig> operatorMaxBatch;
    private final String operatorMaxBatchOption;
    private final TenantGate tenants;
    private final LongSupplier clock;

    /** Validation only: the model's own batch limit, unlimited tenants, the system clock. */
    public RequestAdmission(ModelRepository repository, ValidationLimits limits) {
        this(repository, limits, c -> Integer.MAX_VALUE, "", new TenantGate(TenantRegistry.unlimited()),
                System::nanoTime);
    }

    /**
     * @param operatorMaxBatch the operator's batch limit for a model (its effective batching's max)
     * @param operatorMaxBatchOption the option that sets it, named in refusals
     * @param clock nanoseconds on the batcher's clock
     */
    public RequestAdmission(ModelRepository repository, ValidationLimits limits,
            ToIntFunction<ModelConfig> operatorMaxBatch, String operatorMaxBatchOption, TenantGate tenants,
            LongSupplier clock) {
        this.repository = repository;
        this.limits = limits;
        this.operatorMaxBatch = operatorMaxBatch;
        this.operatorMaxBatchOption = operatorMaxBatchOption;
        this.tenants = tenants;
        this.clock = clock;
    }

    // ---- bytes -> request --------------------------------------------------------------------

    /**
     * Decodes one record. A failure keeps the request id when the payload or the record key
     * names one, so that its caller can still be answered.
     */
    public static Decoded decode(byte[] payload, byte[] key, WireFormat format, ValidationLimits limits) {
        try {
            int size = payload == null ? 0 : payload.length;
            if (size > limits.maxRequestBytes()) {
                throw new ProtocolException(ErrorCode.TENSOR_TOO_LARGE, "request of " + size
                        + " bytes exceeds the limit of " + limits.maxRequestBytes()
                        + " (inference.validation.max-request-size)");
            }
            return new Decoded(format.decodeRequest(payload), null, null, null);
        } catch (ProtocolException e) {
            String id = e.requestId() != null ? e.requestId() : keyAsId(key);
            return new Decoded(null, e, id, e.modelName());
        }
    }

    /** Producers may key records by request id; such a key identifies an undecodable request. */
    public static String keyAsId(byte[] key) {
        if (key == null || key.length == 0 || key.length > 256) {
            return null;
        }
        String s = new String(key, StandardCharsets.UTF_8);
        return s.chars().allMatch(c -> c >= 0x20 && c < 0x7f) ? s : null;
    }

    // ---- request -> admitted or refused --------------------------------------------------------

    /**
     * Resolves the model version, validates against the effective limits, takes a tenant slot,
     * and fixes level, deadline and queue. An admitted request holds its tenant's slot until
     * {@link #release} (or {@link #refuseQueued}).
     */
    public Decision admit(InferenceRequest request) {
        Validated v;
        try {
            v = check(request);
        } catch (ProtocolException e) {
            return new Refused(request, null, e.toError(), true);
        }
        InferenceRequest r = v.request();
        ModelId id = v.model().id();
        String tenant = r.parameters().tenant();
        long now = clock.getAsLong();
        ErrorCode refused = tenants.admit(tenant, r.modelName(), now);
        if (refused != null) {
            return new Refused(r, id, new InferenceError(refused, refused == ErrorCode.FORBIDDEN_MODEL
                    ? "tenant '" + tenant + "' may not use model '" + r.modelName() + "'"
                    : "tenant '" + tenant + "' is over its rate or in-flight limit"), false);
        }
        SchedulingConfig scheduling = v.model().config().scheduling();
        int priority = r.parameters().priority();
        int level = priority < 1 ? scheduling.defaultPriority() : priority;
        return new Admitted(r, v.model(), new BatchKey(id, shapeKey(v)), r.batchSize(), level, tenant,
                deadlineNanos(r, scheduling, now));
    }

    /** Gives back an admitted request's tenant slot once it is answered. */
    public void release(Admitted admitted) {
        tenants.release(admitted.tenant());
    }

    /** The batcher's weight of a tenant. */
    public double tenantWeight(String tenant) {
        return tenants.weight(tenant);
    }

    /**
     * The refusal of an admitted request that its queue did not take; gives back its tenant slot.
     *
     * @param predictedNanos the latency model's prediction for the request alone
     */
    public Refused refuseQueued(Admitted a, DynamicBatcher.Admission outcome, int maxQueueSize, long predictedNanos) {
        release(a);
        long now = clock.getAsLong();
        String message = switch (outcome) {
            case QUEUE_FULL -> "priority level " + a.level() + " of model '" + a.model().id() + "' has " + maxQueueSize
                    + " requests queued";
            case DEADLINE_INFEASIBLE -> a.deadlineNanos() <= now
                    ? "the deadline passed before the request was queued"
                    : "predicted run time " + predictedNanos / 1000 + " us exceeds the "
                            + (a.deadlineNanos() - now) / 1000 + " us left to the deadline";
            default -> "the batcher refused the request: " + outcome;
        };
        ErrorCode code = outcome == DynamicBatcher.Admission.QUEUE_FULL ? ErrorCode.QUEUE_FULL
                : outcome == DynamicBatcher.Admission.DEADLINE_INFEASIBLE ? ErrorCode.DEADLINE_INFEASIBLE
                : ErrorCode.INTERNAL;
        return new Refused(a.request(), a.model().id(), new InferenceError(code, message), code == ErrorCode.INTERNAL);
    }

    /**
     * The request's deadline on the clock of {@code nowNanos}: arrival plus the model's default
     * timeout, shortened (never extended, unless the config allows it) by the request's
     * {@code timeout_ms} and by an absolute {@code deadline_unix_ms}.
     */
    public static long deadlineNanos(InferenceRequest r, SchedulingConfig scheduling, long nowNanos) {
        long defaultTimeoutMs = scheduling.defaultTimeoutMs();
        long byDefault = defaultTimeoutMs > 0 ? nowNanos + defaultTimeoutMs * 1_000_000 : Long.MAX_VALUE;
        long requested = Long.MAX_VALUE;
        if (r.parameters().timeoutMs() > 0) {
            requested = nowNanos + r.parameters().timeoutMs() * 1_000_000;
        }
        if (r.parameters().deadlineEpochMs() > 0) {
            long leftMs = r.parameters().deadlineEpochMs() - System.currentTimeMillis();
            requested = Math.min(requested, nowNanos + leftMs * 1_000_000);
        }
        if (requested == Long.MAX_VALUE) {
            return byDefault;
        }
        return scheduling.allowTimeoutOverride() ? requested : Math.min(requested, byDefault);
    }

    /** Non-batch dimensions of every input, in config order: requests sharing them stack. */
    private static String shapeKey(Validated v) {
        boolean variable = false;
        for (TensorSpec spec : v.model().config().inputs()) {
            variable |= spec.hasVariableDimension();
        }
        if (!variable) {
            return "";
        }
        StringBuilder sb = new StringBuilder();
        for (TensorSpec spec : v.model().config().inputs()) {
            long[] shape = v.request().input(spec.name()).shape();
            sb.append('[');
            for (int i = 1; i < shape.length; i++) {
                sb.append(i > 1 ? "," : "").append(shape[i]);
            }
            sb.append(']');
        }
        return sb.toString();
    }

    // ---- validation against the model ---------------------------------------------------------

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
        List<Tensor> inputs = request.inputs();
        long batch = -1;
        for (int i = 0; i < inputs.size(); i++) {
            Tensor t = inputs.get(i);
            for (int j = 0; j < i; j++) { // models have a handful of inputs: no set per request
                if (inputs.get(j).name().equals(t.name())) {
                    throw new ProtocolException(ErrorCode.INVALID_FIELD, "input '" + t.name() + "' appears twice");
                }
            }
            TensorSpec spec = config.input(t.name());
            if (spec == null) {
                throw new ProtocolException(ErrorCode.UNKNOWN_INPUT, "model '" + config.name() + "' has no input '"
                        + t.name() + "'; inputs: " + config.inputs());
            }
            batch = checkTensor(t, spec, config, batch);
        }
        if (inputs.size() != config.inputs().size()) { // every input is known and none repeats: same count, all there
            for (TensorSpec spec : config.inputs()) {
                if (request.input(spec.name()) == null) {
                    throw new ProtocolException(ErrorCode.MISSING_INPUT, "missing input " + spec);
                }
            }
        }
        int operatorMax = operatorMaxBatch.applyAsInt(config);
        if (batch > operatorMax && operatorMax < config.maxBatchSize()) {
            throw new ProtocolException(ErrorCode.BATCH_TOO_LARGE, "the request carries " + batch
                    + " samples; this operator batches at most " + operatorMax + " (" + operatorMaxBatchOption
                    + "; the model's max_batch_size is " + config.maxBatchSize() + "): split the request");
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
        if (t.datatype() != spec.datatype()) {
            throw new ProtocolException(ErrorCode.DATATYPE_MISMATCH,
                    label(t) + " is " + t.datatype() + " but the model expects " + spec.datatype());
        }
        long[] shape = t.shape();
        long[] expected = spec.shape();
        if (shape.length != expected.length + 1) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, label(t) + " has shape " + Arrays.toString(shape)
                    + "; expected [batch, " + dims(expected) + "]");
        }
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] >= 0 ? shape[i + 1] != expected[i] : shape[i + 1] < 1) {
                throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, label(t) + " has shape " + Arrays.toString(shape)
                        + "; expected [batch, " + dims(expected) + "]");
            }
        }
        if (shape[0] < 1) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH, label(t) + " has an empty batch dimension");
        }
        if (batch >= 0 && shape[0] != batch) {
            throw new ProtocolException(ErrorCode.SHAPE_MISMATCH,
                    "inputs disagree on the batch dimension (" + batch + " vs " + shape[0] + ")");
        }
        if (shape[0] > config.maxBatchSize()) {
            throw new ProtocolException(ErrorCode.BATCH_TOO_LARGE, label(t) + " carries " + shape[0]
                    + " samples; the model's max_batch_size is " + config.maxBatchSize());
        }
        long elements = t.elementCount();
        if (elements < 0 || elements > limits.maxTensorElements()) {
            throw new ProtocolException(ErrorCode.TENSOR_TOO_LARGE, label(t) + " has " + (elements < 0 ? "over 2^63" : elements)
                    + " elements; the limit is " + limits.maxTensorElements() + " (inference.validation.max-tensor-elements)");
        }
        long present = t.dataElementCount();
        if (present != elements) {
            throw new ProtocolException(ErrorCode.ELEMENT_COUNT_MISMATCH, label(t) + " has shape " + Arrays.toString(shape)
                    + " (" + elements + " elements) but " + (present < 0 ? "malformed" : String.valueOf(present))
                    + " data elements");
        }
        if (t.datatype() == DataType.BYTES) {
            for (byte[] e : t.asByteElements()) {
                try {
                    StandardCharsets.UTF_8.newDecoder().decode(ByteBuffer.wrap(e));
                } catch (CharacterCodingException ex) {
                    throw new ProtocolException(ErrorCode.INVALID_FIELD, label(t) + " has an element that is not UTF-8");
                }
            }
        }
        if (!spec.allowNan() && t.datatype().isFloatingPoint() && hasNonFinite(t)) {
            throw new ProtocolException(ErrorCode.NAN_NOT_ALLOWED,
                    label(t) + " contains NaN or infinity, which model '" + config.name() + "' does not accept");
        }
        return shape[0];
    }

    /** How a message names a tensor: built only when a message is. */
    private static String label(Tensor t) {
        return "input '" + t.name() + "'";
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
