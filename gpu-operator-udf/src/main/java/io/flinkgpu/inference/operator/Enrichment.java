package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.Serializable;
import java.util.List;
import java.util.Objects;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * What {@link GpuInference#enrich} does with each event of a stream: the model that serves it,
 * the inputs an event gives that model, and the record an event and its model outputs make.
 *
 * <pre>{@code
 * SingleOutputStreamOperator<Scored> scored = inference.enrich(transactions,
 *         Enrichment.of("fraud-score",
 *                 (Transaction t) -> List.of(Tensor.ofFloats("features", new long[] {1, 8}, t.features())),
 *                 (Transaction t, InferenceResponse r) -> new Scored(t, r.output("score").asFloats()[0]))
 *             .returns(Scored.class));
 * DataStream<EnrichmentFailure<Transaction>> failed =
 *         scored.getSideOutput(GpuInference.enrichmentFailures(transactions));
 * }</pre>
 *
 * <p>The combine function sees successful responses only. An event that gets an error (bad
 * inputs, an unknown model, a timeout, a full queue, a model that failed to load) is emitted on the
 * failure side output with its {@link io.flinkgpu.inference.protocol.InferenceError}, as is one for
 * which a function of this enrichment threw or returned null ({@code INTERNAL}); neither fails the
 * task. Instances are immutable: each setter returns a new one.
 *
 * @param <T> the events
 * @param <R> the enriched records
 */
public final class Enrichment<T, R> implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The model inputs of one event: named tensors whose first dimension is the batch (usually 1). */
    @FunctionalInterface
    public interface InputsFunction<T> extends Function {
        List<Tensor> inputs(T event) throws Exception;
    }

    /** The enriched record of an event and its successful response ({@code response.output(name)}). */
    @FunctionalInterface
    public interface CombineFunction<T, R> extends Function {
        R combine(T event, InferenceResponse response) throws Exception;
    }

    /** The request parameters of an event: priority, timeout, tenant, deadline (null: the defaults). */
    @FunctionalInterface
    public interface ParametersFunction<T> extends Function {
        RequestParameters parameters(T event) throws Exception;
    }

    private final String model;
    private final String version;
    private final InputsFunction<T> inputs;
    private final CombineFunction<T, R> combine;
    private final ParametersFunction<T> parameters;
    private final TypeInformation<R> resultType;

    private Enrichment(String model, String version, InputsFunction<T> inputs, CombineFunction<T, R> combine,
            ParametersFunction<T> parameters, TypeInformation<R> resultType) {
        this.model = model;
        this.version = version;
        this.inputs = inputs;
        this.combine = combine;
        this.parameters = parameters;
        this.resultType = resultType;
    }

    /**
     * Enriches events with the default version of {@code model}; set the result type with
     * {@link #returns} (Flink cannot infer it from a lambda).
     */
    public static <T, R> Enrichment<T, R> of(String model, InputsFunction<T> inputs, CombineFunction<T, R> combine) {
        if (model == null || model.isBlank()) {
            throw new IllegalArgumentException("an enrichment needs a model name");
        }
        return new Enrichment<>(model, null, Objects.requireNonNull(inputs, "inputs function"),
                Objects.requireNonNull(combine, "combine function"), null, null);
    }

    /** Pins a model version (default: the model's default version, which hot reload may change). */
    public Enrichment<T, R> version(String modelVersion) {
        return new Enrichment<>(model, modelVersion, inputs, combine, parameters, resultType);
    }

    /** Request parameters per event (priority, timeout, tenant, deadline); default: none. */
    public Enrichment<T, R> parameters(ParametersFunction<T> perEvent) {
        return new Enrichment<>(model, version, inputs, combine, perEvent, resultType);
    }

    /** The type of the enriched records. */
    public Enrichment<T, R> returns(TypeInformation<R> type) {
        return new Enrichment<>(model, version, inputs, combine, parameters, Objects.requireNonNull(type, "type"));
    }

    /** The type of the enriched records, by class (a POJO, a record, a basic type). */
    public Enrichment<T, R> returns(Class<R> type) {
        return returns(TypeInformation.of(type));
    }

    public String model() {
        return model;
    }

    /** The pinned version, or null for the model's default version. */
    public String version() {
        return version;
    }

    public InputsFunction<T> inputs() {
        return inputs;
    }

    public CombineFunction<T, R> combine() {
        return combine;
    }

    /** The parameters function, or null. */
    public ParametersFunction<T> parameters() {
        return parameters;
    }

    /** The result type, or null until {@link #returns} sets it. */
    public TypeInformation<R> resultType() {
        return resultType;
    }

    @Override
    public String toString() {
        return "Enrichment{" + model + (version == null ? "" : ":" + version) + " -> " + resultType + "}";
    }
}
