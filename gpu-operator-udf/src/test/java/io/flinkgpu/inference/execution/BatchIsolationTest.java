package io.flinkgpu.inference.execution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.DeviceLostException;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Batch failure isolation with a real embedding model and a real poison input: a token id
 * outside the vocabulary makes ONNX Runtime's Gather fail the whole batch.
 */
class BatchIsolationTest {
    private static final long POISON = 99;
    private static OnnxModel model;

    @BeforeAll
    static void load() throws Exception {
        model = OnnxModel.load(new ModelId("embedding-int64", "1"),
                Path.of("src/test/resources/models/embedding-int64/1/model.onnx"), new CpuDevice("cpu:0", 1L << 30, 1));
    }

    @AfterAll
    static void close() throws Exception {
        model.close();
    }

    private static List<InferenceRequest> requests(int n, Set<Integer> poisoned) {
        List<InferenceRequest> requests = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            long[] ids = {i % 16, (i * 7) % 16, poisoned.contains(i) ? POISON : (i * 3) % 16};
            requests.add(new InferenceRequest("r" + i, "embedding-int64", "1",
                    List.of(Tensor.ofLongs("input_ids", new long[] {1, 3}, ids)), RequestParameters.DEFAULTS));
        }
        return requests;
    }

    private record Result(boolean whole, List<List<Tensor>> outputs, InferenceError[] errors, int runs,
            int culprits, int extraRuns) {}

    private static Result run(List<InferenceRequest> requests, int maxCulprits, BatchIsolation.Runner runner)
            throws Exception {
        AtomicInteger runs = new AtomicInteger();
        int[] reported = {-1, -1};
        List<List<Tensor>> outputs = new ArrayList<>(Collections.nCopies(requests.size(), null));
        InferenceError[] errors = new InferenceError[requests.size()];
        boolean whole = new BatchIsolation(r -> {
            runs.incrementAndGet();
            return runner.run(r);
        }, maxCulprits).run(requests, outputs, errors, (c, x) -> {
            reported[0] = c;
            reported[1] = x;
        });
        return new Result(whole, outputs, errors, runs.get(), reported[0], reported[1]);
    }

    @Test
    void aBatchWithoutPoisonRunsOnce() throws Exception {
        Result r = run(requests(16, Set.of()), 2, model::run);
        assertThat(r.whole()).isTrue();
        assertThat(r.runs()).isEqualTo(1);
        assertThat(r.errors()).containsOnlyNulls();
    }

    @Test
    void innocentRequestsOfAFailedBatchGetTheirOutputsAndOnlyThePoisonFails() throws Exception {
        List<InferenceRequest> requests = requests(16, Set.of(5));
        Result r = run(requests, 2, model::run);

        assertThat(r.whole()).isFalse();
        for (int i = 0; i < requests.size(); i++) {
            if (i == 5) {
                assertThat(r.errors()[i].code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
                assertThat(r.errors()[i].message()).contains("fails alone").contains("out of data bounds");
                assertThat(r.outputs().get(i)).isNull();
            } else {
                assertThat(r.errors()[i]).as("request %d", i).isNull();
                assertThat(r.outputs().get(i)).isEqualTo(model.run(List.of(requests.get(i))).get(0));
            }
        }
        // one culprit in 16: two runs per level of a 4-level bisection
        assertThat(r.culprits()).isEqualTo(1);
        assertThat(r.extraRuns()).isEqualTo(r.runs() - 1).isLessThanOrEqualTo(2 * 4);
    }

    @Test
    void twoCulpritsAreBothIsolatedWithinTheBudget() throws Exception {
        List<InferenceRequest> requests = requests(32, Set.of(3, 20));
        Result r = run(requests, 2, model::run);

        for (int i = 0; i < requests.size(); i++) {
            assertThat(r.errors()[i] != null).as("request %d failed", i).isEqualTo(i == 3 || i == 20);
        }
        assertThat(r.culprits()).isEqualTo(2);
        assertThat(r.extraRuns()).isLessThanOrEqualTo(2 * 2 * 5);
    }

    @Test
    void aModelThatFailsEveryInputCostsTheBudgetNotTwiceTheBatch() throws Exception {
        List<InferenceRequest> requests = requests(64, Set.of());
        Result r = run(requests, 2, batch -> {
            throw new IllegalStateException("the model is broken");
        });

        assertThat(r.errors()).allSatisfy(e -> assertThat(e.code()).isEqualTo(ErrorCode.INFERENCE_FAILED));
        assertThat(r.extraRuns()).isEqualTo(new BatchIsolation(b -> List.of(), 2).budget(64)).isEqualTo(2 * 2 * 6);
        assertThat(r.errors()[63].message()).contains("not isolated").contains("inference.execution.max-isolated-culprits");
    }

    @Test
    void withoutIsolationTheWholeBatchFailsAfterOneRun() throws Exception {
        Result r = run(requests(8, Set.of(2)), 0, model::run);
        assertThat(r.runs()).isEqualTo(1);
        assertThat(r.errors()).allSatisfy(e -> assertThat(e.code()).isEqualTo(ErrorCode.INFERENCE_FAILED));
    }

    @Test
    void aLostDeviceIsNotIsolatedButThrown() {
        assertThatThrownBy(() -> run(requests(8, Set.of()), 2, batch -> {
            throw new DeviceLostException("gone");
        })).isInstanceOf(DeviceLostException.class);
    }

    @Test
    void aJvmErrorInsideAnExceptionIsNotIsolatedEither() {
        // e.g. a runtime that wraps an OutOfMemoryError of its worker: no request caused it, and bisecting
        // the batch would only run it again; it fails the caller, which fails the task
        AtomicInteger runs = new AtomicInteger();
        assertThatThrownBy(() -> run(requests(8, Set.of()), 2, batch -> {
            runs.incrementAndGet();
            throw new java.util.concurrent.ExecutionException(new OutOfMemoryError("Java heap space"));
        })).isInstanceOf(java.util.concurrent.ExecutionException.class);
        assertThat(runs).hasValue(1);
    }

    @Test
    void theOneRuleForWhatFailsATask() {
        assertThat(Faults.isInfrastructureFault(new DeviceLostException("gone"))).isTrue();
        assertThat(Faults.isInfrastructureFault(new RuntimeException("wrapped", new DeviceLostException("gone"))))
                .isTrue();
        assertThat(Faults.isInfrastructureFault(new OutOfMemoryError())).isTrue();
        assertThat(Faults.isInfrastructureFault(new IllegalStateException(new StackOverflowError()))).isTrue();
        assertThat(Faults.isInfrastructureFault(new ai.onnxruntime.OrtException("Gather: index out of range")))
                .isFalse();
        assertThat(Faults.isInfrastructureFault(new IllegalArgumentException("bad shape"))).isFalse();
        assertThat(Faults.isInfrastructureFault(null)).isFalse();
    }
}
