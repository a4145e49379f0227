package io.flinkgpu.coordinator.collect;

import io.flinkgpu.inference.operator.GpuInference;
import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;

/**
 * A small job around the real inference operator (shipped Fashion-MNIST model, two simulated
 * GPUs, parallelism 2), fed at a few hundred requests per second, for tests that read its
 * metrics through the REST API. The coordinator's own code never depends on job code; this
 * fixture uses only the library.
 */
public final class InferenceJobFixture {
    public static final String MODEL = "fashion-mnist-cnn";

    private InferenceJobFixture() {}

    public static Path modelRepository() {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            Path models = p.resolve("models").resolve(MODEL);
            if (Files.isDirectory(models)) {
                return p.resolve("models");
            }
        }
        throw new IllegalStateException("models/" + MODEL + " not found above " + Path.of("").toAbsolutePath());
    }

    /** Starts the job; cancel the returned client to stop it. */
    public static JobClient start(StreamExecutionEnvironment env) throws Exception {
        Configuration config = new Configuration();
        config.set(GpuInferenceOptions.MODEL_REPOSITORY, modelRepository().toString());
        config.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        config.set(GpuInferenceOptions.SIMULATED_DEVICES, 2);
        env.setParallelism(2);
        DataStream<InferenceRequest> requests = env.fromSequence(0, Long.MAX_VALUE)
                .setParallelism(1)
                .map(new Paced())
                .setParallelism(1)
                .returns(InferenceTypes.REQUEST);
        DataStream<InferenceResponse> responses = GpuInference.builder().configuration(config).build()
                .apply(requests.rebalance());
        responses.sinkTo(new DiscardingSink<>());
        return env.executeAsync("coordinator-fixture");
    }

    /** About 500 requests per second. */
    static final class Paced implements MapFunction<Long, InferenceRequest> {
        private static final long serialVersionUID = 1L;

        @Override
        public InferenceRequest map(Long i) throws Exception {
            Thread.sleep(2);
            return new InferenceRequest("r" + i, MODEL, null,
                    List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, new float[784])),
                    new RequestParameters(0, 0, "test"));
        }
    }
}
