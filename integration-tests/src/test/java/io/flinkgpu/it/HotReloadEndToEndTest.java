package io.flinkgpu.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.operator.GpuInferenceOptions;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.JsonCodec;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.job.local.EmbeddedKafka;
import io.flinkgpu.job.local.FashionMnist;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hot reload while traffic flows: a new version directory appears in the repository, is loaded
 * and warmed up, and takes over unversioned traffic with no failed request and no going back.
 */
class HotReloadEndToEndTest {
    static final String MODEL = "affine-fp32";

    @RegisterExtension
    static final MiniClusterExtension FLINK = TestJobs.miniCluster();

    @TempDir
    static Path repo;

    static EmbeddedKafka kafka;
    static Path source;

    @BeforeAll
    static void setUp() throws Exception {
        kafka = EmbeddedKafka.start();
        source = FashionMnist.findRoot().resolve("gpu-operator-udf/src/test/resources/models").resolve(MODEL);
        TestJobs.copyModel(source.getParent(), MODEL, repo, null);
    }

    @AfterAll
    static void tearDown() throws Exception {
        kafka.close();
    }

    @Test
    void newVersionTakesOverUnversionedTrafficWithoutFailures() throws Exception {
        Configuration config = TestJobs.config(kafka, "reload", 1, repo);
        config.set(GpuInferenceOptions.REPOSITORY_POLL_INTERVAL, Duration.ofMillis(200));

        JobClient job = TestJobs.start(config, 1, "hot-reload");
        int n = 1200;
        List<ConsumerRecord<byte[], byte[]>> out;
        try {
            Properties p = new Properties();
            p.setProperty("bootstrap.servers", kafka.bootstrapServers());
            JsonCodec codec = new JsonCodec();
            try (KafkaProducer<byte[], byte[]> producer =
                    new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < n; i++) {
                    if (i == n / 3) {
                        // version 1 is serving (the job may start slowly on a busy machine) ...
                        producer.flush();
                        List<ConsumerRecord<byte[], byte[]>> early = KafkaTopics.read(kafka.bootstrapServers(),
                                "reload-responses", got -> got.size() >= n / 6, Duration.ofMinutes(1), Duration.ZERO);
                        assertThat(early).hasSizeGreaterThanOrEqualTo(n / 6);
                        // ... when a new version appears: written aside and moved in, as a deployment would
                        Path staging = repo.resolve(".staging-2");
                        Files.createDirectories(staging);
                        Files.copy(source.resolve("1/model.onnx"), staging.resolve("model.onnx"));
                        Files.move(staging, repo.resolve(MODEL).resolve("2"), StandardCopyOption.ATOMIC_MOVE);
                    }
                    InferenceRequest r = new InferenceRequest("h-" + i, MODEL, null,
                            List.of(Tensor.ofFloats("x", new long[] {1, 4}, i, 1, 2, 3)), null);
                    producer.send(new ProducerRecord<>("reload-requests", r.id().getBytes(StandardCharsets.UTF_8),
                            codec.encodeRequest(r)));
                    Thread.sleep(4);
                }
            }
            out = KafkaTopics.read(kafka.bootstrapServers(), "reload-responses", got -> got.size() >= n,
                    Duration.ofMinutes(1), Duration.ofSeconds(1));
        } finally {
            job.cancel().get();
        }

        assertThat(out).hasSize(n);
        String[] versionOf = new String[n];
        for (ConsumerRecord<byte[], byte[]> rec : out) {
            InferenceResponse r = WireFormat.JSON.decodeResponse(rec.value());
            assertThat(r.isError()).as("%s", r).isFalse();
            versionOf[Integer.parseInt(r.id().substring(2))] = r.modelVersion();
        }
        List<String> sequence = new ArrayList<>();
        for (String v : versionOf) {
            if (sequence.isEmpty() || !sequence.get(sequence.size() - 1).equals(v)) {
                sequence.add(v);
            }
        }
        // in request order: version 1, then version 2 for good
        assertThat(sequence).containsExactly("1", "2");
    }
}
