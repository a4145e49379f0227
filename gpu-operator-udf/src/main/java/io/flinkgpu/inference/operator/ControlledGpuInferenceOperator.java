package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * The inference operator with a second input: the plans the control plane's gate
 * ({@link PlanRouter}) applied, broadcast to every subtask, whose LOAD/UNLOAD commands the subtask
 * applies to its model cache. Requests on
 * the first input are served exactly as by {@link GpuInferenceOperator}. The end of either input
 * drains the queues (Flink calls {@code BoundedOneInput.endInput()} once per finished input), which
 * is harmless: draining only runs what is queued.
 */
public class ControlledGpuInferenceOperator extends GpuInferenceOperator
        implements TwoInputStreamOperator<InferenceRequest, byte[], InferenceResponse> {
    private static final long serialVersionUID = 1L;

    /** The stage's queue board name (null: none). */
    private final String queueBoard;

    public ControlledGpuInferenceOperator(StreamOperatorParameters<InferenceResponse> parameters,
            InferenceSettings settings) {
        this(parameters, settings, null);
    }

    /** An operator that publishes its outstanding requests on the stage's queue board {@code queueBoard} (null: none). */
    public ControlledGpuInferenceOperator(StreamOperatorParameters<InferenceResponse> parameters,
            InferenceSettings settings, String queueBoard) {
        super(parameters, settings);
        this.queueBoard = queueBoard;
    }

    @Override
    protected String queueBoardName() {
        return queueBoard;
    }

    /** Shadow rollouts: compares shadow copies' answers with the served ones and swallows them. */
    private transient ShadowComparator shadows;

    private ShadowComparator shadows() {
        if (shadows == null) {
            shadows = new ShadowComparator(getMetricGroup());
        }
        return shadows;
    }

    @Override
    protected void processControl(byte[] record) {
        super.processControl(record);
        shadows().update(record);
    }

    @Override
    protected void collect(InferenceRequest request, InferenceResponse response) {
        if (shadows().answered(request, response)) {
            super.collect(request, response);
        }
    }

    /** A shadow copy is never dead-lettered: its served twin is, if it is bad input. */
    @Override
    protected void deadLetter(InferenceRequest request, InferenceRequest refusedAs, ErrorCode code, String reason) {
        if (!PlanRouter.isShadow(request)) {
            super.deadLetter(request, refusedAs, code, reason);
        }
    }

    /** Answers waiting for their shadow twin (for tests). */
    int shadowsWaiting() {
        return shadows().waiting();
    }

    @Override
    public void processElement1(StreamRecord<InferenceRequest> element) throws Exception {
        processElement(element);
    }

    @Override
    public void processElement2(StreamRecord<byte[]> element) {
        processControl(element.getValue());
    }
}
