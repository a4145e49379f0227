package io.flinkgpu.job.local;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.job.InferenceJob;
import io.flinkgpu.job.InferenceJobOptions;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.Callable;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * The embedded local default: an in-process Kafka broker, a local Flink cluster with its web UI,
 * the inference job on the shipped Fashion-MNIST model, real traffic, and a live summary.
 */
@Command(name = "local-default", mixinStandardHelpOptions = true,
        description = "Runs the inference job locally: embedded Kafka, Flink web UI, real traffic, live summary.")
public final class LocalDefault implements Callable<Integer> {
    @Option(names = "--duration", description = "Stop after this many seconds; 0 runs until Ctrl-C (default: ${DEFAULT-VALUE}).")
    long durationSeconds = 0;

    @Option(names = "--rate", description = "Requests per second to produce (default: ${DEFAULT-VALUE}).")
    double rate = 200;

    @Option(names = "--invalid-fraction", description = "Share of deliberately invalid records (default: ${DEFAULT-VALUE}).")
    double invalidFraction = 0.01;

    @Option(names = "--web-port", description = "Flink web UI / REST port (default: ${DEFAULT-VALUE}).")
    int webPort = 8081;

    @Option(names = "--prometheus-port", description = "Port of Flink's Prometheus reporter; 0 turns it off (default: ${DEFAULT-VALUE}).")
    int prometheusPort = 9249;

    @Option(names = "--parallelism", description = "Inference operator parallelism (default: ${DEFAULT-VALUE}).")
    int parallelism = 1;

    @Option(names = "--interval", description = "Seconds between summary lines (default: ${DEFAULT-VALUE}).")
    long intervalSeconds = 5;

    @Option(names = "--models", description = "Model repository (default: ${DEFAULT-VALUE} under the repository root).")
    String models = "models";

    @Option(names = "-D", description = "Any Flink or inference option, e.g. -Dinference.batching.max-batch-size=8")
    java.util.Map<String, String> flinkOptions = new java.util.HashMap<>();

    /** Where the start banner, the summary lines and the final count go. */
    private final PrintStream out;

    public LocalDefault() {
        this(System.out);
    }

    /** Prints the banner, the live summary and the final count to {@code out} instead of standard output. */
    public LocalDefault(PrintStream out) {
        this.out = Objects.requireNonNull(out, "out");
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new LocalDefault()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        Path root = FashionMnist.findRoot();
        FashionMnist data = FashionMnist.load(root);
        out.println("Starting the embedded Kafka broker (KRaft) ...");
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            Configuration config = Configuration.fromMap(flinkOptions);
            String requests = config.get(InferenceJobOptions.REQUESTS_TOPIC);
            String responses = config.get(InferenceJobOptions.RESPONSES_TOPIC);
            String deadLetter = config.get(InferenceJobOptions.DEAD_LETTER_TOPIC);
            kafka.createTopics(2, requests, responses, deadLetter);

            config.set(InferenceJobOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
            config.set(InferenceJobOptions.PARALLELISM, parallelism);
            config.set(GpuInferenceOptions.MODEL_REPOSITORY, root.resolve(models).toString());
            config.set(RestOptions.PORT, webPort);
            if (prometheusPort > 0) {
                config.setString("metrics.reporter.prom.factory.class",
                        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
                config.setString("metrics.reporter.prom.port", String.valueOf(prometheusPort));
            }
            Path checkpoints = Files.createTempDirectory("flink-gpu-inference-checkpoints");
            config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());

            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(config);
            env.setParallelism(parallelism);
            InferenceJob.build(env, config);
            JobClient job = env.executeAsync("flink-gpu-inference (local default)");

            out.println();
            out.println("  Flink web UI      http://localhost:" + webPort);
            if (prometheusPort > 0) {
                out.println("  Prometheus        http://localhost:" + prometheusPort + "/metrics");
            }
            out.println("  Kafka bootstrap   " + kafka.bootstrapServers());
            out.println("  Topics            requests: " + requests + "  responses: " + responses
                    + "  dead-letter: " + deadLetter);
            out.println("  Model             " + TrafficGenerator.MODEL + " from " + root.resolve(models));
            out.println("  Try it            kcat -b " + kafka.bootstrapServers() + " -C -t " + responses);
            out.println("  Traffic           " + rate + " req/s of Fashion-MNIST test images, "
                    + (invalidFraction * 100) + "% invalid records");
            out.println(durationSeconds > 0 ? "  Stops after " + durationSeconds + " s" : "  Ctrl-C stops it");
            out.println();

            TrafficGenerator traffic = new TrafficGenerator(kafka.bootstrapServers(), requests, data, rate,
                    invalidFraction);
            LiveSummary summary = new LiveSummary(kafka.bootstrapServers(), responses, deadLetter, traffic,
                    Duration.ofSeconds(intervalSeconds), out);
            Thread trafficThread = new Thread(traffic, "traffic");
            Thread summaryThread = new Thread(summary, "summary");
            trafficThread.start();
            summaryThread.start();
            Thread shutdown = new Thread(() -> stop(traffic, summary, summaryThread, job), "shutdown");
            Runtime.getRuntime().addShutdownHook(shutdown);

            if (durationSeconds > 0) {
                Thread.sleep(durationSeconds * 1000);
                Runtime.getRuntime().removeShutdownHook(shutdown);
                stop(traffic, summary, summaryThread, job);
                out.println("Answered " + summary.answered() + " of " + traffic.sent() + " requests.");
                return 0;
            }
            summaryThread.join();
            return 0;
        }
    }

    private static void stop(TrafficGenerator traffic, LiveSummary summary, Thread summaryThread, JobClient job) {
        traffic.close();
        try {
            Thread.sleep(1500); // let the last responses arrive
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        summary.close();
        try {
            summaryThread.join(5000);
            summary.closeConsumer();
            job.cancel().get();
        } catch (Exception e) {
            // shutting down anyway
        }
    }
}
