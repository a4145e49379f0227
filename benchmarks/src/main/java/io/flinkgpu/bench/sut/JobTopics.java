package io.flinkgpu.bench.sut;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.InferenceJobOptions;
import java.nio.file.Path;
import org.apache.flink.configuration.Configuration;

/** The Kafka topics and consumer group one run of a job under test reads and writes. */
public record JobTopics(String requests, String responses, String deadLetter, String group) {
    /** {@code <prefix>-requests}, {@code <prefix>-responses} and {@code <prefix>-dead-letter}, group {@code prefix}. */
    public static JobTopics prefixed(String prefix) {
        return new JobTopics(prefix + "-requests", prefix + "-responses", prefix + "-dead-letter", prefix);
    }

    /**
     * The job's options to read binary requests from these topics on {@code bootstrap} (from
     * {@code startingOffsets}) and its models from {@code repository}; the caller adds the rest.
     */
    public Configuration jobConfiguration(String bootstrap, String startingOffsets, Path repository) {
        Configuration c = new Configuration();
        c.set(InferenceJobOptions.BOOTSTRAP_SERVERS, bootstrap);
        c.set(InferenceJobOptions.REQUESTS_TOPIC, requests);
        c.set(InferenceJobOptions.RESPONSES_TOPIC, responses);
        c.set(InferenceJobOptions.DEAD_LETTER_TOPIC, deadLetter);
        c.set(InferenceJobOptions.GROUP_ID, group);
        c.set(InferenceJobOptions.STARTING_OFFSETS, startingOffsets);
        c.set(InferenceJobOptions.REQUESTS_FORMAT, WireFormat.BINARY);
        c.set(GpuInferenceOptions.MODEL_REPOSITORY, repository.toString());
        return c;
    }
}
