package io.flinkgpu.job;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.ParameterTool;

/**
 * Entry point for running the job on a Flink cluster ({@code flink run}). Options come from the
 * cluster's config.yaml and from {@code --key value} arguments, e.g.
 * {@code --inference.kafka.bootstrap-servers broker:9092}.
 */
public final class InferenceJobMain {
    private InferenceJobMain() {}

    public static void main(String[] args) throws Exception {
        Configuration config = ParameterTool.fromArgs(args).getConfiguration();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        InferenceJob.build(env, config);
        env.execute("flink-gpu-inference");
    }
}
