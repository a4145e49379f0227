package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * While every execution thread runs a batch, a batch's completion is what starts the next one: a
 * ready queue arms no timer then (one every millisecond would wake the timer thread and the mailbox
 * to start nothing), and a queued request whose deadline passes is still answered at its deadline,
 * not after the running batch. (Before, the first test found a timer armed, and the second one
 * hung: the harness's clock fired each timer, which armed the next at the same instant.)
 */
@Timeout(60)
class BusyDeviceTimerTest {
    private static final String MODEL = "affine-fp32";

    @TempDir
    Path repo;

    /** One execution thread on a simulated GPU whose every batch takes a second; batches of one. */
    private GpuInferenceOperatorFactory factory() throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Path source = Path.of("src/test/resources/models").resolve(MODEL);
        Files.copy(source.resolve("1/model.onnx"), dir.resolve("model.onnx"));
        Files.copy(source.resolve("config.json"), repo.resolve(MODEL).resolve("config.json"));
        GpuInference inference = GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(1)
                .maxQueueDelay(Duration.ZERO).maxEnqueuedBatches(100).executionThreads(1)
                .simulatedDevices(1, MemorySize.parse("64m"), "1000+0*b").build();
        return new GpuInferenceOperatorFactory(inference.settings());
    }

    private static StreamRecord<InferenceRequest> request(String id, long timeoutMs) {
        return new StreamRecord<>(new InferenceRequest(id, MODEL, null,
                List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)),
                new RequestParameters(0, timeoutMs, null, 0, null)));
    }

    /** Runs mails as they come until {@code n} answers are out (30 s at most); the answers by id. */
    private static Map<String, InferenceResponse> awaitAnswers(
            OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse> h, int n) throws Exception {
        Mailboxes.runUntil(h, () -> h.extractOutputValues().size() >= n);
        return h.extractOutputValues().stream().collect(Collectors.toMap(InferenceResponse::id, r -> r));
    }

    @Test
    void aReadyQueueArmsNoTimerWhileTheDeviceIsBusyAndRunsWhenTheBatchCompletes() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<>(factory(), InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            h.processElement(request("running", 0));
            h.processElement(request("ready", 0)); // a whole batch of one: ready at once, no thread free
            assertThat(h.getProcessingTimeService().getNumActiveTimers()).isZero();

            Map<String, InferenceResponse> out = awaitAnswers(h, 2);
            assertThat(out).containsOnlyKeys("running", "ready");
            assertThat(out.values()).allSatisfy(r -> assertThat(r.isError()).as(r.id()).isFalse());
            // "ready" started when "running" completed, not at a timer's poll: it waited about a batch
            assertThat(out.get("ready").timings().queueMs()).isGreaterThan(800);
        }
    }

    @Test
    void aDeadlineThatPassesWhileTheDeviceIsBusyIsAnsweredAtTheDeadline() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<>(factory(), InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            long started = System.nanoTime();
            h.processElement(request("running", 0));
            h.processElement(request("short-timeout", 50));
            // the only timer is the queued request's deadline
            assertThat(h.getProcessingTimeService().getNumActiveTimers()).isEqualTo(1);
            Thread.sleep(60);
            h.setProcessingTime(h.getProcessingTime() + 100); // the deadline's timer fires
            Mailboxes.runPending(h);

            Map<String, InferenceResponse> early = h.extractOutputValues().stream()
                    .collect(Collectors.toMap(InferenceResponse::id, r -> r));
            assertThat(early).as("answered %d ms after the running batch started (it takes 1000)",
                    (System.nanoTime() - started) / 1_000_000).containsOnlyKeys("short-timeout");
            assertThat(early.get("short-timeout").error().code()).isEqualTo(ErrorCode.TIMEOUT);
            assertThat(h.getProcessingTimeService().getNumActiveTimers()).isZero();

            Map<String, InferenceResponse> out = awaitAnswers(h, 2);
            assertThat(out.get("running").isError()).isFalse();
        }
    }
}
