package io.flinkgpu.it;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import io.flinkgpu.job.local.EmbeddedKafka;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MetricOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;

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
        Configuration config = new Configuration();
        config.set(InferenceJobOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
        config.set(InferenceJobOptions.REQUESTS_TOPIC, requests(prefix));
        config.set(InferenceJobOptions.RESPONSES_TOPIC, responses(prefix));
        config.set(InferenceJobOptions.DEAD_LETTER_TOPIC, deadLetters(prefix));
        config.set(InferenceJobOptions.GROUP_ID, prefix);
        config.set(InferenceJobOptions.STARTING_OFFSETS, "earliest");
        config.set(GpuInferenceOptions.MODEL_REPOSITORY, repository.toString());
        return config;
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
}
