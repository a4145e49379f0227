package io.flinkgpu.inference.operator;

import static io.flinkgpu.inference.operator.EnrichmentFixtures.Reading;
import static io.flinkgpu.inference.operator.EnrichmentFixtures.Scored;
import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;

/**
 * Operator options varied together with the events: batch limit, queue delay, execution threads
 * and queue depth (backpressure), and events that are good, of the wrong shape, too large for the
 * batch limit, or whose inputs or combine function throw or return null, with a checkpoint taken
 * at any point and restored into a fresh operator. Every event must be answered exactly once
 * across the two (what the first answered before its snapshot, plus what the restored one
 * answers), with its outputs or with a failure of the code it deserves.
 */
class EnrichmentProperties {
    static Path root;
    static String repo;

    @BeforeContainer
    static void repository() throws IOException {
        root = Files.createTempDirectory("enrichment-properties");
        repo = EnrichmentFixtures.affineRepository(root);
    }

    @AfterContainer
    static void deleteRepository() throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        }
    }

    record Options(int maxBatch, Duration delay, int threads, int enqueuedBatches) {}

    record Event(String kind, int samples) {}

    @Provide
    Arbitrary<Options> options() {
        return Combinators.combine(Arbitraries.integers().between(1, 12),
                Arbitraries.of(Duration.ZERO, Duration.ofMillis(1), Duration.ofHours(1)),
                Arbitraries.integers().between(1, 4), Arbitraries.integers().between(1, 4)).as(Options::new);
    }

    @Provide
    Arbitrary<List<Event>> events() {
        Arbitrary<String> kind = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(8, Arbitraries.just("good")),
                net.jqwik.api.Tuple.of(1, Arbitraries.just("shape")),
                net.jqwik.api.Tuple.of(1, Arbitraries.just("boom-inputs")),
                net.jqwik.api.Tuple.of(1, Arbitraries.just("boom-combine")),
                net.jqwik.api.Tuple.of(1, Arbitraries.just("null")));
        return Combinators.combine(kind, Arbitraries.integers().between(1, 4)).as(Event::new).list().ofMaxSize(40);
    }

    @Property(tries = 50, shrinking = ShrinkingMode.BOUNDED)
    void everyEventIsAnsweredExactlyOnceWithOutputsOrTheFailureItDeserves(@ForAll("options") Options options,
            @ForAll("events") List<Event> generated, @ForAll boolean restore,
            @ForAll @IntRange(min = 0, max = 100) int snapshotPercent) throws Exception {
        Random random = new Random(generated.size() * 31L + snapshotPercent);
        List<Reading> events = new ArrayList<>();
        for (int i = 0; i < generated.size(); i++) {
            Event e = generated.get(i);
            events.add(EnrichmentFixtures.reading(e.kind() + "-" + i, e.samples(), random));
        }
        GpuInference inference = GpuInference.builder().modelRepository(repo).maxBatchSize(options.maxBatch())
                .maxQueueDelay(options.delay()).executionThreads(options.threads())
                .maxEnqueuedBatches(options.enqueuedBatches()).build();
        Enrichment<Reading, Scored> enrichment = EnrichmentFixtures.enrichment(EnrichmentFixtures.MODEL);
        int split = restore ? events.size() * snapshotPercent / 100 : events.size();

        List<Scored> enriched = new ArrayList<>();
        List<EnrichmentFailure<Reading>> failed = new ArrayList<>();
        OperatorSubtaskState snapshot = null;
        try (var h = EnrichmentFixtures.harness(inference, enrichment)) {
            h.open();
            feed(h, events.subList(0, split));
            if (restore) {
                snapshot = h.snapshot(1L, 1L);
            } else {
                h.endInput();
            }
            // what was answered up to the snapshot (or the end); later answers are lost with this instance
            enriched.addAll(h.extractOutputValues());
            failed.addAll(EnrichmentFixtures.failures(h));
        }
        if (restore) {
            try (var h = EnrichmentFixtures.harness(inference, enrichment)) {
                h.setup();
                h.initializeState(snapshot);
                h.open();
                feed(h, events.subList(split, events.size()));
                h.endInput();
                enriched.addAll(h.extractOutputValues());
                failed.addAll(EnrichmentFixtures.failures(h));
            }
        }

        Map<String, Integer> answers = new HashMap<>();
        enriched.forEach(s -> answers.merge(s.id(), 1, Integer::sum));
        failed.forEach(f -> answers.merge(f.event().id(), 1, Integer::sum));
        Map<String, Integer> once = new HashMap<>();
        events.forEach(r -> once.put(r.id(), 1));
        assertThat(answers).isEqualTo(once);

        Map<String, Scored> scored = new HashMap<>();
        enriched.forEach(s -> scored.put(s.id(), s));
        Map<String, ErrorCode> codes = new HashMap<>();
        failed.forEach(f -> codes.put(f.event().id(), f.code()));
        for (Reading r : events) {
            ErrorCode expected = EnrichmentFixtures.expectedCode(r, options.maxBatch());
            if (expected == null) {
                assertThat(scored).as("%s", r.id()).containsKey(r.id());
                float[] norm = scored.get(r.id()).norm();
                assertThat(norm).hasSize(r.samples());
                for (int s = 0; s < r.samples(); s++) {
                    float sum = 0;
                    for (int f = 0; f < 4; f++) {
                        sum += r.x()[s * 4 + f] * r.x()[s * 4 + f];
                    }
                    assertThat(norm[s]).isCloseTo(sum, org.assertj.core.data.Offset.offset(1e-5f));
                }
            } else {
                assertThat(codes.get(r.id())).as("%s", r.id()).isEqualTo(expected);
            }
        }
    }

    private static void feed(OneInputStreamOperatorTestHarness<Reading, Scored> h, List<Reading> events)
            throws Exception {
        for (Reading r : events) {
            h.processElement(new StreamRecord<>(r));
        }
    }
}
