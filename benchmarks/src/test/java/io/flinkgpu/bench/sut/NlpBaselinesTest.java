package io.flinkgpu.bench.sut;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.bench.scenario.NlpScenario;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;
import org.apache.flink.api.java.tuple.Tuple2;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ceiling and the per-record baseline on the NLP scenario's variable-length, multi-input requests. */
class NlpBaselinesTest {
    @TempDir
    static Path repo;

    static NlpScenario scenario;

    @BeforeAll
    static void prepare() throws Exception {
        scenario = new NlpScenario(NlpScenario.Precision.FP32);
        scenario.prepare(repo);
    }

    @Test
    void theCeilingGroupsSamplesByBucket() {
        List<List<Integer>> groups = Ceiling.shapeGroups(scenario);
        assertThat(groups).hasSize(NlpScenario.BUCKETS.length);
        int total = 0;
        for (List<Integer> g : groups) {
            long t = scenario.inputs(g.get(0)).get(0).shape()[1];
            assertThat(g).allSatisfy(i -> assertThat(scenario.inputs(i)).allSatisfy(
                    x -> assertThat(x.shape()).containsExactly(1, t)));
            assertThat(Ceiling.label(scenario, g)).isEqualTo("[" + t + "]");
            total += g.size();
        }
        assertThat(total).isEqualTo(scenario.samples());
    }

    @Test
    void theTrafficMixWeighsEachBucketsTimePerBatchByItsShare() {
        Histogram fast = new Histogram(60_000_000_000L, 3);
        Histogram slow = new Histogram(60_000_000_000L, 3);
        for (int i = 0; i < 30; i++) {
            fast.recordValue(1_000_000); // 1 ms per batch, 30 batches in 30 ms
        }
        for (int i = 0; i < 3; i++) {
            slow.recordValue(9_000_000); // 9 ms per batch, 3 batches in 27 ms
        }
        List<Ceiling.Timed> timed = List.of(new Ceiling.Timed(fast, 30, 0.030, 0),
                new Ceiling.Timed(slow, 3, 0.027, 0.2));
        // 3/4 of the samples take 1 ms per batch of 8, 1/4 take 9 ms: 3 ms per batch on average
        Ceiling.Point mix = Ceiling.mix("raw", 8, new double[] {0.75, 0.25}, timed);
        assertThat(mix.samplesPerSecond()).isCloseTo(8 / 0.003, within(1e-6));
        assertThat(mix.p50Ms()).isCloseTo(1.0, within(0.01));
        assertThat(mix.p99Ms()).isCloseTo(9.0, within(0.01));
        assertThat(mix.runs()).isEqualTo(33);
        assertThat(mix.otherCores()).isEqualTo(0.2);
    }

    @Test
    void theCeilingRunsBatchesOfEveryBucketAndTheirMix() throws Exception {
        // the warm-up is shared by the four buckets: 100 ms each, so that the first bucket measured (16 tokens, right
        // after the session is created) does not pay the session's first runs, which made it slower than half the
        // 128-token bucket in a clean-clone CI run with 10 ms of warm-up per bucket
        List<Ceiling.Point> points = Ceiling.measure(scenario, scenario.modelFile(repo), new int[] {1, 4},
                Duration.ofMillis(400), Duration.ofMillis(800), true);
        List<String> paths = List.of("raw", "raw [16]", "raw [32]", "raw [64]", "raw [128]");
        List<String> expected = new ArrayList<>();
        for (String prefix : new String[] {"raw", "onnxmodel"}) {
            for (int b = 0; b < 2; b++) {
                for (String p : paths) {
                    expected.add(p.replace("raw", prefix));
                }
            }
        }
        assertThat(points).extracting(Ceiling.Point::path).containsExactlyElementsOf(expected);
        assertThat(points).allSatisfy(p -> {
            assertThat(p.runs()).isPositive();
            assertThat(p.samplesPerSecond()).isPositive();
        });
        // longer sequences cost more per sample: compared by the median run, which a pause or another process
        // taking the core for part of the short measurement moves less than the mean rate. A clean-clone CI run
        // still measured the 16-token median at 15.7 ms (4.2-4.8 idle) against 24.1 for 128 tokens, so a
        // measurement that does not show it is repeated, twice at most: a stall has to recur in all three to fail it
        List<String> tries = new ArrayList<>();
        for (int attempt = 0; attempt < 3; attempt++) {
            List<Ceiling.Point> measured = attempt == 0 ? points : Ceiling.measure(scenario,
                    scenario.modelFile(repo), new int[] {1}, Duration.ofMillis(400), Duration.ofMillis(800), true);
            double t16 = medianAtBatch1(measured, "raw [16]");
            double t128 = medianAtBatch1(measured, "raw [128]");
            tries.add(String.format("16 tokens %.2f ms, 128 tokens %.2f ms", t16, t128));
            if (t128 > 2 * t16) {
                return;
            }
        }
        throw new AssertionError("128 tokens never cost more than twice 16 tokens per run: " + tries);
    }

    private static double medianAtBatch1(List<Ceiling.Point> points, String path) {
        return points.stream().filter(p -> p.path().equals(path) && p.batch() == 1).findFirst().orElseThrow().p50Ms();
    }

    @Test
    void thePerRecordBaselineAnswersWithTheSameEmbeddingAsTheJobsModel() throws Exception {
        PerRecordInference perRecord = new PerRecordInference(scenario.modelFile(repo).toString());
        perRecord.open();
        BinaryCodec codec = new BinaryCodec();
        List<Integer> picks = new ArrayList<>();
        for (List<Integer> g : Ceiling.shapeGroups(scenario)) {
            picks.add(g.get(0)); // one request of every bucket
        }
        try (OnnxModel model = OnnxModel.load(new ModelId(scenario.model(), "1"), scenario.modelFile(repo),
                new CpuDevice("cpu", 2L << 30, 1))) {
            for (int i : picks) {
                var request = scenario.request("r" + i, i);
                Tuple2<byte[], byte[]> out = perRecord.process(codec.encodeRequest(request));
                InferenceResponse response = codec.decodeResponse(out.f1);
                assertThat(response.isError()).isFalse();
                Tensor embedding = response.output("sentence_embedding");
                assertThat(embedding.shape()).containsExactly(1, NlpScenario.HIDDEN);
                float[] expected = model.run(List.of(request)).get(0).get(0).asFloats();
                float[] actual = embedding.asFloats();
                for (int d = 0; d < expected.length; d++) {
                    assertThat(actual[d]).isCloseTo(expected[d], within(1e-5f));
                }
            }
        } finally {
            perRecord.close();
        }
    }
}
