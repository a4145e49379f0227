package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's first command with {@code -Dlocal.args="--coordinator --traffic=shifting"}, started as
 * a user would (picocli, in this JVM): the local default with the scheduler coordinator running next
 * to its job on two simulated GPUs, and traffic that shifts between the two shipped models. While it
 * runs, the test checks from outside that the coordinator published a plan with routes and LOAD
 * commands on the control topic, that its admin API (with the printed token) reports an epoch and
 * placements, that the job applied the plan (the plan router's and the inference subtasks' control
 * metrics over Flink's REST API) without a failure on record; afterwards, that the summary showed
 * the control plane and both models' accuracy and that the coordinator's state folder is gone.
 */
class LocalCoordinatorEndToEndTest {
    static final String CONTROL = "inference-control";
    static final String CNN = "fashion-mnist-cnn";
    static final String MLP = "fashion-mnist-mlp";
    static final int DURATION_S = 40;

    static final Pattern BOOTSTRAP = Pattern.compile("^  Kafka bootstrap   (\\S+)\\s*$", Pattern.MULTILINE);
    static final Pattern COORDINATOR = Pattern.compile(
            "^  Coordinator       (http://127\\.0\\.0\\.1:\\d+)/api/status  \\(token (\\S+)\\)\\s*$", Pattern.MULTILINE);
    static final Pattern SUMMARY = Pattern.compile("\\[\\s*\\d+s\\] sent (\\d+) \\| answered (\\d+)");
    static final Pattern FINAL = Pattern.compile("^Answered (\\d+) of (\\d+) requests\\.$");
    static final Pattern PLAN_LINE = Pattern.compile("^ {9}plan {6}epoch (\\d+), published \\d+ s ago: ", Pattern.MULTILINE);
    static final Pattern PLACEMENT_LINE = Pattern.compile("^ {9}placement " + CNN + " -> sim:\\d", Pattern.MULTILINE);
    static final Pattern DEVICES_LINE = Pattern.compile(
            "^ {9}devices   sim:0 \\(simulated GPU\\) util (\\d+%|-).* \\| sim:1 \\(simulated GPU\\) util ", Pattern.MULTILINE);
    static final Pattern DECISION_LINE = Pattern.compile("^ {9}decision  [A-Z_]+ .*: .+", Pattern.MULTILINE);
    static final Pattern TRAFFIC_LINE = Pattern.compile("^ {9}traffic   " + CNN + " \\d+% \\(accuracy \\d+\\.\\d%\\) \\| "
            + MLP + " \\d+% \\(accuracy \\d+\\.\\d%\\)", Pattern.MULTILINE);

    static final ObjectMapper MAPPER = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void theLocalDefaultWithTheCoordinatorPublishesAndAppliesPlans() throws Exception {
        Set<Path> stateDirsBefore = coordinatorStateDirs();
        int webPort = StandaloneCluster.freePort();
        FlinkRest rest = FlinkRest.onLocalhost(webPort);
        long startNanos = System.nanoTime();
        LocalDefaultRun app = LocalDefaultRun.start("--coordinator", "--traffic=shifting", "--duration=" + DURATION_S,
                "--web-port=" + webPort, "--prometheus-port=0", "--interval=2");

        ControlMessage loadPlan = null;
        List<ControlMessage> plans = new ArrayList<>();
        JsonNode status = null;
        JsonNode placements = null;
        Map<String, Double> router = Map.of();
        Map<String, Double> inference = Map.of();
        try {
            String bootstrap = app.awaitLine(BOOTSTRAP, Duration.ofSeconds(60)).group(1);
            long bannerNanos = System.nanoTime();
            // Everything read from the running broker, coordinator and cluster is read before --duration ends them.
            long runDeadline = bannerNanos + TimeUnit.SECONDS.toNanos(DURATION_S - 2);
            Matcher coordinator = app.awaitLine(COORDINATOR, Duration.ofSeconds(5));
            String admin = coordinator.group(1);
            String token = coordinator.group(2);
            String jobId = rest.awaitOnlyRunningJob(Duration.ofSeconds(20));

            // the admin API wants the token
            assertThat(adminGet(admin, "/api/status", "wrong-" + token).statusCode()).isEqualTo(401);

            Properties p = new Properties();
            p.setProperty("bootstrap.servers", bootstrap);
            p.setProperty("group.id", "it-local-coordinator-" + UUID.randomUUID());
            p.setProperty("auto.offset.reset", "earliest");
            try (KafkaConsumer<byte[], byte[]> consumer =
                    new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                consumer.subscribe(List.of(CONTROL));
                while (System.nanoTime() < runDeadline) {
                    for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                        ControlMessage plan = decode(rec.value());
                        plans.add(plan);
                        if (loadPlan == null && !plan.routes().isEmpty() && plan.commands().stream()
                                .anyMatch(c -> c.action() == SubtaskCommand.Action.LOAD)) {
                            loadPlan = plan;
                        }
                    }
                    status = adminJson(admin, "/api/status", token);
                    placements = adminJson(admin, "/api/placements", token);
                    router = sums(rest, jobId, "Plan router", List.of(".control.plansApplied", ".control.planEpoch"));
                    inference = sums(rest, jobId, "GPU inference",
                            List.of(".gpu_inference.control.commandsApplied", ".gpu_inference.control.commandsFailed"));
                    if (loadPlan != null && status.path("epoch").asLong() >= 1 && placements.size() > 0
                            && router.getOrDefault(".control.plansApplied", 0.0) >= 1
                            && inference.getOrDefault(".gpu_inference.control.commandsApplied", 0.0) >= 1) {
                        break;
                    }
                    Thread.sleep(1000);
                }
            }
            System.out.printf("plan with LOAD after %.1f s of traffic%n", (System.nanoTime() - bannerNanos) / 1e9);

            // published: on the control topic, a valid plan with routes and LOAD commands
            assertThat(plans).as("plans on %s; output so far:%n%s", CONTROL, app.output()).isNotEmpty();
            assertThat(loadPlan).as("a plan with routes and LOAD commands among %s", plans).isNotNull();
            assertThat(loadPlan.epoch()).isGreaterThanOrEqualTo(1);
            assertThat(loadPlan.parallelism()).isEqualTo(2);
            // ... and through the admin API
            assertThat(status.path("epoch").asLong()).as("status %s", status).isGreaterThanOrEqualTo(1);
            assertThat(status.path("plansPublished").asLong()).as("status %s", status).isGreaterThanOrEqualTo(1);
            assertThat(placements.path(CNN).isArray() && placements.path(CNN).size() >= 1)
                    .as("placements (model -> devices) %s", placements).isTrue();
            assertThat(placements.path(CNN).get(0).asText()).as("placements %s", placements).startsWith("sim:");

            // applied: the plan router routes by it, an inference subtask carried out its LOAD
            assertThat(router.getOrDefault(".control.plansApplied", 0.0)).as("router %s", router)
                    .isGreaterThanOrEqualTo(1);
            assertThat(router.getOrDefault(".control.planEpoch", 0.0)).as("router %s", router)
                    .isGreaterThanOrEqualTo(2); // the summed epoch of the two router subtasks, each >= 1
            assertThat(inference.getOrDefault(".gpu_inference.control.commandsApplied", 0.0))
                    .as("inference %s", inference).isGreaterThanOrEqualTo(1);
            assertThat(inference.getOrDefault(".gpu_inference.control.commandsFailed", -1.0))
                    .as("inference %s", inference).isZero();

            // without a failure on record
            rest.assertRunningWithoutExceptions(jobId);
        } finally {
            app.join(Duration.ofSeconds(DURATION_S + 40));
        }
        long endNanos = System.nanoTime();
        assertThat(app.isAlive()).as("local default still running after its duration").isFalse();
        assertThat(app.exitCode()).as("exit code; output:%n%s", app.output()).isZero();

        String output = app.output();
        assertThat(SUMMARY.matcher(output).find()).as("summary lines in%n%s", output).isTrue();
        Matcher plan = PLAN_LINE.matcher(output);
        long highestEpoch = 0;
        while (plan.find()) {
            highestEpoch = Math.max(highestEpoch, Long.parseLong(plan.group(1)));
        }
        assertThat(highestEpoch).as("plan lines in%n%s", output).isGreaterThanOrEqualTo(1);
        assertThat(PLACEMENT_LINE.matcher(output).find()).as("placement lines in%n%s", output).isTrue();
        assertThat(DEVICES_LINE.matcher(output).find()).as("device lines in%n%s", output).isTrue();
        assertThat(DECISION_LINE.matcher(output).find()).as("decision lines in%n%s", output).isTrue();
        assertThat(TRAFFIC_LINE.matcher(output).find()).as("per-model traffic lines in%n%s", output).isTrue();
        List<String> lines = output.lines().map(String::strip).filter(l -> !l.isEmpty()).toList();
        assertThat(FINAL.matcher(lines.get(lines.size() - 1)).matches()).as("last line of%n%s", output).isTrue();

        // the coordinator's RocksDB folder was temporary
        assertThat(coordinatorStateDirs()).as("coordinator state folders left behind")
                .isSubsetOf(stateDirsBefore);
        System.out.printf("local default with the coordinator ran %.1f s in all; %d plans, epochs up to %d%n",
                (endNanos - startNanos) / 1e9, plans.size(), highestEpoch);
    }

    private static ControlMessage decode(byte[] value) {
        try {
            return ControlMessageCodec.decode(value);
        } catch (InvalidControlMessageException e) {
            throw new AssertionError("invalid control record " + new String(value, StandardCharsets.UTF_8), e);
        }
    }

    /**
     * The sum over the subtasks of the first vertex named like {@code vertexName} of each metric
     * whose id ends with one of {@code suffixes}; empty while the job is starting.
     */
    private static Map<String, Double> sums(FlinkRest rest, String jobId, String vertexName, List<String> suffixes)
            throws Exception {
        Map<String, Double> out = new TreeMap<>();
        Optional<JsonNode> vertex = rest.vertex(jobId, vertexName);
        if (vertex.isPresent()) {
            String vid = vertex.get().path("id").asText();
            int parallelism = vertex.get().path("parallelism").asInt();
            rest.subtaskMetrics(jobId, vid, parallelism, suffixes).values()
                    .forEach(subtask -> subtask.forEach((suffix, v) -> out.merge(suffix, v, Double::sum)));
        }
        return out;
    }

    private static HttpResponse<String> adminGet(String base, String path, String token) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10))
                .header("Authorization", "Bearer " + token).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode adminJson(String base, String path, String token) throws Exception {
        HttpResponse<String> r = adminGet(base, path, token);
        assertThat(r.statusCode()).as("GET %s: %s", path, r.body()).isEqualTo(200);
        return MAPPER.readTree(r.body());
    }

    private static Set<Path> coordinatorStateDirs() throws IOException {
        try (Stream<Path> s = Files.list(Path.of(System.getProperty("java.io.tmpdir")))) {
            return new HashSet<>(s.filter(p -> p.getFileName().toString().startsWith("flink-gpu-inference-coordinator"))
                    .toList());
        }
    }
}
