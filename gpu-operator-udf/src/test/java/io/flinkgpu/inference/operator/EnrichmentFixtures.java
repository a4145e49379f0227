package io.flinkgpu.inference.operator;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;

/**
 * Events, enriched records and the enrichment of the test model {@code affine-fp32}
 * ({@code y = x W + b}, {@code norm = sum(x * x)}), shared by the enrichment tests. An event's id
 * says how it misbehaves: {@code shape-*} gives inputs of the wrong width, {@code boom-inputs-*}
 * makes the inputs function throw, {@code boom-combine-*} the combine function, {@code null-*}
 * makes combine return null.
 */
final class EnrichmentFixtures {
    private EnrichmentFixtures() {}

    static final String MODEL = "affine-fp32";
    static final Path TEST_MODELS = Path.of("src/test/resources/models");

    /** An event: {@code samples} rows of four features (three where the id starts with {@code shape}). */
    public record Reading(String id, int samples, float[] x, long timeoutMs) {}

    /** An enriched event: the event's id with the model's outputs and the version that served it. */
    public record Scored(String id, float[] y, float[] norm, String version) {}

    static final TypeInformation<Reading> READING = TypeInformation.of(Reading.class);

    static TypeSerializer<Reading> readingSerializer() {
        return READING.createSerializer(new SerializerConfigImpl());
    }

    static Reading reading(String id, int samples, Random random) {
        int width = id.startsWith("shape") ? 3 : 4;
        float[] x = new float[samples * width];
        for (int i = 0; i < x.length; i++) {
            x[i] = random.nextFloat() * 2 - 1;
        }
        return new Reading(id, samples, x, 0);
    }

    static List<Tensor> inputs(Reading r) {
        if (r.id().startsWith("boom-inputs")) {
            throw new IllegalStateException("inputs of " + r.id());
        }
        return List.of(Tensor.ofFloats("x", new long[] {r.samples(), r.x().length / r.samples()}, r.x()));
    }

    static Scored combine(Reading r, InferenceResponse response) throws Exception {
        if (r.id().startsWith("boom-combine")) {
            throw new java.io.IOException("combine of " + r.id());
        }
        if (r.id().startsWith("null")) {
            return null;
        }
        return new Scored(r.id(), response.output("y").asFloats(), response.output("norm").asFloats(),
                response.modelVersion());
    }

    static RequestParameters parameters(Reading r) {
        return r.timeoutMs() > 0 ? new RequestParameters(0, r.timeoutMs(), RequestParameters.DEFAULT_TENANT) : null;
    }

    /** The enrichment of {@link #MODEL} (or another model name) with the functions above. */
    static Enrichment<Reading, Scored> enrichment(String model) {
        return Enrichment.of(model, EnrichmentFixtures::inputs, EnrichmentFixtures::combine)
                .parameters(EnrichmentFixtures::parameters)
                .returns(Scored.class);
    }

    /** The request {@link GpuInference#apply} would get for the same event. */
    static InferenceRequest request(Reading r) {
        return new InferenceRequest(r.id(), MODEL, null, inputs(r), parameters(r));
    }

    /**
     * The code a well-behaved operator answers an event with: null for outputs.
     *
     * @param maxBatch the operator's batch limit
     */
    static ErrorCode expectedCode(Reading r, int maxBatch) {
        String id = r.id();
        if (id.startsWith("boom-inputs")) { // no request is made
            return ErrorCode.INTERNAL;
        }
        if (id.startsWith("shape")) { // validation checks shapes before the batch limit
            return ErrorCode.SHAPE_MISMATCH;
        }
        if (r.samples() > Math.min(16, maxBatch)) { // the model's max_batch_size is 16
            return ErrorCode.BATCH_TOO_LARGE;
        }
        if (id.startsWith("boom-combine") || id.startsWith("null")) { // combine sees successful responses only
            return ErrorCode.INTERNAL;
        }
        return null;
    }

    /** A copy of the affine model whose config leaves batching to the operator's settings. */
    static String affineRepository(Path dir) throws IOException {
        Path version = Files.createDirectories(dir.resolve(MODEL).resolve("1"));
        Files.copy(TEST_MODELS.resolve(MODEL).resolve("1").resolve("model.onnx"), version.resolve("model.onnx"));
        ObjectNode config = (ObjectNode) new ObjectMapper()
                .readTree(TEST_MODELS.resolve(MODEL).resolve("config.json").toFile());
        config.remove("dynamic_batching");
        Files.writeString(dir.resolve(MODEL).resolve("config.json"), config.toString());
        return dir.toString();
    }

    static GpuInference.Builder builder(String repo) {
        return GpuInference.builder().modelRepository(repo).maxBatchSize(8).maxEnqueuedBatches(1000)
                .maxQueueDelay(Duration.ofHours(1));
    }

    static OneInputStreamOperatorTestHarness<Reading, Scored> harness(GpuInference inference,
            Enrichment<Reading, Scored> enrichment) throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new EnrichmentOperatorFactory<>(inference.settings(),
                enrichment, readingSerializer(), GpuInference.enrichmentFailures(READING)), readingSerializer());
    }

    /** The failures the harness's operator emitted so far. */
    static List<EnrichmentFailure<Reading>> failures(OneInputStreamOperatorTestHarness<Reading, Scored> h) {
        var queue = h.getSideOutput(GpuInference.enrichmentFailures(READING));
        return queue == null ? List.of() : queue.stream().map(r -> r.getValue()).toList();
    }

    /** Runs mail (batch completions) until {@code answers} events are answered or the time is up. */
    static void runMailUntil(OneInputStreamOperatorTestHarness<Reading, Scored> h, int answers) throws Exception {
        Mailboxes.runUntil(h, () -> h.extractOutputValues().size() + failures(h).size() >= answers);
    }
}
