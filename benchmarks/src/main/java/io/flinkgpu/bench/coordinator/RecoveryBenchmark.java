package io.flinkgpu.bench.coordinator;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.bench.report.ToolFiles;
import io.flinkgpu.bench.scenario.ImageScenario;
import io.flinkgpu.bench.scenario.ModelRepoWriter;
import io.flinkgpu.inference.operator.ModelPartitioner;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

/**
 * The scheduler coordinator's recovery from a load step, through the real path (in-process Kafka
 * broker, the Kafka job on a local Flink cluster with two simulated GPUs at parallelism 2, the
 * coordinator as a thread: REST collector, DRF planner, Kafka control topic, RocksDB state).
 *
 * <p>Two models (the shipped Fashion-MNIST CNN and a copy under another name, in a scratch
 * repository under {@code benchmarks/target/}) get open-loop Poisson traffic; each hashes to its own
 * subtask and so to its own device. Phase 1: steady load that one device carries within the SLO.
 * At t0 the first model's rate doubles, more than its device can carry. Phase 2 runs on at that
 * rate. Side by side, with the same traffic:
 *
 * <ul>
 *   <li><b>coordinator</b>: the job reads {@code inference.kafka.control-topic} and the coordinator
 *       runs a cycle every {@code --cycle-ms}, its collector built as {@code CoordinatorMain} builds it;
 *   <li><b>coordinator-no-settle</b>: the same with {@code coordinator.flink.metrics-settle} = 0, its
 *       collector before that option (reads race Flink's asynchronous REST metric fetch);
 *   <li><b>static</b>: the same job (same topology, control topic configured) with nothing
 *       published on it, so routing stays the default model hash: every model on one device.
 * </ul>
 *
 * Measured from the load generator: end-to-end latency (intended send time to response consumed)
 * per 1-second window of intended send time, p99 per window; the time from t0 to the first
 * published plan that adds an instance of (or moves) the stepped model; the time until the p99 is
 * back within the SLO for {@code --recovery-windows} consecutive windows; the coordinator's
 * REPLICATE/MOVE decisions; requests sent but never answered. Writes {@code recovery.json},
 * {@code recovery.md} and {@code recovery-p99.png} to {@code --out} and records the targets of
 * scenario "coordinator" in {@code --summary}. Numbers only come from the run.
 */
@Command(name = "recovery-benchmark", mixinStandardHelpOptions = true,
        description = "Coordinator vs static placement after a load step on one model")
public final class RecoveryBenchmark implements Callable<Integer> {
    static final String SOURCE_MODEL = "fashion-mnist-cnn";
    static final String STEPPED = "fashion-mnist-cnn";
    /** A copy of the same network under a name that hashes to the other subtask (see {@link ModelPartitioner}). */
    static final String STEADY = "fashion-mnist-cnn-b";
    static final int PARALLELISM = 2;
    /** The coordinator as shipped. */
    static final String COORDINATOR = "coordinator";
    /** The coordinator with {@code coordinator.flink.metrics-settle} = 0: its collector before that option existed. */
    static final String NO_SETTLE = "coordinator-no-settle";
    static final String STATIC = "static";

    @Mixin
    RecoveryOptions options = new RecoveryOptions();

    public static void main(String[] args) {
        System.exit(new CommandLine(new RecoveryBenchmark()).execute(args));
    }

    @Override
    public Integer call() throws Exception {
        ObjectMapper json = new ObjectMapper();
        Files.createDirectories(options.out);
        if (options.summaryOnly) {
            RecoveryTargets.record((ObjectNode) json.readTree(options.out.resolve("recovery.json").toFile()),
                    options.summary);
            return 0;
        }
        for (String c : options.configs) {
            if (!List.of(COORDINATOR, NO_SETTLE, STATIC).contains(c)) {
                throw new CommandLine.ParameterException(new CommandLine(this), "unknown configuration " + c
                        + "; use " + COORDINATOR + ", " + NO_SETTLE + " and/or " + STATIC);
            }
        }
        Path root = FashionMnist.findRoot();
        ImageScenario images = new ImageScenario(root);
        Path repository = writeRepository(root);
        ObjectNode result = json.createObjectNode();
        result.put("started", Instant.now().toString());
        result.put("command", options.command());
        result.put("git", ToolFiles.revision());
        result.put("machine", RecoveryReport.machine());
        List<RecoveryRun> runs = new ArrayList<>();
        try (EmbeddedKafka kafka = EmbeddedKafka.start()) {
            RecoveryRunner runner = new RecoveryRunner(options, kafka, repository,
                    root.resolve("benchmarks/target/recovery-state"), images);
            for (String c : options.configs) {
                System.out.println("=== " + c + " ===");
                runs.add(runner.run(c, !c.equals(STATIC), c.equals(NO_SETTLE) ? 0 : options.settleMs));
            }
        }
        result.put("finished", Instant.now().toString());
        new RecoveryReport(options).write(result, runs);
        RecoveryTargets.record(result, options.summary);
        return 0;
    }

    /** A scratch repository with the shipped CNN and, unless one model only, a copy under another name. */
    private Path writeRepository(Path root) throws IOException {
        Path repo = root.resolve("benchmarks/target/recovery-repo");
        CoordinatedJob.deleteRecursively(repo);
        for (String name : options.models()) {
            ModelRepoWriter.copy(root.resolve("models").resolve(SOURCE_MODEL), repo, name, true, config -> {});
        }
        return repo;
    }
}
