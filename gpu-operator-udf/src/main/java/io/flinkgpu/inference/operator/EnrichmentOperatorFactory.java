package io.flinkgpu.inference.operator;

import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.util.OutputTag;

/** Creates {@link EnrichmentOperator}s with the mailbox executor they need for results. */
public final class EnrichmentOperatorFactory<T, R> extends AbstractStreamOperatorFactory<R>
        implements OneInputStreamOperatorFactory<T, R> {
    private static final long serialVersionUID = 1L;

    private final InferenceSettings settings;
    private final Enrichment<T, R> enrichment;
    private final TypeSerializer<T> eventSerializer;
    private final OutputTag<EnrichmentFailure<T>> failures;

    /**
     * @param eventSerializer Flink's serializer of the events' type: the pending events' state
     * @param failures the failure side output ({@link GpuInference#enrichmentFailures})
     */
    public EnrichmentOperatorFactory(InferenceSettings settings, Enrichment<T, R> enrichment,
            TypeSerializer<T> eventSerializer, OutputTag<EnrichmentFailure<T>> failures) {
        this.settings = settings;
        this.enrichment = enrichment;
        this.eventSerializer = eventSerializer;
        this.failures = failures;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <O extends StreamOperator<R>> O createStreamOperator(StreamOperatorParameters<R> parameters) {
        return (O) new EnrichmentOperator<>(parameters, settings, enrichment, eventSerializer.duplicate(), failures);
    }

    @Override
    @SuppressWarnings("rawtypes")
    public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
        return EnrichmentOperator.class;
    }
}
