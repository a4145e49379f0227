package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperatorFactory;

/** Creates {@link ControlledGpuInferenceOperator}s: requests on input 1, control records on input 2. */
public final class ControlledGpuInferenceOperatorFactory extends AbstractStreamOperatorFactory<InferenceResponse>
        implements TwoInputStreamOperatorFactory<InferenceRequest, byte[], InferenceResponse> {
    private static final long serialVersionUID = 1L;

    private final InferenceSettings settings;
    private final String queueBoard;

    public ControlledGpuInferenceOperatorFactory(InferenceSettings settings) {
        this(settings, null);
    }

    /** Operators that publish on the stage's queue board {@code queueBoard} (null: none). */
    public ControlledGpuInferenceOperatorFactory(InferenceSettings settings, String queueBoard) {
        this.settings = settings;
        this.queueBoard = queueBoard;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends StreamOperator<InferenceResponse>> T createStreamOperator(
            StreamOperatorParameters<InferenceResponse> parameters) {
        return (T) new ControlledGpuInferenceOperator(parameters, settings, queueBoard);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return ControlledGpuInferenceOperator.class;
    }
}
