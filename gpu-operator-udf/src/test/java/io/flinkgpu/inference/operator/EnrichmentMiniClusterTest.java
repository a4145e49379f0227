package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link GpuInference#enrich} in real jobs on a MiniCluster, with the shipped Fashion-MNIST MLP
 * under {@code models/} and real test images: enriched events carry exactly the outputs
 * {@link GpuInference#apply} gives the same inputs, and bad events (wrong shape, a model that does
 * not exist, throwing functions) come out on the failure side output while the job, which may not
 * restart, runs to its end.
 */
class EnrichmentMiniClusterTest {
    static final Path MODELS = Path.of("../models").toAbsolutePath().normalize();
    static final Path IMAGES = Path.of("../data/fashion-mnist/test-images-2000.idx3-ubyte.gz");
    static final String MODEL = "fashion-mnist-mlp";
    static final int PIXELS = 28 * 28;

    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2).build());

    /** An event: an image to classify. */
    public record Image(String id, float[] pixels) {}

    /** What came out of a job for one id, and on which path ("enrich", "apply", "failure"). */
    public record Outcome(String path, String id, String code, float[] logits, String version) {}

    static final TypeInformation<Image> IMAGE = TypeInformation.of(Image.class);
    static final TypeInformation<Outcome> OUTCOME = TypeInformation.of(Outcome.class);

    static float[][] images;

    @BeforeAll
    static void readImages() throws IOException {
        try (DataInputStream in = new DataInputStream(new GZIPInputStream(Files.newInputStream(IMAGES)))) {
            assertThat(in.readInt()).as("IDX3 magic").isEqualTo(0x00000803);
            in.readInt();
            assertThat(in.readInt()).isEqualTo(28);
            assertThat(in.readInt()).isEqualTo(28);
            images = new float[64][PIXELS];
            byte[] row = new byte[PIXELS];
            for (float[] image : images) {
                in.readFully(row);
                for (int p = 0; p < PIXELS; p++) {
                    image[p] = (row[p] & 0xff) / 255f;
                }
            }
        }
    }

    static List<Tensor> inputs(Image image) {
        if (image.id().startsWith("boom-inputs")) {
            throw new IllegalArgumentException("no inputs for " + image.id());
        }
        long[] shape = image.pixels().length == PIXELS ? new long[] {1, 1, 28, 28} : new long[] {1, image.pixels().length};
        return List.of(Tensor.ofFloats("input", shape, image.pixels()));
    }

    static Outcome classified(Image image, InferenceResponse response) {
        if (image.id().startsWith("boom-combine")) {
            throw new IllegalStateException("cannot combine " + image.id());
        }
        return new Outcome("enrich", image.id(), null, response.output("logits").asFloats(), response.modelVersion());
    }

    static Outcome failed(EnrichmentFailure<Image> f) {
        return new Outcome("failure", f.event().id(), f.code().name(), null, f.modelVersion());
    }

    static Outcome applied(InferenceResponse r) {
        return new Outcome("apply", r.id(), r.isError() ? r.error().code().name() : null,
                r.isError() ? null : r.output("logits").asFloats(), r.modelVersion());
    }

    static InferenceRequest request(Image image) {
        return new InferenceRequest(image.id(), MODEL, null, inputs(image), null);
    }

    static GpuInference inference() {
        return GpuInference.builder().modelRepository(MODELS.toString()).deviceType("cpu").maxBatchSize(8)
                .maxQueueDelay(Duration.ofMillis(2)).repositoryPollInterval(Duration.ZERO).build();
    }

    static StreamExecutionEnvironment environment() {
        Configuration config = new Configuration();
        config.set(RestartStrategyOptions.RESTART_STRATEGY, "none"); // one failed task fails the test
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(config);
        env.setParallelism(2);
        return env;
    }

    static List<Outcome> run(DataStream<Outcome> outcomes, String name) throws Exception {
        List<Outcome> all = new ArrayList<>();
        try (var it = outcomes.executeAndCollect(name)) {
            it.forEachRemaining(all::add);
        }
        return all;
    }

    @Test
    void enrichedEventsCarryTheOutputsApplyGivesTheirInputs() throws Exception {
        List<Image> events = new ArrayList<>();
        for (int i = 0; i < images.length; i++) {
            events.add(new Image("img-" + i, images[i]));
        }
        StreamExecutionEnvironment env = environment();
        DataStream<Image> stream = env.fromData(events, IMAGE);
        GpuInference inference = inference();
        SingleOutputStreamOperator<Outcome> enriched = inference.enrich(stream,
                Enrichment.of(MODEL, EnrichmentMiniClusterTest::inputs, EnrichmentMiniClusterTest::classified)
                        .returns(OUTCOME));
        DataStream<Outcome> failures = enriched.getSideOutput(GpuInference.enrichmentFailures(stream))
                .map(EnrichmentMiniClusterTest::failed, OUTCOME);
        DataStream<Outcome> viaApply = inference.apply(stream.map(EnrichmentMiniClusterTest::request,
                InferenceTypes.REQUEST)).map(EnrichmentMiniClusterTest::applied, OUTCOME);

        List<Outcome> all = run(enriched.union(failures, viaApply), "enrich vs apply");

        Map<String, Outcome> byEnrich = new HashMap<>();
        Map<String, Outcome> byApply = new HashMap<>();
        for (Outcome o : all) {
            assertThat(o.path()).isNotEqualTo("failure");
            Map<String, Outcome> into = o.path().equals("enrich") ? byEnrich : byApply;
            assertThat(into.put(o.id(), o)).as("one answer per id and path: %s", o).isNull();
        }
        assertThat(byEnrich.keySet()).hasSize(events.size()).isEqualTo(byApply.keySet());
        for (Image image : events) {
            Outcome e = byEnrich.get(image.id());
            Outcome a = byApply.get(image.id());
            assertThat(a.code()).isNull();
            assertThat(e.logits()).hasSize(10).isEqualTo(a.logits());
            assertThat(e.version()).isEqualTo(a.version()).isEqualTo("1");
        }
    }

    @Test
    void badEventsGoToTheFailureSideOutputAndTheJobRunsToItsEnd() throws Exception {
        List<Image> events = new ArrayList<>();
        Map<String, ErrorCode> expected = new HashMap<>();
        for (int i = 0; i < 40; i++) {
            String id;
            float[] pixels = images[i];
            switch (i % 5) {
                case 1 -> {
                    id = "shape-" + i;
                    pixels = java.util.Arrays.copyOf(pixels, 10);
                    expected.put(id, ErrorCode.SHAPE_MISMATCH);
                }
                case 2 -> {
                    id = "boom-inputs-" + i;
                    expected.put(id, ErrorCode.INTERNAL);
                }
                case 3 -> {
                    id = "boom-combine-" + i;
                    expected.put(id, ErrorCode.INTERNAL);
                }
                default -> {
                    id = "good-" + i;
                    expected.put(id, null);
                }
            }
            events.add(new Image(id, pixels));
        }
        StreamExecutionEnvironment env = environment();
        env.getConfig().enableObjectReuse(); // the operator then copies the events it holds
        DataStream<Image> stream = env.fromData(events, IMAGE);
        GpuInference inference = inference();
        SingleOutputStreamOperator<Outcome> enriched = inference.enrich(stream,
                Enrichment.of(MODEL, EnrichmentMiniClusterTest::inputs, EnrichmentMiniClusterTest::classified)
                        .returns(OUTCOME));
        SingleOutputStreamOperator<Outcome> unknown = inference.enrich(stream.filter(img -> img.id().startsWith("good")),
                Enrichment.of("no-such-model", EnrichmentMiniClusterTest::inputs,
                        EnrichmentMiniClusterTest::classified).returns(OUTCOME));
        DataStream<Outcome> failures = enriched.getSideOutput(GpuInference.enrichmentFailures(stream))
                .map(EnrichmentMiniClusterTest::failed, OUTCOME);
        DataStream<Outcome> unknownFailures = unknown.getSideOutput(GpuInference.enrichmentFailures(stream))
                .map(f -> new Outcome("unknown", f.event().id(), f.code().name(), null, f.modelVersion()), OUTCOME);

        List<Outcome> all = run(enriched.union(failures, unknown, unknownFailures), "bad events");

        Map<String, Outcome> answers = new HashMap<>();
        List<Outcome> unknownModel = new ArrayList<>();
        for (Outcome o : all) {
            if (o.path().equals("unknown")) {
                unknownModel.add(o);
            } else {
                assertThat(o.path()).as("%s", o).isIn("enrich", "failure");
                assertThat(answers.put(o.id(), o)).as("one answer per event: %s", o).isNull();
            }
        }
        assertThat(answers.keySet()).isEqualTo(expected.keySet());
        expected.forEach((id, code) -> {
            Outcome o = answers.get(id);
            if (code == null) {
                assertThat(o.path()).as("%s", o).isEqualTo("enrich");
                assertThat(o.logits()).hasSize(10);
            } else {
                assertThat(o.path()).as("%s", o).isEqualTo("failure");
                assertThat(o.code()).as("%s", o).isEqualTo(code.name());
            }
        });
        long good = expected.values().stream().filter(c -> c == null).count();
        assertThat(unknownModel).hasSize((int) good)
                .allSatisfy(o -> assertThat(o.code()).isEqualTo(ErrorCode.UNKNOWN_MODEL.name()));
    }
}
