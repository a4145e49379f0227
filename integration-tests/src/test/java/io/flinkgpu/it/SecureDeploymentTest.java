package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.service.CoordinatorMain;
import io.flinkgpu.coordinator.service.CoordinatorService;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.local.FashionMnist;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.GlobalConfiguration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The secured deployment of docs/SECURITY.md as a user runs it: secrets made by
 * deploy/secure/make-secrets.sh, a standalone cluster from deploy/standalone, the job jar submitted
 * with the arguments of deploy/secure/job-args.sh, the coordinator started from the config.yaml of
 * deploy/secure/coordinator-config.sh, and a broker that authenticates (SASL) and authorizes
 * (ACLs) every client. Requests of a tenant's topic are served as that tenant, the coordinator's
 * signed plan is applied and a forged one refused, and the admin API answers over HTTPS to the
 * read token but refuses it a change.
 */
class SecureDeploymentTest {
    static final String MODEL = "fashion-mnist-cnn";
    static final String JOB_USER = "inference-job";
    static final String COORDINATOR_USER = "scheduler-coordinator";
    static final String SHOP = "shop";
    static final String SHOP_TOPIC = "sd-shop";
    static final String CONTROL = "sd-control";
    static final String PREFIX = "sd";

    @TempDir
    Path tmp;

