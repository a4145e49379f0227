package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import java.util.List;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * The enrichment operator behind {@link GpuInference#enrich}: each event makes one request of
 * the {@link Enrichment}'s model (its inputs function), is batched and run by the same engine as
 * {@link GpuInferenceOperator} ({@link AbstractInferenceOperator}), and comes out as the record its
 * combine function makes of it and its outputs, or on the failure side output as an
 * {@link EnrichmentFailure} with the error. An exception of either function, or a null they
 * return, is the event's {@code INTERNAL} failure, never a failed task.
 *
 * <p>Checkpoints hold the events themselves (queued or executing), in the state
 * {@value #STATE_NAME} with Flink's serializer of the events' type; a restore makes their requests
 * again and queues them, so no accepted event is lost.
 */
public class EnrichmentOperator<T, R> extends AbstractInferenceOperator<T, R> {

    private static final long serialVersionUID = 1L;
    /** The pending events' state. */
    static final String STATE_NAME = "gpu-enrichment-pending-events";

    private final Enrichment<T, R> enrichment;
    private final TypeSerializer<T> eventSerializer;
    private final OutputTag<EnrichmentFailure<T>> failures;
    private transient String idPrefix;
    private transient long sequence;
    private transient boolean copyEvents;

    public EnrichmentOperator(StreamOperatorParameters<R> parameters, InferenceSettings settings,
            Enrichment<T, R> enrichment, TypeSerializer<T> eventSerializer, OutputTag<EnrichmentFailure<T>> failures) {
        super(parameters, settings);
        this.enrichment = enrichment;
        this.eventSerializer = eventSerializer;
        this.failures = failures;
    }

    @Override
    public void open() throws Exception {
        // before the engine opens: it re-queues restored events, which makes their requests
        idPrefix = enrichment.model() + "-" + subtaskIndex() + "-";
        copyEvents = getExecutionConfig().isObjectReuseEnabled();
        super.open();
    }

    @Override
    public void processElement(StreamRecord<T> element) throws Exception {
        if (copyEvents) {
            // With object reuse the upstream operator may change the event after handing it over,
            // and this operator holds it until its batch completes (as Flink's async operator does).
            element.replace(eventSerializer.copy(element.getValue()));
        }
        super.processElement(element);
    }

    @Override
    protected String pendingStateName() {
        return STATE_NAME;
    }

    @Override
    protected TypeSerializer<T> pendingSerializer() {
        return eventSerializer;
    }

    @Override
    protected InferenceRequest requestOf(T event) {
        List<Tensor> inputs;
        try {
            inputs = enrichment.inputs().inputs(event);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            throw UserFunctionException.threw("inputs", e);
        }
        if (inputs == null) {
            throw new UserFunctionException("the inputs function returned null", null);
        }
        RequestParameters parameters = null;
        if (enrichment.parameters() != null) {
            try {
                parameters = enrichment.parameters().parameters(event);
            } catch (VirtualMachineError e) {
                throw e;
            } catch (Throwable e) {
                throw UserFunctionException.threw("parameters", e);
            }
        }
        // ids only name the request in logs and errors: answers go to their event, not by id
        return new InferenceRequest(idPrefix + sequence++, enrichment.model(), enrichment.version(), inputs,
                parameters);
    }

    @Override
    protected void collect(T event, InferenceResponse response) {
        if (response.isError()) {
            output.collect(failures, new StreamRecord<>(
                    new EnrichmentFailure<>(event, response.error(), enrichment.model(), response.modelVersion())));
            return;
        }
        R result;
        try {
            result = enrichment.combine().combine(event, response);
        } catch (VirtualMachineError e) {
            throw e;
        } catch (Throwable e) {
            throw UserFunctionException.threw("combine", e);
        }
        if (result == null) {
            throw new UserFunctionException("the combine function returned null", null);
        }
        output.collect(new StreamRecord<>(result));
    }

    /** The handling of the event threw before its request was made, or while it was: no id names it. */
    @Override
    protected InferenceResponse failureOf(T event, InferenceError error) {
        return InferenceResponse.failure("(none)", enrichment.model(), enrichment.version(), error, Timings.NONE);
    }

    /** The failure side output already carries the event and its error: nothing more to dead-letter. */
    @Override
    protected void deadLetter(T event, InferenceRequest refusedAs, ErrorCode code, String reason) {}

    @Override
    protected String failureReason(RuntimeException e) {
        return e instanceof UserFunctionException ? e.getMessage() : super.failureReason(e);
    }

    @Override
    protected String emitFailureReason(RuntimeException e) {
        return e instanceof UserFunctionException ? e.getMessage()
                : "the enriched record could not be emitted: " + e.getClass().getName() + ": " + e.getMessage();
    }

    /** A function of the enrichment threw or returned null: the event's fault, answered INTERNAL. */
    static final class UserFunctionException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        UserFunctionException(String message, Throwable cause) {
            super(message, cause);
        }

        static UserFunctionException threw(String function, Throwable e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return new UserFunctionException("the " + function + " function threw " + e.getClass().getName() + ": "
                    + e.getMessage(), e);
        }
    }
}
