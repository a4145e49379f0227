package io.flinkgpu.inference.batching;

import io.flinkgpu.inference.model.ModelId;
import java.io.Serializable;

/**
 * What requests must share to be stacked into one batch: the model version and the non-batch
 * dimensions of every input (which differ between requests only for variable-size inputs).
 */
public record BatchKey(ModelId model, String shapeSignature) implements Serializable {
    @Override
    public String toString() {
        return shapeSignature.isEmpty() ? model.toString() : model + shapeSignature;
    }
}
