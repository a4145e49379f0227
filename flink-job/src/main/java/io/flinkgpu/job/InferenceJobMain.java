package io.flinkgpu.job;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.ParameterTool;

/**
 * Entry point for running the job on a Flink cluster ({@code flink run}). Options come from the
 * cluster's config.yaml and from {@code --key value} arguments, e.g.
 * {@code --inference.kafka.bootstrap-servers broker:9092}; arguments win.
 */
public final class InferenceJobMain {
    private InferenceJobMain() {}

    public static void main(String[] args) throws Exception {
        Configuration arguments = ParameterTool.fromArgs(args).getConfiguration();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(arguments);
        // The environment's configuration is the cluster's (config.yaml and -D of the cluster, or of
        // the flink CLI) plus the arguments; the job reads its inference.* options from it, so they can
        // be set once per cluster and overridden per submission.
        Configuration config = Configuration.fromMap(env.getConfiguration().toMap());
        config.addAll(arguments);
        InferenceJob.build(env, config);
        env.execute("flink-gpu-inference");
    }
}
