package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.VersionSplit;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import java.util.List;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.Test;

/** A subtask's comparison of shadow answers with served ones: either order, agreement within tolerance, never emitted. */
class ShadowComparatorTest {
    static final String MODEL = "m";

    static InferenceRequest served(String id) {
        return new InferenceRequest(id, MODEL, "1", List.of(Tensor.ofFloats("x", new long[] {1, 1}, 1)),
                RequestParameters.DEFAULTS);
    }

    static InferenceRequest shadow(String id) {
        return served(id).withVersion("2").withParameters(RequestParameters.DEFAULTS.withOrigin(PlanRouter.SHADOW_ORIGIN));
    }

    static InferenceResponse answer(String id, String version, float... logits) {
        return InferenceResponse.success(id, MODEL, version,
                List.of(Tensor.ofFloats("y", new long[] {1, logits.length}, logits)), Timings.NONE);
    }

    static ShadowComparator comparator(double fraction) {
        ShadowComparator c = new ShadowComparator(new UnregisteredMetricsGroup());
        c.update(ControlMessageCodec.encode(ControlMessage.of(1, 1, 1, List.of(), List.of(), "shadow")
                .withVersionSplits(List.of(new VersionSplit(MODEL, List.of(new VersionSplit.VersionWeight("1", 1)),
                        "shadow 1 -> 2", "2", fraction)))));
        return c;
    }

    @Test
    void shadowAnswersAreComparedWithTheServedOnesInEitherOrderAndNeverEmitted() {
        ShadowComparator c = comparator(1.0);
        // served first, then the shadow: equal within tolerance
        assertThat(c.answered(served("a"), answer("a", "1", 1f, 2f))).isTrue();
        assertThat(c.answered(shadow("a"), answer("a", "2", 1f, 2.00001f))).isFalse();
        // shadow first, then the served answer: they differ
        assertThat(c.answered(shadow("b"), answer("b", "2", 5f, 2f))).isFalse();
        assertThat(c.answered(served("b"), answer("b", "1", 1f, 2f))).isTrue();
        // the shadow failed where the served version answered: a disagreement
        c.answered(served("c"), answer("c", "1", 1f));
        c.answered(shadow("c"), InferenceResponse.failure("c", MODEL, "2",
                new InferenceError(ErrorCode.SHAPE_MISMATCH, "x"), Timings.NONE));
        assertThat(c.counts(MODEL, "2")).containsExactly(3, 2);
        assertThat(c.waiting()).isZero();
    }

    @Test
    void requestsOutsideTheShadowShareOrOfOtherModelsPassUntouched() {
        ShadowComparator c = comparator(0.5);
        int kept = 0;
        for (int i = 0; i < 200; i++) {
            assertThat(c.answered(served("r" + i), answer("r" + i, "1", 1f))).isTrue();
        }
        kept = c.waiting();
        // about half wait for a shadow twin, the rest were never shadowed
        assertThat(kept).isBetween(70, 130);
        InferenceRequest other = new InferenceRequest("o", "other", "1", List.of(), RequestParameters.DEFAULTS);
        assertThat(c.answered(other, answer("o", "1", 1f))).isTrue();
        assertThat(c.waiting()).isEqualTo(kept);
        // a plan without the split: nothing is shadowed any more
        c.update(ControlMessageCodec.encode(ControlMessage.of(2, 2, 1, List.of(), List.of(), "done")));
        assertThat(c.answered(served("later"), answer("later", "1", 1f))).isTrue();
        assertThat(c.waiting()).isEqualTo(kept);
    }
}
