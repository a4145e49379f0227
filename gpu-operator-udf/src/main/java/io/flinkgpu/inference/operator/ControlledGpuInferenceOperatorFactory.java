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

    public ControlledGpuInferenceOperatorFactory(InferenceSettings settings) {
        this.settings = settings;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends StreamOperator<InferenceResponse>> T createStreamOperator(
            StreamOperatorParameters<InferenceResponse> parameters) {
        return (T) new ControlledGpuInferenceOperator(parameters, settings);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return ControlledGpuInferenceOperator.class;
    }
}
