package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Timings;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The inference operator: requests in, a response per request out (see
 * {@link AbstractInferenceOperator} for batching, execution, backpressure and checkpoints).
 * Every request is answered exactly once per run: with outputs, or with an error response that
 * says why; requests refused as bad input, and those whose handling threw, also go to the side
 * output {@link GpuInference#REFUSED}.
 *
 * <p>Checkpoints hold every request that has not been answered yet (queued or executing), as
 * admitted (pinned to the version that serves it), in the state {@value #STATE_NAME} with the
 * wire-format {@link CodecSerializer.RequestSerializer}; a restore queues them again (responses
 * emitted after the checkpoint may be repeated: at-least-once, with request ids to detect
 * duplicates).
 */
public class GpuInferenceOperator extends AbstractInferenceOperator<InferenceRequest, InferenceResponse> {

    private static final long serialVersionUID = 1L;
    /** The pending requests' state; its name and serializer are fixed (savepoint compatibility). */
    static final String STATE_NAME = "gpu-inference-pending-requests";

    public GpuInferenceOperator(StreamOperatorParameters<InferenceResponse> parameters, InferenceSettings settings) {
        super(parameters, settings);
    }

    @Override
    protected String pendingStateName() {
        return STATE_NAME;
    }

    @Override
    protected TypeSerializer<InferenceRequest> pendingSerializer() {
        return CodecSerializer.RequestSerializer.INSTANCE;
    }

    @Override
    protected InferenceRequest requestOf(InferenceRequest request) {
        return request;
    }

    /** A checkpoint keeps the request as admitted: pinned to the version that serves it. */
    @Override
    protected InferenceRequest checkpointed(InferenceRequest request, InferenceRequest admitted) {
        return admitted;
    }

    @Override
    protected void collect(InferenceRequest request, InferenceResponse response) {
        output.collect(new StreamRecord<>(response));
    }

    @Override
    protected InferenceResponse failureOf(InferenceRequest request, InferenceError error) {
        return InferenceResponse.failure(request.id(), request.modelName(), request.modelVersion(), error,
                Timings.NONE);
    }

    @Override
    protected void deadLetter(InferenceRequest request, InferenceRequest refusedAs, ErrorCode code, String reason) {
        output.collect(GpuInference.REFUSED,
                new StreamRecord<>(refusal(refusedAs != null ? refusedAs : request, code, reason)));
    }

    private static RefusedRequest refusal(InferenceRequest r, ErrorCode code, String reason) {
        byte[] encoded;
        try {
            encoded = CodecSerializer.CODEC.encodeRequest(r);
        } catch (RuntimeException e) {
            encoded = null;
        }
        return new RefusedRequest(code, reason, r.id(), r.modelName(), r.parameters().origin(), encoded);
    }
}
