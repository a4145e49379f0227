package io.flinkgpu.inference.model;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.flinkgpu.inference.protocol.DataType;
import java.io.Serializable;
import java.util.Arrays;
import java.util.Objects;

/**
 * A declared model input or output. {@code shape} excludes the batch dimension (as in Triton's
 * config when {@code max_batch_size > 0}); {@code -1} marks a variable dimension.
 */
public final class TensorSpec implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final DataType datatype;
    private final long[] shape;
    private final boolean allowNan;

    @JsonCreator
    public TensorSpec(@JsonProperty("name") String name, @JsonProperty("datatype") DataType datatype,
            @JsonProperty("shape") long[] shape, @JsonProperty("allow_nan") Boolean allowNan) {
        this.name = Objects.requireNonNull(name, "tensor 'name' is required");
        this.datatype = Objects.requireNonNull(datatype, "tensor 'datatype' is required for " + name);
        this.shape = Objects.requireNonNull(shape, "tensor 'shape' is required for " + name);
        this.allowNan = allowNan == null || allowNan;
        for (long d : shape) {
            if (d < -1 || d == 0) {
                throw new IllegalArgumentException("tensor " + name + ": dimension " + d + " is neither -1 nor positive");
            }
        }
    }

    @JsonProperty("name")
    public String name() {
        return name;
    }

    @JsonProperty("datatype")
    public DataType datatype() {
        return datatype;
    }

    @JsonProperty("shape")
    public long[] shape() {
        return shape.clone();
    }

    /** Whether NaN and infinities are acceptable input values (floating-point inputs only). */
    @JsonProperty("allow_nan")
    public boolean allowNan() {
        return allowNan;
    }

    public boolean hasVariableDimension() {
        for (long d : shape) {
            if (d < 0) {
                return true;
            }
        }
        return false;
    }

    /** Elements per sample when every dimension is fixed, else -1. */
    public long fixedElementsPerSample() {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                return -1;
            }
            n *= d;
        }
        return n;
    }

    @Override
    public String toString() {
        return name + ":" + datatype + Arrays.toString(shape);
    }
}
