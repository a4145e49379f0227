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
     * model's run time: each one's start after the first's ({@link #starts}), with the given
     * inference.execution-threads.reserved-core-min-sample-time.
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
     * For answers of requests {@code x = 2, 3, ...} submitted together, in order: how much later each
     * after the first started than the first, over the time from the first's start until the
     * earliest end among the requests before it (for the second, the first's run time): about 0 for
     * one that started beside them, at least about 1 for one that waited for a slot, whatever their
     * run times on a busy machine. Also checks that every one ran (the last: y = 768 x^2).
     */
    public static double[] starts(List<InferenceResponse> answers) {
        int n = answers.size();
        assertThat(answers).allSatisfy(r -> assertThat(r.isError()).as(r.id()).isFalse());
        assertThat(answers.get(n - 1).outputs().get(0).asFloats()).containsExactly(768f * (n + 1) * (n + 1));
        double first = answers.get(0).timings().queueMs();
        double earliestEnd = Double.MAX_VALUE;
        double[] starts = new double[n - 1];
        for (int i = 1; i < n; i++) {
            var before = answers.get(i - 1).timings();
            earliestEnd = Math.min(earliestEnd, before.queueMs() + before.inferenceMs());
            starts[i - 1] = (answers.get(i).timings().queueMs() - first) / (earliestEnd - first);
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
        // 0: any batch may take the core, still one batch on it: of three, the third waits for one to end
        double[] any = starts.of("0 ms", 3);
        if (lendable) {
            assertThat(any[0]).isLessThan(0.5);
        }
        assertThat(any[1]).isGreaterThan(0.5);
    }
}
