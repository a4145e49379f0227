package io.flinkgpu.inference.cache;

import static io.flinkgpu.inference.cache.TestRepository.echoRequest;
import static io.flinkgpu.inference.cache.TestRepository.resolve;
import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.batching.Batch;
import io.flinkgpu.inference.batching.BatchKey;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** One batch on a leased model, as the operator and the shared runtime both run it, on a real ONNX model. */
class LeasedBatchTest {
    private static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(5_000_000_000L);
    private final List<int[]> isolations = new ArrayList<>();
    private ModelCache cache;

    private ModelCache cache() {
        cache = new ModelCache(new CpuDevice("cpu:0", 1L << 30, 1), ModelCacheSettings.DEFAULTS
                .withBackgroundEviction(false).withWarmupWorkers(0).withRoomWait(Duration.ZERO), now::get,
                new ModelCache.Listener() { });
        return cache;
    }

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
    }

    /** A clock that moves 3 ms between the run's two readings. */
    private long tick() {
        return now.getAndAdd(3_000_000L);
    }

    /** Runs {@code requests} as one batch dispatched at 10 ms, request i enqueued i + 0.5 ms before that. */
    private LeasedBatch.Outcome run(ModelRepository.ResolvedModel model, List<InferenceRequest> requests) {
        long dispatched = 10_000_000L;
        List<Batch.Queued<InferenceRequest>> entries = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            entries.add(new Batch.Queued<>(requests.get(i), 1, dispatched - (long) ((i + 0.5) * 1e6)));
        }
        Batch<InferenceRequest> batch = new Batch<>(new BatchKey(model.id(), ""), entries, requests.size(),
                Batch.CloseReason.FLUSH, dispatched);
        return LeasedBatch.run(cache(), model, batch, r -> r, dispatched, 4,
                (culprits, extraRuns) -> isolations.add(new int[] {culprits, extraRuns}), this::tick);
    }

    @Test
    void aWholeBatchAnswersEveryRequestInOrderWithItsTimings() {
        ModelRepository repo = new TestRepository(dir).echo("a", MIB, "1").open();
        LeasedBatch.Outcome out = run(resolve(repo, "a"), List.of(echoRequest("a", 1), echoRequest("a", 10)));

        assertThat(out.fatal()).isNull();
        assertThat(out.ranWhole()).isTrue();
        assertThat(out.elapsedNanos()).isEqualTo(3_000_000L);
        assertThat(out.inferenceMs()).isEqualTo(3.0);
        assertThat(out.serviceMs()).isEqualTo(3.0);
        assertThat(out.responses()).extracting(InferenceResponse::id).containsExactly("r-1.0", "r-10.0");
        assertThat(out.responses().get(1).outputs().get(0).asFloats()).containsExactly(10, 11, 12);
        assertThat(out.responses().get(1).modelVersion()).isEqualTo("1");
        assertThat(out.responses().get(1).timings().queueMs()).isEqualTo(1.5);
        assertThat(out.responses().get(1).timings().inferenceMs()).isEqualTo(3.0);
        assertThat(out.responses().get(1).timings().batchSize()).isEqualTo(2);
        assertThat(isolations).isEmpty();
    }

    @Test
    void aRequestThatFailsTheBatchIsAnsweredAloneAndTheOthersStillRun() {
        ModelRepository repo = new TestRepository(dir).echo("a", MIB, "1").open();
        InferenceRequest wrongShape = new InferenceRequest("bad", "a", null,
                List.of(Tensor.ofFloats("x", new long[] {1, 2}, 1, 2)), RequestParameters.DEFAULTS);
        LeasedBatch.Outcome out = run(resolve(repo, "a"), List.of(echoRequest("a", 1), wrongShape, echoRequest("a", 7)));

        assertThat(out.fatal()).isNull();
        assertThat(out.ranWhole()).as("the batch's time no longer measures one batch").isFalse();
        assertThat(out.responses()).hasSize(3);
        assertThat(out.responses().get(0).isError()).isFalse();
        assertThat(out.responses().get(2).outputs().get(0).asFloats()).containsExactly(7, 8, 9);
        assertThat(out.responses().get(1).isError()).isTrue();
        assertThat(out.responses().get(1).error().code()).isEqualTo(ErrorCode.INFERENCE_FAILED);
        assertThat(isolations).hasSize(1);
        assertThat(isolations.get(0)[0]).isEqualTo(1);
    }

    @Test
    void aModelThatCannotLoadAnswersEveryRequestModelLoadFailed() {
        ModelRepository repo = new TestRepository(dir).echo("a", MIB, "1").corrupt("a", "1").open();
        LeasedBatch.Outcome out = run(resolve(repo, "a"), List.of(echoRequest("a", 1), echoRequest("a", 2)));

        assertThat(out.fatal()).isNull();
        assertThat(out.ranWhole()).isFalse();
        assertThat(out.responses()).allSatisfy(r -> {
            assertThat(r.isError()).isTrue();
            assertThat(r.error().code()).isEqualTo(ErrorCode.MODEL_LOAD_FAILED);
        });
    }
}
