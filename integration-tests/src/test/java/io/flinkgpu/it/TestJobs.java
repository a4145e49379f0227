package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;

/** The inference job on the test MiniCluster against the in-process broker, with topics of its own. */
final class TestJobs {
    private TestJobs() {}

    /**
     * One TaskManager with {@code slots} slots whose REST API refreshes metrics every 300 ms, for
     * tests that read the operator's metrics the way the coordinator does.
     */
    static MiniClusterExtension miniClusterWithFreshMetrics(int slots) {
        return new MiniClusterExtension(() -> {
            Configuration c = new Configuration();
            c.set(MetricOptions.METRIC_FETCHER_UPDATE_INTERVAL, Duration.ofMillis(300));
            return new MiniClusterResourceConfiguration.Builder()
                    .setConfiguration(c)
                    .setNumberTaskManagers(1)
                    .setNumberSlotsPerTaskManager(slots)
                    .build();
        });
    }

    /** One TaskManager with two slots. */
    static MiniClusterExtension miniCluster() {
        return new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(2)
                .build());
    }

    /**
     * Creates {@code <prefix>-requests}, {@code -responses} and {@code -dead-letter} and returns the
     * job's configuration for them, reading from the earliest offset, serving {@code repository}.
     */
    static Configuration config(EmbeddedKafka kafka, String prefix, int partitions, Path repository) throws Exception {
        kafka.createTopics(partitions, requests(prefix), responses(prefix), deadLetters(prefix));
        return config(kafka.bootstrapServers(), prefix, repository);
    }

    /** The job's configuration for the topics {@code <prefix>-requests} etc. on {@code bootstrap}, created elsewhere. */
    static Configuration config(String bootstrap, String prefix, Path repository) {
        Configuration config = new Configuration();
        config.set(InferenceJobOptions.BOOTSTRAP_SERVERS, bootstrap);
        config.set(InferenceJobOptions.REQUESTS_TOPIC, requests(prefix));
        config.set(InferenceJobOptions.RESPONSES_TOPIC, responses(prefix));
        config.set(InferenceJobOptions.DEAD_LETTER_TOPIC, deadLetters(prefix));
        config.set(InferenceJobOptions.GROUP_ID, prefix);
        config.set(InferenceJobOptions.STARTING_OFFSETS, "earliest");
        config.set(GpuInferenceOptions.MODEL_REPOSITORY, repository.toString());
        return config;
    }

    /**
     * Copies model {@code model} (its config.json and version 1) from {@code models} into
     * {@code repo}, and writes {@code tenantsJson} as the repository's tenants.json unless null.
     */
    static void copyModel(Path models, String model, Path repo, String tenantsJson) throws java.io.IOException {
        Path source = models.resolve(model);
        java.nio.file.Files.createDirectories(repo.resolve(model).resolve("1"));
        java.nio.file.Files.copy(source.resolve("config.json"), repo.resolve(model).resolve("config.json"));
        java.nio.file.Files.copy(source.resolve("1").resolve("model.onnx"),
                repo.resolve(model).resolve("1").resolve("model.onnx"));
        if (tenantsJson != null) {
            java.nio.file.Files.writeString(repo.resolve("tenants.json"), tenantsJson);
        }
    }

    static String requests(String prefix) {
        return prefix + "-requests";
    }

    static String responses(String prefix) {
        return prefix + "-responses";
    }

    static String deadLetters(String prefix) {
        return prefix + "-dead-letter";
    }

    /** Submits the job to the test MiniCluster. */
    static JobClient start(Configuration config, int parallelism, String name) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        InferenceJob.build(env, config);
        return env.executeAsync(name);
    }

    /**
     * Requests {@code req-<from>} .. {@code req-<from + n - 1>} for {@code model}, JSON-encoded and keyed
     * by id, each with one image (request {@code i} the {@code i}-th, cycling through {@code images}).
     */
    static List<ProducerRecord<byte[], byte[]>> imageRequests(FashionMnist images, String model, int from, int n) {
        List<ProducerRecord<byte[], byte[]>> out = new ArrayList<>();
        JsonCodec codec = new JsonCodec();
        for (int i = from; i < from + n; i++) {
            InferenceRequest r = new InferenceRequest("req-" + i, model, null,
                    List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(i % images.size()))),
                    new RequestParameters(0, 0, "it"));
            out.add(new ProducerRecord<>("unused", r.id().getBytes(StandardCharsets.UTF_8), codec.encodeRequest(r)));
        }
        return out;
    }

    /**
     * Reads {@code topic} until {@code n} records arrived (see {@link KafkaTopics#read}) and asserts that
     * they are {@code n} JSON responses, none an error and no two to the same request.
     */
    static void assertAnsweredOnce(EmbeddedKafka kafka, String topic, int n, Duration timeout, Duration settle) {
        assertAnsweredOnce(kafka.clientProperties(), topic, n, timeout, settle);
    }

    /** As {@link #assertAnsweredOnce(EmbeddedKafka, String, int, Duration, Duration)}, reading with {@code client}. */
    static void assertAnsweredOnce(java.util.Properties client, String topic, int n, Duration timeout,
            Duration settle) {
        List<ConsumerRecord<byte[], byte[]>> out = KafkaTopics.read(client, topic, got -> got.size() >= n, timeout,
                settle);
        Map<String, InferenceResponse> byId = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : out) {
            InferenceResponse resp;
            try {
                resp = WireFormat.JSON.decodeResponse(r.value());
            } catch (Exception e) {
                throw new AssertionError(e);
            }
            assertThat(resp.isError()).as("%s", resp).isFalse();
            assertThat(byId.put(resp.id(), resp)).as("duplicate %s", resp.id()).isNull();
        }
        assertThat(byId).hasSize(n);
    }
}
