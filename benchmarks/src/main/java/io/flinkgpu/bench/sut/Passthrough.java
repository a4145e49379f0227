package io.flinkgpu.bench.sut;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.job.InferenceJob;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;

/**
 * The job without inference: between the job's own Kafka source, parser and sinks
 * ({@link InferenceJob#build(org.apache.flink.streaming.api.environment.StreamExecutionEnvironment,
 * org.apache.flink.configuration.ReadableConfig, InferenceJob.InferenceStage)}), each parsed
 * request is answered at once with zeros in the model's declared output tensors, one row per
 * sample of the request, so that the response has the size the real one has. Its goodput is the
 * floor that Flink and Kafka set on the machine.
 *
 * <p>Variable output dimensions ({@code -1}) are taken as 1 (no scenario here declares one). A
 * request for a model or version the repository does not serve gets the job's UNKNOWN_MODEL /
 * UNKNOWN_VERSION error response, never a failed task.
 */
public final class Passthrough extends ProcessFunction<InferenceRequest, InferenceResponse> {
    private static final long serialVersionUID = 1L;

    /** The operator's name, which its task thread carries. */
    public static final String NAME = "Passthrough (no inference)";
    public static final String UID = "passthrough";

    private final String repository;
    private transient ModelRepository models;

    Passthrough(String repository) {
        this.repository = repository;
    }

    /** The stage that answers every request of the job in place of GPU inference. */
    public static InferenceJob.InferenceStage stage(String repository) {
        return requests -> requests.process(new Passthrough(repository), InferenceTypes.RESPONSE).uid(UID).name(NAME);
    }

    @Override
    public void open(OpenContext context) {
        models = ModelRepository.open(Path.of(repository));
    }

    @Override
    public void processElement(InferenceRequest request, Context ctx, Collector<InferenceResponse> out) {
        out.collect(answer(models, request));
    }

    /** The response the job would send, with zeros for the model's outputs, or the job's error response. */
    static InferenceResponse answer(ModelRepository models, InferenceRequest request) {
        ModelRepository.ResolvedModel model;
        try {
            model = models.resolve(request.modelName(), request.modelVersion());
        } catch (ProtocolException e) {
            return InferenceResponse.failure(request, e.code(), e.getMessage());
        }
        List<Tensor> outputs = zeros(model.config(), samples(request));
        if (outputs == null) {
            return InferenceResponse.failure(request, ErrorCode.INTERNAL, "model '" + request.modelName()
                    + "' declares no outputs: the passthrough cannot size a response");
        }
        return InferenceResponse.success(request.id(), request.modelName(), model.id().version(), outputs,
                new Timings(0, 0, 0));
    }

    /** Samples in a request: the leading dimension of its first input (at least 1). */
    static long samples(InferenceRequest request) {
        return request.inputs().isEmpty() ? 1 : Math.max(1, request.inputs().get(0).batchSize());
    }

    /** Zeros of every declared output, {@code samples} rows each; null if the model declares none. */
    static List<Tensor> zeros(ModelConfig config, long samples) {
        if (config.outputs().isEmpty()) {
            return null;
        }
        List<Tensor> out = new ArrayList<>();
        for (TensorSpec spec : config.outputs()) {
            long[] dims = spec.shape();
            long[] shape = new long[dims.length + 1];
            shape[0] = samples;
            long elements = samples;
            for (int i = 0; i < dims.length; i++) {
                shape[i + 1] = dims[i] < 0 ? 1 : dims[i];
                elements *= shape[i + 1];
            }
            DataType type = spec.datatype();
            // a BYTES element is a 4-byte length (0 here) and no bytes
            int size = type.isFixedSize() ? type.elementSize() : 4;
            out.add(new Tensor(spec.name(), type, shape, new byte[Math.toIntExact(elements * size)]));
        }
        return out;
    }
}
