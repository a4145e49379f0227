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
 * the inference job on the shipped Fashion-MNIST model(s), real traffic, and a live summary. With
 * {@code --coordinator} the scheduler coordinator runs next to the job in this JVM (control topic,
 * two simulated GPUs, admin API) and the summary shows its plans and decisions.
 */
@Command(name = "local-default", mixinStandardHelpOptions = true,
        description = "Runs the inference job locally: embedded Kafka, Flink web UI, real traffic, live summary.")
public final class LocalDefault implements Callable<Integer> {
    /** The control topic when inference.kafka.control-topic is not set. */
    public static final String DEFAULT_CONTROL_TOPIC = "inference-control";
    /** Simulated GPUs (and inference subtasks) with --coordinator unless set otherwise. */
    static final int COORDINATOR_DEVICES = 2;

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

    @Option(names = "--parallelism", description = "Inference operator parallelism (default: 1; "
            + COORDINATOR_DEVICES + " with --coordinator).")
    Integer parallelism;

    @Option(names = "--interval", description = "Seconds between summary lines (default: ${DEFAULT-VALUE}).")
    long intervalSeconds = 5;

    @Option(names = "--models", description = "Model repository (default: ${DEFAULT-VALUE} under the repository root).")
    String models = "models";

    @Option(names = "--coordinator", description = "Also run the scheduler coordinator in this JVM: control topic, "
            + COORDINATOR_DEVICES + " simulated GPUs (unless -Dinference.device.* say otherwise), admin API; the "
            + "summary shows its plans. -Dcoordinator.*=... sets its options.")
    boolean coordinator;

    @Option(names = "--traffic", converter = TrafficGenerator.Mix.Converter.class,
            description = "steady: every request to " + TrafficGenerator.MODEL + "; shifting: "
                    + "half of --shift-period 90% to " + TrafficGenerator.MODEL + " and 10% to "
                    + TrafficGenerator.SECOND_MODEL + ", the other half the other way round (default: steady).")
    TrafficGenerator.Mix traffic = TrafficGenerator.Mix.STEADY;

    @Option(names = "--shift-period", description = "Seconds of one full period of --traffic=shifting (default: ${DEFAULT-VALUE}).")
    double shiftPeriodSeconds = 40;

