package io.flinkgpu.bench.scenario;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/** One workload: a model, real (or stated synthetic) inputs, and the SLO it is judged by. */
public interface Scenario {
    /** Short name used in file names and on the command line. */
    String name();

    /** The model's name in the generated repository. */
    String model();

    /** p99 latency bound, end to end (request produced to Kafka -> response consumed). */
    double sloMs();

    /** Why the SLO is what it is. */
    String sloRationale();

    /** What the model and inputs are, honestly (random weights, synthetic ids, ...). */
    String description();

    /** Lowest rate of the sweep grid. */
    double startRate();

    /** Writes {@code <repo>/<model>/config.json} and {@code <repo>/<model>/1/model.onnx}. */
    void prepare(Path repo) throws Exception;

    /** How many distinct samples the scenario cycles through. */
    int samples();

    /** The inputs of one sample, each with batch dimension 1. */
    List<Tensor> inputs(int sample);

    /**
     * Classes of samples whose latencies are reported apart (e.g. sequence-length buckets, whose
     * service times differ several-fold); empty for none.
     */
    default List<String> sampleClasses() {
        return List.of();
    }

    /** The class (index into {@link #sampleClasses}) of a sample, or -1. */
    default int sampleClass(int sample) {
        return -1;
    }

    /** The classes of request {@code seq} of a run ({@link #request(String, long)}'s sample). */
    default io.flinkgpu.bench.load.RequestClasses requestClasses() {
        List<String> names = sampleClasses();
        return names.isEmpty() ? io.flinkgpu.bench.load.RequestClasses.NONE
                : new io.flinkgpu.bench.load.RequestClasses(names, seq -> sampleClass(seq % samples()));
    }

    /** Facts for the result file (model size, data source, ...). */
    Map<String, Object> facts();

    /** Request {@code seq} of a run: the scenario's samples in turn, to its model, with default parameters. */
    default InferenceRequest request(String id, long seq) {
        return request(id, seq, model(), RequestParameters.DEFAULTS);
    }

    /**
     * Request {@code seq} of a run to {@code model} (e.g. a copy of the scenario's network under
     * another name) with {@code parameters} (priority, tenant).
     */
    default InferenceRequest request(String id, long seq, String model, RequestParameters parameters) {
        return new InferenceRequest(id, model, null, inputs((int) (seq % samples())), parameters);
    }

    default Path modelFile(Path repo) {
        return repo.resolve(model()).resolve("1").resolve("model.onnx");
    }
}
