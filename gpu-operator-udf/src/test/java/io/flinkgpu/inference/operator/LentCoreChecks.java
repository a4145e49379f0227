package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.util.List;

/**
 * What both runtimes, the operator and the shared SQL runtime, do with the core kept for the task,
 * checked on requests of slow-square (768^3 multiply-adds, milliseconds on one core) on the CPU
 * with inference.execution-threads unset.
 */
public final class LentCoreChecks {
    private LentCoreChecks() {}

    /**
     * {@code n} slow-square requests that arrive together, after one that taught the batcher the
     * model's run time: how much later each after the first started than the first, over the
     * first's run time, with the given inference.execution-threads.reserved-core-min-sample-time.
     */
    @FunctionalInterface
    public interface Starts {
        double[] of(String reservedCoreThreshold, int n) throws Exception;
    }

    /** A slow-square request: y = 768 x^2. */
    public static InferenceRequest request(String id, float x) {
        return new InferenceRequest(id, "slow-square", null, List.of(Tensor.ofFloats("x", new long[] {1, 1}, x)),
                RequestParameters.DEFAULTS);
    }

    /**
     * For answers of requests {@code x = 2, 3, ...} in order: how much later each after the first
     * started than the first, over the first's run time (and that the last ran: y = 768 x^2).
     */
    public static double[] starts(List<InferenceResponse> answers) {
        int n = answers.size();
        assertThat(answers).allSatisfy(r -> assertThat(r.isError()).as(r.id()).isFalse());
        assertThat(answers.get(n - 1).outputs().get(0).asFloats()).containsExactly(768f * (n + 1) * (n + 1));
        double[] starts = new double[n - 1];
        for (int i = 1; i < n; i++) {
            starts[i - 1] = (answers.get(i).timings().queueMs() - answers.get(0).timings().queueMs())
                    / answers.get(0).timings().inferenceMs();
        }
        return starts;
    }

    public static void check(Starts starts) throws Exception {
        boolean lendable = Runtime.getRuntime().availableProcessors() >= 2;
        // 1 ms per sample (the default) is far below slow-square's run: the second starts beside the
        // first where the machine has a core to lend, and after it where it has one core only
        double lent = starts.of("1 ms", 2)[0];
        if (lendable) {
            assertThat(lent).isLessThan(0.5);
        } else {
            assertThat(lent).isGreaterThan(0.5);
        }
        // a threshold slow-square's run does not reach: the second waits for the first on the one thread
        assertThat(starts.of("1 h", 2)[0]).isGreaterThan(0.5);
        // 0: any batch may take the core, still one batch on it: of three, the third waits
        double[] any = starts.of("0 ms", 3);
        if (lendable) {
            assertThat(any[0]).isLessThan(0.5);
        }
        assertThat(any[1]).isGreaterThan(0.5);
    }
}
