package io.flinkgpu.inference.cache;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Generated requests for warm-up: every input of the config at a given batch size, variable
 * dimensions set to 1. Floating-point inputs get values in [0, 1); integers are 0 (a valid index
 * for any embedding or gather), booleans false, strings a short word.
 */
final class WarmupInputs {
    private WarmupInputs() {}

    static InferenceRequest request(ModelConfig config, int batch, long seed) {
        Random random = new Random(seed);
        List<Tensor> inputs = new ArrayList<>();
        for (TensorSpec spec : config.inputs()) {
            long[] dims = spec.shape();
            long[] shape = new long[dims.length + 1];
            shape[0] = batch;
            for (int i = 0; i < dims.length; i++) {
                shape[i + 1] = dims[i] < 0 ? 1 : dims[i];
            }
            int n = Math.toIntExact(Tensor.elementCount(shape));
            inputs.add(tensor(spec.name(), spec.datatype(), shape, n, random));
        }
        return new InferenceRequest("warmup-" + config.name() + "-" + batch, config.name(), null, inputs,
                RequestParameters.DEFAULTS);
    }

    private static Tensor tensor(String name, DataType type, long[] shape, int n, Random random) {
        switch (type) {
            case FP32: {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextFloat();
                }
                return Tensor.ofFloats(name, shape, v);
            }
            case FP16: {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextFloat();
                }
                return Tensor.ofFp16(name, shape, v);
            }
            case FP64: {
                double[] v = new double[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextDouble();
                }
                return Tensor.ofDoubles(name, shape, v);
            }
            case BYTES: {
                String[] v = new String[n];
                Arrays.fill(v, "warmup");
                return Tensor.ofStrings(name, shape, v);
            }
            default:
                return new Tensor(name, type, shape, new byte[n * type.elementSize()]);
        }
    }
}
