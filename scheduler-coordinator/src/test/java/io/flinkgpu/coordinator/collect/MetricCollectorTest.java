package io.flinkgpu.coordinator.collect;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The collector against the REST API of a real MiniCluster running the real inference operator. */
class MetricCollectorTest {
    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(() -> {
        Configuration c = new Configuration();
        c.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(300));
        return new MiniClusterResourceConfiguration.Builder()
                .setConfiguration(c)
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(3)
                .build();
    });

    static String restUrl() {
        Configuration c = FLINK.getClientConfiguration();
        return "http://" + c.get(RestOptions.ADDRESS) + ":" + c.get(RestOptions.PORT);
    }

    @Test
    void readsPerSubtaskDeviceAndModelMetricsOfTheRunningInferenceJob() throws Exception {
        JobClient job = InferenceJobFixture.start(StreamExecutionEnvironment.getExecutionEnvironment());
        try {
            MetricCollector collector = new MetricCollector(restUrl(), "", "GPU inference", Duration.ofSeconds(5),
                    Clock.systemUTC());
            MetricSnapshot snapshot = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            while (System.nanoTime() < deadline) {
                try {
                    snapshot = collector.collect();
                    // Flink's REST API may serve a fetch from before the load completed (loaded still 0)
                    if (snapshot.subtasks().stream().allMatch(s -> s.deviceId() != null
                            && s.models().stream().anyMatch(m -> m.requestsIn() > 0 && m.batches() > 0
                                    && m.loaded() == 1.0))) {
                        break;
                    }
                } catch (MetricSource.CollectException e) {
                    // the job is still starting
                }
                Thread.sleep(300);
            }
            assertThat(snapshot).isNotNull();
            assertThat(snapshot.jobId()).isEqualTo(job.getJobID().toString());
            assertThat(snapshot.parallelism()).isEqualTo(2);
            assertThat(snapshot.subtasks()).hasSize(2);
            assertThat(snapshot.subtasks()).extracting(SubtaskSample::deviceId)
                    .containsExactlyInAnyOrder("sim:0", "sim:1");
            for (SubtaskSample s : snapshot.subtasks()) {
                assertThat(s.memoryTotalBytes()).as("memory of %s", s.deviceId()).isEqualTo(8.0 * (1L << 30));
                assertThat(s.busyMsPerSecond()).isNotNaN();
                ModelSample m = s.models().stream().filter(x -> x.model().equals(InferenceJobFixture.MODEL))
                        .findFirst().orElseThrow();
                assertThat(m.version()).isEqualTo("1");
                assertThat(m.requestsIn()).isPositive();
                assertThat(m.batches()).isPositive();
                assertThat(m.batchSizeMean()).isGreaterThanOrEqualTo(1);
                assertThat(m.inferenceLatencyUsMean()).isPositive();
                // the operator's loaded gauge, through Flink's REST API: the model serves, so it is loaded
                assertThat(m.loaded()).isEqualTo(1.0);
                assertThat(m.reportsLoaded()).isTrue();
                assertThat(m.inferenceLatencyUsP99()).isGreaterThanOrEqualTo(m.inferenceLatencyUsMean());
                // what the rollout engine compares versions by
                assertThat(m.serviceLatencyUsP99()).isPositive();
                assertThat(m.errors()).isZero();
                // the batcher's cap, which the demand evaluator prices a busy model's requests at
                assertThat(m.batchCap()).isGreaterThanOrEqualTo(1);
            }
            // counters grow between collections (Flink's REST serves its last fetch and fetches anew in
            // the background, so a value may be one fetch behind)
            double before = snapshot.subtasks().get(0).models().get(0).requestsIn();
            double after = before;
            long until = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (after <= before && System.nanoTime() < until) {
                Thread.sleep(500);
                after = collector.collect().subtasks().get(0).models().get(0).requestsIn();
            }
            assertThat(after).isGreaterThan(before);
        } finally {
            job.cancel().get();
        }
    }

    @Test
    void planDryRunPrintsThePlanItWouldPublishForTheRunningJob() throws Exception {
        JobClient job = InferenceJobFixture.start(StreamExecutionEnvironment.getExecutionEnvironment());
        try {
            Configuration config = new Configuration();
            config.set(io.flinkgpu.coordinator.CoordinatorOptions.REST_URL, restUrl());
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            java.io.PrintStream out = new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8);
            int rc = 1;
            long deadline = System.nanoTime() + Duration.ofSeconds(40).toNanos();
            // until the job has served requests and both of the dry run's collections had its per-model
            // metrics (they appear with the first requests; a model first seen in the second has no rate yet)
            while (System.nanoTime() < deadline && (rc != 0
                    || !bytes.toString(java.nio.charset.StandardCharsets.UTF_8).contains("\"routes\" : [ {")
                    || !bytes.toString(java.nio.charset.StandardCharsets.UTF_8).contains("# DEMAND fashion-mnist-cnn: rate"))) {
                bytes.reset();
                rc = io.flinkgpu.coordinator.service.CoordinatorMainAccess.dryRun(config, Duration.ofSeconds(2), out);
            }
            String printed = bytes.toString(java.nio.charset.StandardCharsets.UTF_8);
            assertThat(rc).as(printed).isZero();
            assertThat(printed).contains("\"schema_version\" : 1", "\"epoch\" : 1", "\"model\" : \"fashion-mnist-cnn\"",
                    "\"parallelism\" : 2", "# DEMAND fashion-mnist-cnn: rate", "device-s/s");
            // light traffic: one instance suffices, wherever the job's rebalance had spread it
            io.flinkgpu.contract.control.ControlMessage plan = io.flinkgpu.contract.control.ControlMessageCodec.decode(
                    printed.substring(0, printed.indexOf("\n# ")).getBytes(java.nio.charset.StandardCharsets.UTF_8));
            assertThat(plan.route(InferenceJobFixture.MODEL).orElseThrow().targets()).hasSize(1);
        } finally {
            job.cancel().get();
        }
    }

    @Test
    void saysWhyWhenThereIsNoInferenceJob() {
        MetricCollector collector = new MetricCollector(restUrl(), "", "no such operator", Duration.ofSeconds(5),
                Clock.systemUTC());
        assertThatThrownBy(collector::collect).isInstanceOf(MetricSource.CollectException.class)
                .hasMessageContaining("no running job with a vertex named like 'no such operator'");
        MetricCollector unreachable = new MetricCollector("http://127.0.0.1:1", "", "GPU inference",
                Duration.ofSeconds(2), Clock.systemUTC());
        assertThatThrownBy(unreachable::collect).isInstanceOf(MetricSource.CollectException.class)
                .hasMessageContaining("failed");
    }

    @Test
    void parsesMetricNamesAsTheOperatorRegistersThem() {
        Map<String, Double> values = new TreeMap<>();
        values.put("GPU_inference.gpu_inference.device.sim_1.memoryTotalBytes", 100.0);
        values.put("GPU_inference.gpu_inference.device.sim_1.utilization", 0.5);
        values.put("GPU_inference.gpu_inference.model.my.model.version.3.requestsIn", 42.0);
        values.put("GPU_inference.gpu_inference.model.my.model.version.3.batchSize_mean", 4.0);
        values.put("GPU_inference.gpu_inference.model.my.model.version.3.loaded", 1.0);
        values.put("GPU_inference.gpu_inference.model.my.model.version.3.batchCap", 32.0);
        values.put("GPU_inference.gpu_inference.queuedRequests", 7.0);
        values.put("busyTimeMsPerSecond", 250.0);
        SubtaskSample s = MetricCollector.subtask(1, values);
        assertThat(s.deviceId()).isEqualTo("sim:1");
        assertThat(s.memoryTotalBytes()).isEqualTo(100.0);
        assertThat(s.utilization()).isEqualTo(0.5);
        assertThat(s.queuedRequests()).isEqualTo(7.0);
        assertThat(s.busyMsPerSecond()).isEqualTo(250.0);
        assertThat(s.models()).singleElement().satisfies(m -> {
            assertThat(m.model()).isEqualTo("my.model");
            assertThat(m.version()).isEqualTo("3");
            assertThat(m.requestsIn()).isEqualTo(42.0);
            assertThat(m.batchSizeMean()).isEqualTo(4.0);
            assertThat(m.batches()).isNaN();
            assertThat(m.reportsLoaded()).isTrue();
            assertThat(m.errors()).isZero();
            assertThat(m.inferenceLatencyUsP99()).isNaN();
            assertThat(m.serviceLatencyUsP99()).isNaN();
            assertThat(m.batchCap()).isEqualTo(32.0);
        });
    }

    @Test
    void sumsAVersionsErrorCodesAndReadsItsLatencyPercentile() {
        Map<String, Double> values = new TreeMap<>();
        String v2 = "GPU_inference.gpu_inference.model.m.version.2.";
        values.put(v2 + "responsesOut", 50.0);
        values.put(v2 + "error.INVALID_INPUT.errors", 7.0);
        values.put(v2 + "error.INTERNAL.errors", 3.0);
        values.put(v2 + "inferenceLatencyUs_p99", 1234.0);
        values.put(v2 + "serviceLatencyUs_p99", 234.0);
        values.put(v2 + "tenant.shop.requestsIn", 50.0);
        values.put("GPU_inference.gpu_inference.model.m.version.1.responsesOut", 900.0);
        values.put("GPU_inference.gpu_inference.model.m.version.1.inferenceLatencyUs_p99", 1000.0);
        // the operator-wide error counters are not a version's
        values.put("GPU_inference.gpu_inference.error.INTERNAL.errors", 99.0);
        SubtaskSample s = MetricCollector.subtask(0, values);
        ModelSample one = s.models().stream().filter(m -> m.version().equals("1")).findFirst().orElseThrow();
        ModelSample two = s.models().stream().filter(m -> m.version().equals("2")).findFirst().orElseThrow();
        assertThat(one.errors()).isZero();
        assertThat(one.inferenceLatencyUsP99()).isEqualTo(1000.0);
        assertThat(two.errors()).isEqualTo(10.0);
        assertThat(two.responsesOut()).isEqualTo(50.0);
        assertThat(two.inferenceLatencyUsP99()).isEqualTo(1234.0);
        assertThat(two.serviceLatencyUsP99()).isEqualTo(234.0);
        assertThat(one.serviceLatencyUsP99()).as("not reported").isNaN();
        assertThat(two.tenantRequestsIn()).containsEntry("shop", 50.0);
    }
}
