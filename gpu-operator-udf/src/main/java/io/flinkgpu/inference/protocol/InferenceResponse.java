package io.flinkgpu.inference.protocol;

import java.io.Serializable;
import java.util.List;
import java.util.Objects;

/**
 * An inference response: either {@code outputs} or an {@code error}, with the request id, the
 * model and the version that served it, and the operator's timings.
 */
public final class InferenceResponse implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String id;
    private final String modelName;
    private final String modelVersion;
    private final List<Tensor> outputs;
    private final InferenceError error;
    private final Timings timings;

    private InferenceResponse(String id, String modelName, String modelVersion, List<Tensor> outputs,
            InferenceError error, Timings timings) {
        this.id = id == null ? "" : id;
        this.modelName = modelName == null ? "" : modelName;
        this.modelVersion = modelVersion;
        this.outputs = outputs == null ? List.of() : List.copyOf(outputs);
        this.error = error;
        this.timings = timings == null ? Timings.NONE : timings;
    }

    public static InferenceResponse success(String id, String modelName, String modelVersion, List<Tensor> outputs,
            Timings timings) {
        return new InferenceResponse(id, modelName, modelVersion, outputs, null, timings);
    }

    public static InferenceResponse failure(String id, String modelName, String modelVersion, InferenceError error,
            Timings timings) {
        return new InferenceResponse(id, modelName, modelVersion, List.of(), Objects.requireNonNull(error), timings);
    }

    public static InferenceResponse failure(InferenceRequest request, ErrorCode code, String message) {
        return failure(request.id(), request.modelName(), request.modelVersion(), new InferenceError(code, message),
                Timings.NONE);
    }

    public String id() {
        return id;
    }

    public String modelName() {
        return modelName;
    }

    public String modelVersion() {
        return modelVersion;
    }

    public List<Tensor> outputs() {
        return outputs;
    }

    public Tensor output(String name) {
        for (Tensor t : outputs) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        return null;
    }

    /** The error, or null for a successful response. */
    public InferenceError error() {
        return error;
    }

    public boolean isError() {
        return error != null;
    }

    public Timings timings() {
        return timings;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof InferenceResponse)) {
            return false;
        }
        InferenceResponse r = (InferenceResponse) o;
        return id.equals(r.id) && modelName.equals(r.modelName) && Objects.equals(modelVersion, r.modelVersion)
                && outputs.equals(r.outputs) && Objects.equals(error, r.error) && timings.equals(r.timings);
    }

    @Override
    public int hashCode() {
        return Objects.hash(id, modelName, modelVersion, outputs, error, timings);
    }

    @Override
    public String toString() {
        return "InferenceResponse{" + id + ", " + modelName + (modelVersion == null ? "" : ":" + modelVersion) + ", "
                + (error != null ? error : outputs) + ", " + timings + "}";
    }
}
