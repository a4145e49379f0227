package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.streaming.api.operators.AbstractStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.streaming.api.operators.StreamOperatorParameters;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/** What the operator does with requests it must refuse, records that throw, and batches that fail. */
class AdmissionOperatorTest {
    static final String REPO = "src/test/resources/models";

    private static OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse> harness(
            GpuInference inference) throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new GpuInferenceOperatorFactory(inference.settings()),
                InferenceTypes.REQUEST.createSerializer(null));
    }

    private static InferenceRequest affine(String id, int samples) {
        return new InferenceRequest(id, "affine-fp32", null,
                List.of(Tensor.ofFloats("x", new long[] {samples, 4}, new float[samples * 4])),
                RequestParameters.DEFAULTS.withOrigin("requests/0@" + id.hashCode()));
    }

    private static InferenceRequest tokens(String id, long... ids) {
        return new InferenceRequest(id, "embedding-int64", null,
                List.of(Tensor.ofLongs("input_ids", new long[] {1, ids.length}, ids)), RequestParameters.DEFAULTS);
    }

    private static Map<String, InferenceResponse> byId(List<InferenceResponse> responses) {
        return responses.stream().collect(Collectors.toMap(InferenceResponse::id, r -> r));
    }

    private static List<RefusedRequest> refused(OneInputStreamOperatorTestHarness<?, ?> h) {
        List<RefusedRequest> out = new ArrayList<>();
        var queue = h.getSideOutput(GpuInference.REFUSED);
        if (queue != null) {
            queue.forEach(r -> out.add(r.getValue()));
        }
        return out;
    }

    @Test
    void aRequestOverTheOperatorsBatchLimitButWithinTheModelsIsRefusedAndTheOperatorServesOn() throws Exception {
        // affine-fp32 allows 16 samples; the operator batches at most 8
        GpuInference inference = GpuInference.builder().modelRepository(REPO).maxBatchSize(8).build();
        Map<String, InferenceResponse> out;
        List<RefusedRequest> refused;
        try (var h = harness(inference)) {
            h.open();
            h.processElement(new StreamRecord<>(affine("too-big", 12)));
            h.processElement(new StreamRecord<>(affine("fits", 8)));
            h.endInput();
            out = byId(h.extractOutputValues());
            refused = refused(h);
        }
        assertThat(out).hasSize(2);
        assertThat(out.get("too-big").error().code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
        assertThat(out.get("too-big").error().message()).contains("inference.batching.max-batch-size").contains("8");
        assertThat(out.get("fits").isError()).isFalse();
        assertThat(refused).singleElement().satisfies(r -> {
            assertThat(r.code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
            assertThat(r.requestId()).isEqualTo("too-big");
            assertThat(r.origin()).isEqualTo("requests/0@" + "too-big".hashCode());
            assertThat(CodecSerializer.CODEC.decodeRequest(r.request()).id()).isEqualTo("too-big");
        });
    }

    @Test
    void anUnknownModelIsAnsweredAndRefusedWhileValidRequestsAreServed() throws Exception {
        GpuInference inference = GpuInference.builder().modelRepository(REPO).maxBatchSize(16)
                .maxQueueDelay(Duration.ofHours(1)).executionThreads(1).build();
        try (var h = harness(inference)) {
            h.open();
            h.processElement(new StreamRecord<>(tokens("unknown-model-free", 1, 2)));
            h.processElement(new StreamRecord<>(new InferenceRequest("ghost", "no-such-model", null,
                    List.of(Tensor.ofLongs("input_ids", new long[] {1, 1}, 1)), RequestParameters.DEFAULTS)));
            h.endInput();
            Map<String, InferenceResponse> out = byId(h.extractOutputValues());
            assertThat(out.get("ghost").error().code()).isEqualTo(ErrorCode.UNKNOWN_MODEL);
            assertThat(out.get("unknown-model-free").isError()).isFalse();
            assertThat(refused(h)).extracting(RefusedRequest::requestId).containsExactly("ghost");
        }
    }

    @Test
    void aPoisonRequestFailsAloneAndTheRestOfItsBatchIsAnswered() throws Exception {
        GpuInference inference = GpuInference.builder().modelRepository(REPO).maxBatchSize(16)
                .maxQueueDelay(Duration.ofHours(1)).build();
        Map<String, InferenceResponse> out;
        try (var h = harness(inference)) {
            h.open();
            for (int i = 0; i < 8; i++) {
                h.processElement(new StreamRecord<>(tokens("t" + i, i, 15 - i, i == 6 ? 99 : 3)));
            }
            h.endInput();
            out = byId(h.extractOutputValues());
        }
        assertThat(out).hasSize(8);
        assertThat(out.get("t6").error().code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
        assertThat(out.get("t6").error().message()).contains("out of data bounds");
        assertThat(out.get("t6").timings().batchSize()).as("the poison shared a batch").isGreaterThan(1);
        out.forEach((id, r) -> {
            if (!id.equals("t6")) {
                assertThat(r.isError()).as(id).isFalse();
                assertThat(r.outputs()).singleElement().satisfies(t -> assertThat(t.shape()).containsExactly(1, 4));
            }
        });
    }

    @Test
    void anExceptionWhileHandlingOneRecordIsAnsweredAsInternalAndTheOperatorGoesOn() throws Exception {
        GpuInference inference = GpuInference.builder().modelRepository(REPO).maxBatchSize(8).build();
        Map<String, InferenceResponse> out;
        List<RefusedRequest> refused;
        try (var h = new OneInputStreamOperatorTestHarness<>(new FaultyAdmissionFactory(inference.settings()),
                InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            h.processElement(new StreamRecord<>(affine("boom", 1)));
            h.processElement(new StreamRecord<>(affine("fine", 1)));
            h.endInput();
            out = byId(h.extractOutputValues());
            refused = refused(h);
        }
        assertThat(out.get("boom").error().code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(out.get("boom").error().message()).contains(IllegalStateException.class.getName())
                .contains("injected");
        assertThat(out.get("fine").isError()).isFalse();
        assertThat(refused).singleElement().satisfies(r -> {
            assertThat(r.code()).isEqualTo(ErrorCode.INTERNAL);
            assertThat(r.reason()).contains("injected");
        });
    }

    /** An operator whose admission throws for requests named "boom": a stand-in for any bug a record trips. */
    static final class FaultyAdmissionFactory extends AbstractStreamOperatorFactory<InferenceResponse>
            implements OneInputStreamOperatorFactory<InferenceRequest, InferenceResponse> {
        private final InferenceSettings settings;

        FaultyAdmissionFactory(InferenceSettings settings) {
            this.settings = settings;
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T extends StreamOperator<InferenceResponse>> T createStreamOperator(
                StreamOperatorParameters<InferenceResponse> parameters) {
            return (T) new GpuInferenceOperator(parameters, settings) {
                @Override
                protected void accept(InferenceRequest request) {
                    if (request.id().equals("boom")) {
                        throw new IllegalStateException("injected fault for " + request.id());
                    }
                    super.accept(request);
                }
            };
        }

        @Override
        @SuppressWarnings("rawtypes")
        public Class<? extends StreamOperator> getStreamOperatorClass(ClassLoader classLoader) {
            return GpuInferenceOperator.class;
        }
    }
}
