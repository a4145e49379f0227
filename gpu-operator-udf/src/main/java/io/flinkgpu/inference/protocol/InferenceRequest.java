package io.flinkgpu.inference.protocol;

import java.io.Serializable;
import java.util.List;
import java.util.Objects;

/**
 * An inference request in the Open Inference Protocol (KServe v2) layout. {@code modelVersion}
 * is null when the request asks for the model's default version.
 */
public final class InferenceRequest implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String id;
    private final String modelName;
    private final String modelVersion;
    private final List<Tensor> inputs;
    private final RequestParameters parameters;

    public InferenceRequest(
            String id, String modelName, String modelVersion, List<Tensor> inputs, RequestParameters parameters) {
        this.id = Objects.requireNonNull(id, "id");
        this.modelName = Objects.requireNonNull(modelName, "modelName");
        this.modelVersion = modelVersion;
        this.inputs = List.copyOf(inputs);
        this.parameters = parameters == null ? RequestParameters.DEFAULTS : parameters;
    }

    public String id() {
        return id;
    }

    public String modelName() {
        return modelName;
    }

    /** The requested version, or null for the model's default version. */
    public String modelVersion() {
        return modelVersion;
    }

    public List<Tensor> inputs() {
        return inputs;
    }

    public RequestParameters parameters() {
        return parameters;
    }

    public Tensor input(String name) {
        for (Tensor t : inputs) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** The batch dimension shared by all inputs (validated upstream). */
    public int batchSize() {
        return inputs.isEmpty() ? 0 : (int) inputs.get(0).batchSize();
    }

    /** The same request pinned to a resolved version. */
    public InferenceRequest withVersion(String version) {
        return new InferenceRequest(id, modelName, version, inputs, parameters);
    }

    /** The same request with other parameters. */
    public InferenceRequest withParameters(RequestParameters newParameters) {
        return new InferenceRequest(id, modelName, modelVersion, inputs, newParameters);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof InferenceRequest)) {
            return false;
        }
        InferenceRequest r = (InferenceRequest) o;
        return id.equals(r.id) && modelName.equals(r.modelName) && Objects.equals(modelVersion, r.modelVersion)
                && inputs.equals(r.inputs) && parameters.equals(r.parameters);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, modelName, modelVersion, inputs, parameters);
    }

    @Override
    public String toString() {
        return "InferenceRequest{" + id + ", " + modelName + (modelVersion == null ? "" : ":" + modelVersion)
                + ", " + inputs + "}";
    }
}