    @Test
    void theDocumentedSecuredDeploymentServesSignsAndRefuses() throws Exception {
        Path root = FashionMnist.findRoot();
        FashionMnist images = FashionMnist.load(root);
        Path jar = MultiProcessClusterTest.jobJar(root);
        try (SecureKafka kafka = SecureKafka.start(JOB_USER, COORDINATOR_USER, SHOP)) {
            String requests = TestJobs.requests(PREFIX);
            String responses = TestJobs.responses(PREFIX);
            String deadLetters = TestJobs.deadLetters(PREFIX);
            kafka.createTopics(1, requests, responses, deadLetters, CONTROL, SHOP_TOPIC);
            List<AclBinding> acls = new ArrayList<>();
            for (String t : List.of(requests, SHOP_TOPIC, CONTROL)) {
                acls.addAll(SecureKafka.allowTopic(JOB_USER, t, AclOperation.READ));
            }
            acls.addAll(SecureKafka.allowGroups(JOB_USER, PREFIX));
            acls.addAll(SecureKafka.allowTopic(JOB_USER, responses, AclOperation.WRITE));
            acls.addAll(SecureKafka.allowTopic(JOB_USER, deadLetters, AclOperation.WRITE));
            acls.addAll(SecureKafka.allowTopic(COORDINATOR_USER, CONTROL, AclOperation.WRITE));
            acls.addAll(SecureKafka.allowTopic(SHOP, SHOP_TOPIC, AclOperation.WRITE));
            kafka.grant(acls);

            // the platform team's Kafka passwords first; make-secrets.sh keeps them and makes the rest
            Path secrets = tmp.resolve("secrets");
            Files.createDirectories(secrets);
            Files.writeString(secrets.resolve("kafka-job.properties"), "password=" + kafka.password(JOB_USER) + "\n");
            Files.writeString(secrets.resolve("kafka-coordinator.properties"),
                    "password=" + kafka.password(COORDINATOR_USER) + "\n");
            Map<String, String> env = new HashMap<>();
            env.put("KAFKA_BOOTSTRAP", kafka.bootstrapServers());
            env.put("KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT"); // the in-process broker has no TLS listener
            env.put("KAFKA_SASL_MECHANISM", "PLAIN");
            env.put("CONTROL_TOPIC", CONTROL);
            env.put("TENANT_TOPICS", SHOP_TOPIC + "=" + SHOP);
            env.put("REQUESTS_TOPIC", requests);
            env.put("RESPONSES_TOPIC", responses);
            env.put("DEAD_LETTER_TOPIC", deadLetters);
            env.put("GROUP_ID", PREFIX);
            script(root, env, "deploy/secure/make-secrets.sh", secrets.toString());
            assertThat(Files.readString(secrets.resolve("kafka-job.properties"))).contains(kafka.password(JOB_USER));
            List<String> jobArgs = new ArrayList<>(List.of(script(root, env, "deploy/secure/job-args.sh",
                    secrets.toString()).split("\n")));
            jobArgs.addAll(List.of("--inference.kafka.starting-offsets", "earliest",
                    "--inference.kafka.control-topic-discovery-interval", "1s"));
            String joined = String.join(" ", jobArgs);
            for (String secret : List.of("plan-signing.key", "admin.token", "read.token")) {
                assertThat(joined).doesNotContain(Files.readString(secrets.resolve(secret)).trim());
            }
            assertThat(joined).doesNotContain(kafka.password(JOB_USER));

            try (StandaloneCluster cluster = StandaloneCluster.start(root, 1, Map.of(
                    "inference.model-repository", root.resolve("models").toString(),
                    "metrics.fetcher.update-interval", "1000",
                    "taskmanager.memory.process.size", "1280m",
                    "jobmanager.memory.process.size", "800m"))) {
                String jobId = cluster.runJar(cluster.uploadJar(jar), null, 1, null, jobArgs);
                cluster.awaitJob(jobId, "RUNNING"::equals, Duration.ofMinutes(2));
                FlinkRest rest = new FlinkRest(cluster.rest());

                // a shop producer's requests are served as shop; a claim of another tenant is refused
                KafkaTopics.produce(kafka.clientProperties(SHOP), SHOP_TOPIC, List.of(
                        request(images, "shop-1", null), request(images, "shop-2", SHOP),
                        request(images, "shop-as-ads", "ads")));
                Map<String, String> outcome = new HashMap<>();
                for (ConsumerRecord<byte[], byte[]> rec : KafkaTopics.read(kafka.clientProperties(SecureKafka.BROKER),
                        responses, got -> got.size() >= 3, Duration.ofSeconds(60), Duration.ofMillis(500))) {
                    InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
                    outcome.put(r.id(), r.isError() ? r.error().code().name() : "OK");
                }
                assertThat(outcome).containsExactlyInAnyOrderEntriesOf(
                        Map.of("shop-1", "OK", "shop-2", "OK", "shop-as-ads", "TENANT_MISMATCH"));

                Map<String, String> envCoordinator = new HashMap<>(env);
                envCoordinator.put("FLINK_REST", cluster.rest());
                envCoordinator.put("ADMIN_PORT", String.valueOf(StandaloneCluster.freePort()));
                Path coordinatorDir = tmp.resolve("coordinator");
                script(root, envCoordinator, "deploy/secure/coordinator-config.sh", secrets.toString(),
                        coordinatorDir.toString());
                Configuration coordinatorConfig = GlobalConfiguration.loadConfiguration(coordinatorDir.toString());
                coordinatorConfig.set(CoordinatorOptions.INTERVAL, Duration.ofSeconds(1));
                try (CoordinatorService coordinator = CoordinatorService.start(coordinatorConfig, Duration.ZERO)) {
                    assertThat(coordinator.adminScheme()).isEqualTo("https");
                    // the coordinator's first plan, signed, reaches the router
                    rest.awaitSubtaskMetrics(jobId, "Plan router", 1,
                            List.of(".control.plansApplied", ".control.planEpoch"), -1,
                            m -> m.get(0).get("plansApplied") >= 1, Duration.ofSeconds(60),
                            "the job never applied the coordinator's signed plan");

                    // a plan not signed by the coordinator, written by someone who can write the topic, is refused
                    ControlMessage forged = ControlMessage.of(1_000_000, System.currentTimeMillis(), 1,
                            List.of(new ModelRoute(MODEL, List.of(new RouteTarget(0, 1)), "forged")), List.of(),
                            "forged");
                    KafkaTopics.produce(kafka.clientProperties(SecureKafka.BROKER), CONTROL, List.of(
                            new ProducerRecord<>("unused", "plan".getBytes(StandardCharsets.UTF_8),
                                    ControlMessageCodec.encode(forged))));
                    Map<Integer, Map<String, Double>> router = rest.awaitSubtaskMetrics(jobId, "Plan router", 1,
                            List.of(".control.plansRefusedUnsigned", ".control.planEpoch"), -1,
                            m -> m.get(0).get("plansRefusedUnsigned") >= 1, Duration.ofSeconds(30),
                            "the forged plan was not refused");
                    assertThat(router.get(0).get("planEpoch")).isLessThan(1_000_000);

                    // the admin API over HTTPS: the read token reads, and may not change anything
                    String url = "https://localhost:" + coordinator.adminPort();
                    String cacert = secrets.resolve("admin-cert.pem").toString();
                    String readToken = secrets.resolve("read.token").toString();
                    assertThat(cli("api", "--url", url, "--cacert", cacert, "--token-file", readToken,
                            "GET", "/api/status")).isZero();
                    assertThat(cli("api", "--url", url, "--cacert", cacert, "--token-file", readToken,
                            "POST", "/api/pause")).isEqualTo(1);
                    assertThat(coordinator.store().paused()).isFalse();
                    assertThat(cli("api", "--url", url, "--cacert", cacert, "--token-file",
                            secrets.resolve("admin.token").toString(), "POST", "/api/pause")).isZero();
                    assertThat(coordinator.store().paused()).isTrue();
                }
                assertThat(cluster.jobState(jobId)).isEqualTo("RUNNING");
                assertThat(cluster.lastFailureMillis(jobId)).isEqualTo(-1);
            }
        }
    }

    private static ProducerRecord<byte[], byte[]> request(FashionMnist images, String id, String tenant) {
        InferenceRequest r = new InferenceRequest(id, MODEL, null,
                List.of(Tensor.ofFloats("input", new long[] {1, 1, 28, 28}, images.image(id.length()))),
                new RequestParameters(0, 0, tenant));
        return new ProducerRecord<>("unused", id.getBytes(StandardCharsets.UTF_8), new JsonCodec().encodeRequest(r));
    }

    /** The coordinator's command line, in this JVM; its exit code. */
    private static int cli(String... args) {
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            return new CommandLine(new CoordinatorMain()).execute(args);
        } finally {
            System.setOut(stdout);
            stdout.println("coordinator " + String.join(" ", args) + " -> "
                    + captured.toString(StandardCharsets.UTF_8).trim());
        }
    }

    /** Runs a deploy/ script from the repository root; its stdout. */
    private static String script(Path root, Map<String, String> env, String script, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("bash", script));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).directory(root.toFile());
        pb.environment().putAll(env);
        pb.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as("%s %s", script, out).isZero();
        return out.trim();
    }
}
