package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.admission.RequestAdmission;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.qos.BatchSizing;
import io.flinkgpu.inference.qos.SchedulingConfig;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** A request may shorten its model's default timeout, and extend it only where the config allows. */
class DeadlineTest {
    static final long NOW = 5_000_000_000L;
    static final long MS = 1_000_000;

    static InferenceRequest request(long timeoutMs, long deadlineEpochMs) {
        return new InferenceRequest("r", "m", "1", List.of(Tensor.ofFloats("x", new long[] {1, 1}, 1f)),
                new RequestParameters(0, timeoutMs, "t", deadlineEpochMs));
    }

    static SchedulingConfig timeout(long defaultMs, boolean override) {
        return new SchedulingConfig(1, 1, defaultMs, override, Map.of(), 0, BatchSizing.FIXED_DELAY, 0);
    }

    @Test
    void defaultTimeoutAppliesWhenTheRequestAsksNothing() {
        assertThat(RequestAdmission.deadlineNanos(request(0, 0), timeout(200, false), NOW)).isEqualTo(NOW + 200 * MS);
        assertThat(RequestAdmission.deadlineNanos(request(0, 0), timeout(0, false), NOW)).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void requestMayShortenButNotExtendTheDefault() {
        assertThat(RequestAdmission.deadlineNanos(request(50, 0), timeout(200, false), NOW)).isEqualTo(NOW + 50 * MS);
        assertThat(RequestAdmission.deadlineNanos(request(500, 0), timeout(200, false), NOW)).isEqualTo(NOW + 200 * MS);
    }

    @Test
    void configMayAllowExtendingTheDefault() {
        assertThat(RequestAdmission.deadlineNanos(request(500, 0), timeout(200, true), NOW)).isEqualTo(NOW + 500 * MS);
    }

    @Test
    void absoluteDeadlineCountsWhenEarlier() {
        long deadline = RequestAdmission.deadlineNanos(
                request(1000, System.currentTimeMillis() + 100), timeout(0, false), NOW);
        assertThat(deadline).isBetween(NOW + 50 * MS, NOW + 100 * MS);
    }
}
