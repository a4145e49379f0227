package io.flinkgpu.inference.operator;

import static io.flinkgpu.inference.operator.EnrichmentFixtures.Reading;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.Scored;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.builder;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.enrichment;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.failures;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.harness;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.reading;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.apache.flink.api.common.InvalidProgramException;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The enrichment operator under Flink's operator test harness, with the affine test model. */
class EnrichmentOperatorTest {
    @TempDir
    static Path repoDir;

    static String repo;

    @BeforeAll
    static void repository() throws Exception {
        repo = EnrichmentFixtures.affineRepository(repoDir);
    }

    private final Random random = new Random(11);

    private static <V> Map<String, V> byId(List<V> values, Function<V, String> id) {
        return values.stream().collect(Collectors.toMap(id, v -> v));
    }

    @Test
    void eachEventComesOutWithTheOutputsApplyGivesItsRequest() throws Exception {
        List<Reading> events = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            events.add(reading("r" + i, 1 + i % 3, random));
        }
        GpuInference inference = builder(repo).build();
        List<Scored> enriched;
        try (var h = harness(inference, enrichment(EnrichmentFixtures.MODEL))) {
            h.open();
            for (Reading r : events) {
                h.processElement(new StreamRecord<>(r));
            }
            h.endInput();
            enriched = h.extractOutputValues();
            assertThat(failures(h)).isEmpty();
        }
        List<InferenceResponse> applied;
        try (var h = new OneInputStreamOperatorTestHarness<InferenceRequest, InferenceResponse>(
                new GpuInferenceOperatorFactory(inference.settings()), InferenceTypes.REQUEST.createSerializer(null))) {
            h.open();
            for (Reading r : events) {
                h.processElement(new StreamRecord<>(EnrichmentFixtures.request(r)));
            }
            h.endInput();
            applied = h.extractOutputValues();
        }
        Map<String, Scored> scored = byId(enriched, Scored::id);
        Map<String, InferenceResponse> responses = byId(applied, InferenceResponse::id);
        assertThat(scored.keySet()).isEqualTo(responses.keySet()).hasSize(events.size());
        for (Reading r : events) {
            InferenceResponse response = responses.get(r.id());
            Scored s = scored.get(r.id());
            assertThat(s.y()).isEqualTo(response.output("y").asFloats());
            assertThat(s.norm()).isEqualTo(response.output("norm").asFloats());
            assertThat(s.version()).isEqualTo(response.modelVersion()).isEqualTo("1");
            assertThat(s.y()).hasSize(3 * r.samples());
        }
    }

    @Test
    void failuresCarryTheEventAndTheirCodeAndGoodEventsAroundThemAreEnriched() throws Exception {
        GpuInference inference = builder(repo).maxBatchSize(4).build();
        List<Reading> events = List.of(reading("good-1", 1, random), reading("shape-1", 1, random),
                reading("boom-inputs-1", 1, random), reading("too-large", 5, random),
                reading("boom-combine-1", 1, random), reading("null-1", 1, random), reading("good-2", 2, random));
        Reading slow = new Reading("slow", 1, new float[] {1, 2, 3, 4}, 50);
        Map<String, EnrichmentFailure<Reading>> failed;
        List<Scored> enriched;
        try (var h = harness(inference, enrichment(EnrichmentFixtures.MODEL))) {
            h.open();
            h.processElement(new StreamRecord<>(slow));
            Thread.sleep(60); // slow's 50 ms timeout passes while it waits for a batch
            h.setProcessingTime(h.getProcessingTime() + 100); // fires the batcher's deadline timer
            for (Reading r : events) {
                h.processElement(new StreamRecord<>(r));
            }
            h.endInput();
            failed = byId(failures(h), f -> f.event().id());
            enriched = h.extractOutputValues();
        }
        assertThat(enriched).extracting(Scored::id).containsExactlyInAnyOrder("good-1", "good-2");
        assertThat(failed.keySet()).containsExactlyInAnyOrder("slow", "shape-1", "boom-inputs-1", "too-large",
                "boom-combine-1", "null-1");
        assertThat(failed.get("slow").code()).isEqualTo(ErrorCode.TIMEOUT);
        assertThat(failed.get("shape-1").code()).isEqualTo(ErrorCode.SHAPE_MISMATCH);
        assertThat(failed.get("too-large").code()).isEqualTo(ErrorCode.BATCH_TOO_LARGE);
        assertThat(failed.get("boom-inputs-1").code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(failed.get("boom-inputs-1").error().message())
                .isEqualTo("the inputs function threw java.lang.IllegalStateException: inputs of boom-inputs-1");
        assertThat(failed.get("boom-combine-1").code()).isEqualTo(ErrorCode.INTERNAL);
        assertThat(failed.get("boom-combine-1").error().message())
                .isEqualTo("the combine function threw java.io.IOException: combine of boom-combine-1");
        assertThat(failed.get("boom-combine-1").modelVersion()).isEqualTo("1");
        assertThat(failed.get("null-1").error().message()).isEqualTo("the combine function returned null");
        // the event itself travels with its failure, as it came in
        assertThat(failed.get("shape-1").event()).usingRecursiveComparison().isEqualTo(events.get(1));
        assertThat(failed.values()).allSatisfy(f -> assertThat(f.model()).isEqualTo(EnrichmentFixtures.MODEL));
    }

    @Test
    void anUnknownModelFailsEveryEventWithUnknownModel() throws Exception {
        try (var h = harness(builder(repo).build(), enrichment("no-such-model"))) {
            h.open();
            for (int i = 0; i < 3; i++) {
                h.processElement(new StreamRecord<>(reading("u" + i, 1, random)));
            }
            h.endInput();
            assertThat(h.extractOutputValues()).isEmpty();
            assertThat(failures(h)).hasSize(3).allSatisfy(f -> {
                assertThat(f.code()).isEqualTo(ErrorCode.UNKNOWN_MODEL);
                assertThat(f.modelVersion()).isNull();
            });
        }
    }

    @Test
    void queuedAndExecutingEventsSurviveSnapshotAndRestoreAndAreAnsweredOnce() throws Exception {
        GpuInference inference = builder(repo).build();
        List<Reading> before = new ArrayList<>();
        for (int i = 0; i < 8; i++) { // a full batch: dispatched to the execution thread at once
            before.add(reading("e" + i, 1, random));
        }
        before.add(reading("q0", 1, random));
        before.add(reading("q1", 2, random));
        before.add(reading("shape-q", 1, random)); // refused at once: answered before the snapshot
        OperatorSubtaskState snapshot;
        List<String> answeredBefore = new ArrayList<>();
        try (var h = harness(inference, enrichment(EnrichmentFixtures.MODEL))) {
            h.open();
            for (Reading r : before) {
                h.processElement(new StreamRecord<>(r));
            }
            // the batch's results wait in the mailbox: for the operator it is still executing
            snapshot = h.snapshot(1L, 1L);
            h.extractOutputValues().forEach(s -> answeredBefore.add(s.id()));
            failures(h).forEach(f -> answeredBefore.add(f.event().id()));
            // the job fails here: what this instance answers from now on is lost with it
        }
        assertThat(answeredBefore).containsExactly("shape-q");
        Map<String, Integer> answers = new HashMap<>();
        Map<String, Scored> scored;
        try (var h = harness(inference, enrichment(EnrichmentFixtures.MODEL))) {
            h.setup();
            h.initializeState(snapshot);
            h.open();
            h.processElement(new StreamRecord<>(reading("after", 1, random)));
            h.endInput();
            h.extractOutputValues().forEach(s -> answers.merge(s.id(), 1, Integer::sum));
            failures(h).forEach(f -> answers.merge(f.event().id(), 1, Integer::sum));
            scored = byId(h.extractOutputValues(), Scored::id);
        }
        answeredBefore.forEach(id -> answers.merge(id, 1, Integer::sum));
        assertThat(answers.keySet()).containsExactlyInAnyOrder("e0", "e1", "e2", "e3", "e4", "e5", "e6", "e7",
                "q0", "q1", "shape-q", "after");
        assertThat(answers.values()).containsOnly(1);
        // restored events are the events themselves: their outputs are those of their own inputs
        for (Reading r : before.subList(0, 10)) {
            float[] norm = scored.get(r.id()).norm();
            assertThat(norm).hasSize(r.samples());
            for (int s = 0; s < r.samples(); s++) {
                float expected = 0;
                for (int f = 0; f < 4; f++) {
                    expected += r.x()[s * 4 + f] * r.x()[s * 4 + f];
                }
                assertThat(norm[s]).isCloseTo(expected, org.assertj.core.data.Offset.offset(1e-5f));
            }
        }
    }

    @Test
    void pendingEventsAreKeptUnderTheirOwnStateNameWithTheEventsSerializer() throws Exception {
        GpuInference inference = builder(repo).build();
        try (var h = harness(inference, enrichment(EnrichmentFixtures.MODEL))) {
            h.open();
            h.processElement(new StreamRecord<>(reading("pending", 1, random)));
            EnrichmentOperator<?, ?> op = (EnrichmentOperator<?, ?>) h.getOperator();
            OperatorStateStore store = op.getOperatorStateBackend();
            assertThat(store.getRegisteredStateNames()).contains(EnrichmentOperator.STATE_NAME,
                    AbstractInferenceOperator.CONTROL_STATE_NAME);
            assertThat(op.pendingSerializer()).isEqualTo(EnrichmentFixtures.readingSerializer());
        }
    }

    @Test
    void failuresAreFlinkPojosWhoseEventIsSerializedAsTheEventsAre() throws Exception {
        var type = EnrichmentFailure.typeOf(EnrichmentFixtures.READING);
        assertThat(type).isInstanceOf(org.apache.flink.api.java.typeutils.PojoTypeInfo.class);
        var serializer = type.createSerializer(new org.apache.flink.api.common.serialization.SerializerConfigImpl());
        Reading event = reading("shape-1", 2, random);
        for (var failure : List.of(
                new EnrichmentFailure<>(event, new io.flinkgpu.inference.protocol.InferenceError(
                        ErrorCode.SHAPE_MISMATCH, "input 'x' has shape [2, 3]"), EnrichmentFixtures.MODEL, "1"),
                new EnrichmentFailure<>(event, new io.flinkgpu.inference.protocol.InferenceError(
                        ErrorCode.UNKNOWN_MODEL, "no model"), "nope", null))) {
            var out = new org.apache.flink.core.memory.DataOutputSerializer(256);
            serializer.serialize(failure, out);
            var back = serializer.deserialize(new org.apache.flink.core.memory.DataInputDeserializer(out.getCopyOfBuffer()));
            assertThat(back).usingRecursiveComparison().isEqualTo(failure);
            assertThat(back.code()).isEqualTo(failure.code());
        }
    }

    @Test
    void enrichRefusesAnEnrichmentWithoutResultTypeOrWithAFunctionThatCannotBeShipped() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        DataStream<Reading> events = env.fromData(EnrichmentFixtures.READING, reading("x", 1, random));
        GpuInference inference = builder(repo).build();
        Enrichment<Reading, Scored> untyped = Enrichment.of(EnrichmentFixtures.MODEL,
                EnrichmentFixtures::inputs, EnrichmentFixtures::combine);
        assertThatThrownBy(() -> inference.enrich(events, untyped))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("returns(");
        Object notSerializable = new Object();
        Enrichment<Reading, Scored> capturing = Enrichment.<Reading, Scored>of(EnrichmentFixtures.MODEL,
                r -> {
                    notSerializable.hashCode();
                    return EnrichmentFixtures.inputs(r);
                }, EnrichmentFixtures::combine).returns(Scored.class);
        assertThatThrownBy(() -> inference.enrich(events, capturing)).isInstanceOf(InvalidProgramException.class);
        assertThatThrownBy(() -> Enrichment.of(" ", EnrichmentFixtures::inputs, EnrichmentFixtures::combine))
                .isInstanceOf(IllegalArgumentException.class);
        // a well-formed one is wired with its uid and failure side output
        var enriched = inference.enrich(events, enrichment(EnrichmentFixtures.MODEL));
        assertThat(enriched.getTransformation().getUid()).isEqualTo("gpu-inference-enrich-affine-fp32");
        assertThat(enriched.getSideOutput(GpuInference.enrichmentFailures(events)).getType())
                .isEqualTo(EnrichmentFailure.typeOf(EnrichmentFixtures.READING));
    }
}
