package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The passthrough answers as the job would, in size, without running the model. */
class PassthroughTest {
    @Test
    void itsResponseHasTheSizeOfTheRealOneOnTheImageScenario(@TempDir Path repo) throws Exception {
        ImageScenario scenario = new ImageScenario(FashionMnist.findRoot());
        scenario.prepare(repo);
        BinaryCodec codec = new BinaryCodec();
        PerRecordInference real = new PerRecordInference(scenario.modelFile(repo).toString());
        real.open();
        try {
            ModelRepository models = ModelRepository.open(repo);
            for (int seq = 0; seq < 5; seq++) {
                InferenceRequest request = scenario.request("r1-" + seq, seq);
                byte[] ran = real.process(codec.encodeRequest(request)).f1;
                InferenceResponse passed = Passthrough.answer(models, request);
                assertThat(passed.isError()).as("%s", passed.error()).isFalse();
                assertThat(passed.id()).isEqualTo(request.id());
                Tensor logits = passed.output("logits");
                assertThat(logits.shape()).containsExactly(1, 10);
                assertThat(logits.asFloats()).containsOnly(0f);
                // Byte for byte the same size but for the timings, which the header writes as text
                // (the real ones vary from request to request by as much).
                InferenceResponse decoded = codec.decodeResponse(ran);
                assertThat(decoded.output("logits").shape()).containsExactly(logits.shape());
                assertThat(codec.encodeResponse(InferenceResponse.success(passed.id(), passed.modelName(),
                        passed.modelVersion(), passed.outputs(), decoded.timings()))).hasSameSizeAs(ran);
                assertThat(Math.abs(codec.encodeResponse(passed).length - ran.length)).isLessThanOrEqualTo(16);
            }
        } finally {
            real.close();
        }
    }

    @Test
    void everyDeclaredOutputGetsOneRowPerSample() {
        ModelConfig config = new ModelConfig("m", "onnxruntime_onnx", 8,
                List.of(new TensorSpec("x", DataType.FP32, new long[] {3}, null)),
                List.of(new TensorSpec("p", DataType.FP32, new long[] {1}, null),
                        new TensorSpec("ids", DataType.INT64, new long[] {2, -1}, null),
                        new TensorSpec("label", DataType.BYTES, new long[] {1}, null)),
                null, null, null, null, null, null, null, 0, null, null, null);
        List<Tensor> out = Passthrough.zeros(config, 4);
        assertThat(out).extracting(Tensor::name).containsExactly("p", "ids", "label");
        assertThat(out.get(0).shape()).containsExactly(4, 1);
        assertThat(out.get(0).data()).hasSize(16);
        assertThat(out.get(1).shape()).containsExactly(4, 2, 1); // a variable dimension is taken as 1
        assertThat(out.get(1).data()).hasSize(64);
        assertThat(out.get(2).asStrings()).containsExactly("", "", "", "");
    }

    @Test
    void anUnknownModelIsACodedErrorResponse(@TempDir Path repo) throws Exception {
        ImageScenario scenario = new ImageScenario(FashionMnist.findRoot());
        scenario.prepare(repo);
        ModelRepository models = ModelRepository.open(repo);
        InferenceRequest unknown = scenario.request("r1-0", 0, "no-such-model", RequestParameters.DEFAULTS);
        InferenceResponse answer = Passthrough.answer(models, unknown);
        assertThat(answer.isError()).isTrue();
        assertThat(answer.error().code()).isEqualTo(ErrorCode.UNKNOWN_MODEL);
        InferenceRequest badVersion = new InferenceRequest("r1-1", scenario.model(), "7", scenario.inputs(0),
                RequestParameters.DEFAULTS);
        assertThat(Passthrough.answer(models, badVersion).error().code()).isEqualTo(ErrorCode.UNKNOWN_VERSION);
    }
}
