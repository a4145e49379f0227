package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;

/** Creates {@link GpuInferenceOperator}s with the mailbox executor they need for results. */
public final class GpuInferenceOperatorFactory extends AbstractStreamOperatorFactory<InferenceResponse>
        implements OneInputStreamOperatorFactory<InferenceRequest, InferenceResponse> {
    private static final long serialVersionUID = 1L;

    private final InferenceSettings settings;

    public GpuInferenceOperatorFactory(InferenceSettings settings) {
        this.settings = settings;
    }

    public InferenceSettings settings() {
        return settings;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T extends StreamOperator<InferenceResponse>> T createStreamOperator(
            StreamOperatorParameters<InferenceResponse> parameters) {
        return (T) new GpuInferenceOperator(parameters, settings);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return GpuInferenceOperator.class;
    }
}