    @Option(names = "-D", description = "Any Flink or inference option, e.g. -Dinference.batching.max-batch-size=8")
    java.util.Map<String, String> flinkOptions = new java.util.HashMap<>();

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

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
        if (rate <= 0 || shiftPeriodSeconds <= 0) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--rate and --shift-period must be positive");
        }
        Path root = FashionMnist.findRoot();
        FashionMnist data = FashionMnist.load(root);
        Path repository = root.resolve(models);
        for (String model : traffic.models()) {
            if (!Files.isDirectory(repository.resolve(model))) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--traffic=" + name(traffic)
                        + " needs the model " + model + " in " + repository);
            }
        }
        int inferenceParallelism = parallelism != null ? parallelism : coordinator ? COORDINATOR_DEVICES : 1;
        out.println("Starting the embedded Kafka broker (KRaft) ...");
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            Configuration config = Configuration.fromMap(flinkOptions);
            String requests = config.get(InferenceJobOptions.REQUESTS_TOPIC);
            String responses = config.get(InferenceJobOptions.RESPONSES_TOPIC);
            String deadLetter = config.get(InferenceJobOptions.DEAD_LETTER_TOPIC);
            // the traffic runs until stopped: each topic keeps its last 256 MiB per partition, not everything
            kafka.createTopics(2, EmbeddedKafka.BOUNDED_RETENTION, requests, responses, deadLetter);

            LocalCoordinator.JobSettings coordinated = null;
            if (coordinator) {
                // the control topic exists before the job starts: its source reads it from the first plan on
                coordinated = LocalCoordinator.configureJob(config, flinkOptions.keySet(), rate);
                kafka.createTopics(1, coordinated.controlTopic());
            }

            config.set(InferenceJobOptions.BOOTSTRAP_SERVERS, kafka.bootstrapServers());
            config.set(InferenceJobOptions.PARALLELISM, inferenceParallelism);
            config.set(GpuInferenceOptions.MODEL_REPOSITORY, repository.toString());
            config.set(RestOptions.PORT, webPort);
            if (prometheusPort > 0) {
                config.setString("metrics.reporter.prom.factory.class",
                        "org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
                config.setString("metrics.reporter.prom.port", String.valueOf(prometheusPort));
            }
            Path checkpoints = Files.createTempDirectory("flink-gpu-inference-checkpoints");
            config.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());

            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironmentWithWebUI(config);
            env.setParallelism(inferenceParallelism);
            InferenceJob.build(env, config);
            JobClient job = env.executeAsync("flink-gpu-inference (local default)");

            LocalCoordinator local = null;
            if (coordinated != null) {
                try {
                    String rest = "http://localhost:" + webPort;
                    LocalCoordinator.awaitTasksRunning(rest, job.getJobID().toString(), Duration.ofSeconds(60));
                    local = LocalCoordinator.start(coordinated, flinkOptions, rest, kafka.bootstrapServers(),
                            job.getJobID().toString());
                } catch (Exception e) {
                    job.cancel().get();
                    throw e;
                }
            }

            try {
                out.println();
                out.println("  Flink web UI      http://localhost:" + webPort);
                if (prometheusPort > 0) {
                    out.println("  Prometheus        http://localhost:" + prometheusPort + "/metrics");
                }
                out.println("  Kafka bootstrap   " + kafka.bootstrapServers());
                out.println("  Topics            requests: " + requests + "  responses: " + responses
                        + "  dead-letter: " + deadLetter + (local == null ? "" : "  control: " + coordinated.controlTopic()));
                out.println((traffic.models().size() == 1 ? "  Model             " : "  Models            ")
                        + String.join(", ", traffic.models()) + " from " + repository);
                if (local != null) {
                    out.println("  Coordinator       " + local.statusUrl() + "  (token " + local.token() + ")");
                    out.println("  Devices           " + coordinated.devices() + "; " + inferenceParallelism
                            + " inference subtasks; coordinator cycle every " + local.intervalSeconds() + " s");
                }
                out.println("  Try it            kcat -b " + kafka.bootstrapServers() + " -C -t " + responses);
                out.println("  Traffic           " + rate + " req/s of Fashion-MNIST test images, "
                        + (invalidFraction * 100) + "% invalid records" + (traffic == TrafficGenerator.Mix.SHIFTING
                                ? ", shifting every " + fmt(shiftPeriodSeconds / 2) + " s between "
                                        + Math.round(TrafficGenerator.HOT_SHARE * 100) + "% " + TrafficGenerator.MODEL
                                        + " and " + Math.round(TrafficGenerator.HOT_SHARE * 100) + "% "
                                        + TrafficGenerator.SECOND_MODEL
                                : ""));
                out.println(durationSeconds > 0 ? "  Stops after " + durationSeconds + " s" : "  Ctrl-C stops it");
                out.println();

                TrafficGenerator generator = new TrafficGenerator(kafka.bootstrapServers(), requests, data, rate,
                        invalidFraction, traffic, shiftPeriodSeconds);
                LiveSummary summary = new LiveSummary(kafka.bootstrapServers(), responses, deadLetter, generator,
                        Duration.ofSeconds(intervalSeconds), out, local == null ? null : new ControlPlaneView(local.service()));
                Thread trafficThread = new Thread(generator, "traffic");
                Thread summaryThread = new Thread(summary, "summary");
                trafficThread.start();
                summaryThread.start();
                LocalCoordinator coordinatorToStop = local;
                Thread shutdown = new Thread(() -> stop(generator, summary, summaryThread, job, coordinatorToStop),
                        "shutdown");
                Runtime.getRuntime().addShutdownHook(shutdown);

                if (durationSeconds > 0) {
                    Thread.sleep(durationSeconds * 1000);
                    Runtime.getRuntime().removeShutdownHook(shutdown);
                    stop(generator, summary, summaryThread, job, local);
                    out.println("Answered " + summary.answered() + " of " + generator.sent() + " requests.");
                    return 0;
                }
                summaryThread.join();
                return 0;
            } finally {
                if (local != null) {
                    local.close();
                }
            }
        }
    }

    private static String name(TrafficGenerator.Mix mix) {
        return mix.name().toLowerCase(java.util.Locale.ROOT);
    }

    private static String fmt(double seconds) {
        return seconds == Math.rint(seconds) ? String.valueOf((long) seconds) : String.valueOf(seconds);
    }

    private static void stop(TrafficGenerator traffic, LiveSummary summary, Thread summaryThread, JobClient job,
            LocalCoordinator coordinator) {
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
        } catch (Exception e) {
            // shutting down anyway
        }
        if (coordinator != null) {
            coordinator.close(); // before the job: no plan for a job that is going away
        }
        try {
            job.cancel().get();
        } catch (Exception e) {
            // shutting down anyway
        }
    }
}
