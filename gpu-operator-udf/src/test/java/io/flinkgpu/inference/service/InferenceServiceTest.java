package io.flinkgpu.inference.service;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.operator.InferenceSettings;
import io.flinkgpu.inference.operator.LentCoreChecks;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** The shared runtime: one per settings and device, batching concurrent callers, answering each request once. */
class InferenceServiceTest {
    static InferenceSettings settings(int maxBatch, Duration delay, int threads, String speed) {
        Configuration c = new Configuration();
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, "src/test/resources/models");
        c.set(GpuInferenceOptions.MAX_BATCH_SIZE, maxBatch);
        c.set(GpuInferenceOptions.MAX_QUEUE_DELAY, delay);
        c.set(GpuInferenceOptions.EXECUTION_THREADS, threads);
        c.set(GpuInferenceOptions.DEVICE_TYPE, "simulated");
        c.set(GpuInferenceOptions.SIMULATED_SPEED, speed);
        c.set(GpuInferenceOptions.REPOSITORY_POLL_INTERVAL, Duration.ZERO);
        return InferenceSettings.fromConfiguration(c);
    }

    static InferenceRequest echo(String id, float v) {
        return new InferenceRequest(id, "echo-fp32", null,
                List.of(Tensor.ofFloats("x", new long[] {1, 3}, v, v + 1, v + 2)), RequestParameters.DEFAULTS);
    }

    /** An echo request that times out {@code timeoutMs} after it arrives. */
    static InferenceRequest echoWithTimeout(String id, int timeoutMs) {
        return new InferenceRequest(id, "echo-fp32", null, List.of(Tensor.ofFloats("x", new long[] {1, 3}, 1, 2, 3)),
                new RequestParameters(0, timeoutMs, null, 0, null));
    }

    /**
     * {@code n} requests of slow-square (milliseconds of work on one core) submitted together to a
     * CPU runtime with execution-threads unset, after one taught the batcher the model's run time;
     * each one's start after the first's ({@link LentCoreChecks#starts}).
     */
    private static double[] startsOverRunTime(String reservedCoreThreshold, int n) throws Exception {
        Configuration c = Configuration.fromMap(java.util.Map.of(
                GpuInferenceOptions.RESERVED_CORE_MIN_SAMPLE_TIME.key(), reservedCoreThreshold));
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, "src/test/resources/models");
        c.set(GpuInferenceOptions.MAX_BATCH_SIZE, 1);
        c.set(GpuInferenceOptions.MAX_QUEUE_DELAY, Duration.ZERO);
        c.set(GpuInferenceOptions.DEVICE_TYPE, "cpu");
        c.set(GpuInferenceOptions.REPOSITORY_POLL_INTERVAL, Duration.ZERO);
        InferenceService service = InferenceService.acquire(InferenceSettings.fromConfiguration(c), 0);
        try {
            service.submit(LentCoreChecks.request("warm", 1), InferenceService.Listener.NONE).get(30, TimeUnit.SECONDS);
            List<CompletableFuture<InferenceResponse>> submitted = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                submitted.add(service.submit(LentCoreChecks.request("r" + i, i + 2), InferenceService.Listener.NONE));
            }
            List<InferenceResponse> out = new ArrayList<>();
            for (CompletableFuture<InferenceResponse> f : submitted) {
                out.add(f.get(30, TimeUnit.SECONDS));
            }
            return LentCoreChecks.starts(out);
        } finally {
            service.release();
        }
    }

    @Test
    void onTheCpuALongBatchTakesTheCoreKeptForTheTasksWhileTheThreadIsBusy() throws Exception {
        LentCoreChecks.check(InferenceServiceTest::startsOverRunTime);
        assertThat(InferenceService.openRuntimes()).isZero();
    }

    @Test
    void callersWithTheSameSettingsAndDeviceShareOneRuntimeUntilTheLastReleases() {
        InferenceSettings s = settings(8, Duration.ofMillis(2), 1, "1+0.1*b");
        InferenceService a = InferenceService.acquire(s, 0);
        InferenceService b = InferenceService.acquire(s, 0);
        InferenceService other = InferenceService.acquire(settings(4, Duration.ofMillis(2), 1, "1+0.1*b"), 0);
        assertThat(b).isSameAs(a);
        assertThat(other).isNotSameAs(a);
        assertThat(InferenceService.openRuntimes()).isEqualTo(2);
        a.release();
        assertThat(InferenceService.openRuntimes()).isEqualTo(2);
        b.release();
        other.release();
        assertThat(InferenceService.openRuntimes()).isZero();
    }

    @Property(tries = 12)
    void concurrentCallersMeetInBatchesAndEveryRequestIsAnsweredOnce(
            @ForAll @IntRange(min = 1, max = 16) int maxBatch, @ForAll @IntRange(min = 0, max = 10) int delayMs,
            @ForAll @IntRange(min = 1, max = 3) int threads, @ForAll @IntRange(min = 1, max = 4) int callers,
            @ForAll @IntRange(min = 1, max = 40) int perCaller) throws Exception {
        InferenceService service = InferenceService.acquire(settings(maxBatch, Duration.ofMillis(delayMs), threads,
                "5+0.1*b"), 0);
        ExecutorService pool = Executors.newFixedThreadPool(callers);
        try {
            List<CompletableFuture<List<CompletableFuture<InferenceResponse>>>> submitted = new ArrayList<>();
            for (int c = 0; c < callers; c++) {
                int caller = c;
                submitted.add(CompletableFuture.supplyAsync(() -> {
                    List<CompletableFuture<InferenceResponse>> mine = new ArrayList<>();
                    for (int i = 0; i < perCaller; i++) {
                        // Every seventh request is mis-shaped: it is answered with an error, never lost.
                        InferenceRequest r = i % 7 == 6
                                ? new InferenceRequest(caller + "-" + i, "echo-fp32", null,
                                        List.of(Tensor.ofFloats("x", new long[] {1, 2}, 1, 2)), RequestParameters.DEFAULTS)
                                : echo(caller + "-" + i, caller * 1000 + i);
                        mine.add(service.submit(r, InferenceService.Listener.NONE));
                    }
                    return mine;
                }, pool));
            }
            Set<String> answered = new HashSet<>();
            int total = 0;
            for (var f : submitted) {
                for (CompletableFuture<InferenceResponse> r : f.get(30, TimeUnit.SECONDS)) {
                    InferenceResponse response = r.get(30, TimeUnit.SECONDS);
                    assertThat(answered.add(response.id())).as("answered once: %s", response.id()).isTrue();
                    int i = Integer.parseInt(response.id().split("-")[1]);
                    if (i % 7 == 6) {
                        assertThat(response.error().code()).isEqualTo(ErrorCode.SHAPE_MISMATCH);
                    } else {
                        int caller = Integer.parseInt(response.id().split("-")[0]);
                        float v = caller * 1000 + i;
                        assertThat(response.outputs().get(0).asFloats()).containsExactly(v, v + 1, v + 2);
                    }
                    total++;
                }
            }
            assertThat(total).isEqualTo(callers * perCaller);
            long valid = (long) callers * perCaller - (long) callers * (perCaller / 7);
            assertThat(service.batchesRun()).isBetween((valid + maxBatch - 1) / maxBatch, valid);
            assertThat(service.queuedRequests()).isZero();
        } finally {
            pool.shutdownNow();
            service.release();
        }
        assertThat(InferenceService.openRuntimes()).isZero();
    }

    @Test
    void whileEveryExecutionThreadIsBusyTheQueueDelayTimerDoesNotSpin() throws Exception {
        // batch size 1, no queue delay: every queued request is due at once, but only one runs at a time
        InferenceService service = InferenceService.acquire(settings(1, Duration.ZERO, 1, "2+0.1*b"), 0);
        try {
            List<CompletableFuture<InferenceResponse>> futures = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                futures.add(service.submit(echo("t" + i, i), InferenceService.Listener.NONE));
            }
            for (CompletableFuture<InferenceResponse> f : futures) {
                assertThat(f.get(30, TimeUnit.SECONDS).isError()).isFalse();
            }
            assertThat(service.batchesRun()).isEqualTo(100);
            // completions dispatch the next batch; the timer has nothing to do (it spun thousands of times)
            assertThat(service.timerWakeups()).isLessThanOrEqualTo(100);
        } finally {
            service.release();
        }
    }

    @Test
    void requestsThatArriveTogetherShareABatch() throws Exception {
        InferenceService service = InferenceService.acquire(settings(16, Duration.ofMillis(50), 1, "20+0.1*b"), 0);
        try {
            List<CompletableFuture<InferenceResponse>> futures = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                futures.add(service.submit(echo("r" + i, i), InferenceService.Listener.NONE));
            }
            for (CompletableFuture<InferenceResponse> f : futures) {
                assertThat(f.get(10, TimeUnit.SECONDS).isError()).isFalse();
            }
            // SLO-aware sizing sends the first request of an idle model at once (no arrival rate yet);
            // the other 15, queued while it runs, share the next batch.
            assertThat(service.batchesRun()).isBetween(1L, 2L);
        } finally {
            service.release();
        }
    }

    @Test
    void aRequestWhoseDeadlinePassesInTheQueueIsAnsweredWithoutTheRuntimesLockHeld() throws Exception {
        // one thread, 300 ms per batch: the second request's 30 ms timeout passes while the first runs. Its
        // answer's callback asks the runtime something from another thread (as a caller's completion may):
        // with the runtime's lock held by the completing thread, that would wait for the callback to end.
        InferenceService service = InferenceService.acquire(settings(1, Duration.ZERO, 1, "300+0*b"), 0);
        ExecutorService other = Executors.newSingleThreadExecutor();
        try {
            CompletableFuture<InferenceResponse> first = service.submit(echo("slow", 1), InferenceService.Listener.NONE);
            InferenceRequest late = echoWithTimeout("late", 30);
            CompletableFuture<Boolean> askedFreely = service.submit(late, InferenceService.Listener.NONE)
                    .thenApply(response -> {
                        assertThat(response.error().code()).isEqualTo(ErrorCode.TIMEOUT);
                        try {
                            other.submit(service::batchesRun).get(2, TimeUnit.SECONDS);
                            return true;
                        } catch (java.util.concurrent.TimeoutException e) {
                            return false;
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
            assertThat(askedFreely.get(10, TimeUnit.SECONDS)).as("another thread could use the runtime").isTrue();
            assertThat(first.get(10, TimeUnit.SECONDS).isError()).isFalse();
        } finally {
            other.shutdownNow();
            service.release();
        }
    }

    @Test
    void aDeadlineThatPassesWhileEveryThreadIsBusyIsAnsweredAtTheDeadlineNotAtTheNextCompletion() throws Exception {
        // one thread, 2 s per batch: the second request's 50 ms timeout passes long before the first ends
        InferenceService service = InferenceService.acquire(settings(1, Duration.ZERO, 1, "2000+0*b"), 0);
        try {
            CompletableFuture<InferenceResponse> first = service.submit(echo("slow", 1), InferenceService.Listener.NONE);
            InferenceRequest late = echoWithTimeout("late", 50);
            CompletableFuture<Boolean> beforeTheFirst = service.submit(late, InferenceService.Listener.NONE)
                    .thenApply(response -> {
                        assertThat(response.error().code()).isEqualTo(ErrorCode.TIMEOUT);
                        return !first.isDone();
                    });
            assertThat(beforeTheFirst.get(10, TimeUnit.SECONDS)).as("answered while the first batch still ran")
                    .isTrue();
            assertThat(first.get(10, TimeUnit.SECONDS).isError()).isFalse();
        } finally {
            service.release();
        }
    }
}
