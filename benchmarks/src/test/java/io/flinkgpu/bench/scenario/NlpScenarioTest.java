package io.flinkgpu.bench.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.execution.OnnxModel;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.admission.RequestAdmission;
import io.flinkgpu.inference.admission.ValidationLimits;
import java.nio.LongBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The NLP scenario with the real all-MiniLM-L6-v2 files and tokenizer: tokenization, bucket
 * padding, the appended pooling head, and batching through the library's {@link OnnxModel}.
 */
class NlpScenarioTest {
    @TempDir
    static Path repo;

    static NlpScenario scenario;
    static HuggingFaceTokenizer tokenizer;
    static OnnxModel fp32;

    @BeforeAll
    static void prepare() throws Exception {
        scenario = new NlpScenario(NlpScenario.Precision.FP32);
        scenario.prepare(repo);
        tokenizer = NlpScenario.newTokenizer();
        fp32 = OnnxModel.load(new ModelId(scenario.model(), "1"), scenario.modelFile(repo), cpu());
    }

    @AfterAll
    static void close() throws Exception {
        if (fp32 != null) {
            fp32.close();
        }
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    static CpuDevice cpu() {
        return new CpuDevice("cpu", 2L << 30, 1);
    }

    @Test
    void theTokenizerYieldsTheUncasedBertIds() {
        NlpScenario.Tokens t = NlpScenario.tokenize(tokenizer, "hello world");
        assertThat(t.ids()).containsExactly(101, 7592, 2088, 102);
        assertThat(t.typeIds()).containsExactly(0, 0, 0, 0);
        // lower-cased, WordPiece-split, and "Hello" and "hello" are the same token
        assertThat(NlpScenario.tokenize(tokenizer, "Hello World").ids()).containsExactly(101, 7592, 2088, 102);
    }

    @Test
    void longTextIsTruncatedToTheLargestBucketKeepingSep() {
        NlpScenario.Tokens t = NlpScenario.tokenize(tokenizer, "word ".repeat(500));
        assertThat(t.length()).isEqualTo(NlpScenario.MAX_TOKENS);
        assertThat(t.ids()[0]).isEqualTo(101);
        assertThat(t.ids()[t.length() - 1]).isEqualTo(102);
    }

    @Test
    void sequencesArePaddedToTheirBucketWithMaskZeros() {
        assertThat(NlpScenario.bucket(1)).isEqualTo(16);
        assertThat(NlpScenario.bucket(16)).isEqualTo(16);
        assertThat(NlpScenario.bucket(17)).isEqualTo(32);
        assertThat(NlpScenario.bucket(33)).isEqualTo(64);
        assertThat(NlpScenario.bucket(65)).isEqualTo(128);
        assertThat(NlpScenario.bucket(128)).isEqualTo(128);
        assertThatThrownBy(() -> NlpScenario.bucket(129)).isInstanceOf(IllegalArgumentException.class);

        Tensor[] in = NlpScenario.inputs(NlpScenario.tokenize(tokenizer, "hello world"));
        assertThat(in).extracting(Tensor::name).containsExactly("input_ids", "attention_mask", "token_type_ids");
        for (Tensor t : in) {
            assertThat(t.datatype()).isEqualTo(DataType.INT64);
            assertThat(t.shape()).containsExactly(1, 16);
        }
        long[] ids = new long[16];
        System.arraycopy(new long[] {101, 7592, 2088, 102}, 0, ids, 0, 4);
        long[] mask = new long[16];
        Arrays.fill(mask, 0, 4, 1);
        assertThat(in[0].asLongs()).containsExactly(ids);
        assertThat(in[1].asLongs()).containsExactly(mask);
        assertThat(in[2].asLongs()).containsExactly(new long[16]);
    }

    @Test
    void everySampleIsARealSentenceInItsBucket() {
        assertThat(scenario.samples()).isGreaterThan(500);
        int[] perBucket = new int[NlpScenario.BUCKETS.length];
        for (int i = 0; i < scenario.samples(); i++) {
            List<Tensor> in = scenario.inputs(i);
            long t = in.get(0).shape()[1];
            int n = scenario.tokens(i);
            assertThat(t).isEqualTo(NlpScenario.bucket(n));
            assertThat(in).allSatisfy(x -> assertThat(x.shape()).containsExactly(1, t));
            long[] ids = in.get(0).asLongs();
            long[] mask = in.get(1).asLongs();
            assertThat(ids[0]).isEqualTo(101);
            assertThat(ids[n - 1]).isEqualTo(102);
            for (int k = 0; k < t; k++) {
                assertThat(mask[k]).isEqualTo(k < n ? 1 : 0);
                if (k >= n) {
                    assertThat(ids[k]).isZero();
                }
            }
            perBucket[Arrays.binarySearch(NlpScenario.BUCKETS, (int) t)]++;
        }
        // variable lengths: every bucket is in use
        assertThat(perBucket).doesNotContain(0);
    }

    @Test
    void everyRequestsClassIsItsSequenceBucket() {
        assertThat(scenario.sampleClasses()).hasSize(NlpScenario.BUCKETS.length);
        var classes = scenario.requestClasses();
        int[] seen = new int[NlpScenario.BUCKETS.length];
        for (int seq = 0; seq < scenario.samples() * 2; seq += 7) {
            int c = classes.of(seq);
            long padded = scenario.request("x", seq).inputs().get(0).shape()[1];
            assertThat(NlpScenario.BUCKETS[c]).as("request %d", seq).isEqualTo((int) padded);
            assertThat(scenario.sampleClasses().get(c)).isEqualTo(padded + " tokens");
            seen[c]++;
        }
        assertThat(java.util.Arrays.stream(seen).min().getAsInt()).as("the corpus fills every bucket").isPositive();
    }

    @Test
    void sentencesAreSplitFromParagraphs(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("a"), "First sentence is here. Second one\nwraps a line!\n\nToo short.\n"
                + "Third: a new paragraph; and a clause.");
        Files.createSymbolicLink(dir.resolve("b"), dir.resolve("a"));
        assertThat(NlpScenario.sentences(dir)).containsExactly("First sentence is here.",
                "Second one wraps a line!", "Third: a new paragraph;", "and a clause.");
    }

    @Test
    void theConfigDeclaresAVariableSequenceAndTheJobAcceptsBucketedRequests() throws Exception {
        ModelConfig config = new ObjectMapper().readValue(repo.resolve(scenario.model()).resolve("config.json")
                .toFile(), ModelConfig.class);
        assertThat(config.inputs()).extracting(s -> s.name()).containsExactly("input_ids", "attention_mask",
                "token_type_ids");
        assertThat(config.inputs()).allSatisfy(s -> {
            assertThat(s.datatype()).isEqualTo(DataType.INT64);
            assertThat(s.shape()).containsExactly(-1);
        });
        assertThat(config.outputs()).singleElement().satisfies(s -> {
            assertThat(s.name()).isEqualTo("sentence_embedding");
            assertThat(s.shape()).containsExactly(384);
        });
        RequestAdmission validator = new RequestAdmission(ModelRepository.open(repo), ValidationLimits.DEFAULTS);
        for (int i = 0; i < 50; i++) {
            validator.validate(scenario.request("r" + i, i));
        }
    }

    @Test
    void aBatchOfTwoSameBucketRequestsEqualsEachRunAlone() throws Exception {
        int[] pair = sameBucketPair(32);
        InferenceRequest a = scenario.request("a", pair[0]);
        InferenceRequest b = scenario.request("b", pair[1]);
        List<List<Tensor>> together = fp32.run(List.of(a, b));
        float[] aloneA = fp32.run(List.of(a)).get(0).get(0).asFloats();
        float[] aloneB = fp32.run(List.of(b)).get(0).get(0).asFloats();
        assertThat(together.get(0).get(0).shape()).containsExactly(1, 384);
        assertClose(together.get(0).get(0).asFloats(), aloneA, 1e-4f);
        assertClose(together.get(1).get(0).asFloats(), aloneB, 1e-4f);
        assertThat(cosine(aloneA, aloneB)).isLessThan(0.99); // two different sentences
    }

    @Test
    void theEmbeddingDoesNotDependOnTheBucketItIsPaddedTo() throws Exception {
        NlpScenario.Tokens t = NlpScenario.tokenize(tokenizer, "The licence applies to every copy of the work.");
        float[] at16 = embed(fp32, t, 16);
        float[] at128 = embed(fp32, t, 128);
        assertClose(at128, at16, 1e-4f);
    }

    @Test
    void thePoolingHeadIsSentenceTransformersMeanPoolingAndL2Norm() throws Exception {
        NlpScenario.Tokens t = NlpScenario.tokenize(tokenizer, "Free software is a matter of liberty, not price.");
        Tensor[] in = NlpScenario.inputs(t);
        float[] pooled = embed(fp32, t, (int) in[0].shape()[1]);
        // the shipped encoder alone, pooled here
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        byte[] encoder;
        try (var s = NlpScenario.resource("all-minilm-l6-v2.onnx")) {
            encoder = s.readAllBytes();
        }
        float[] expected = new float[NlpScenario.HIDDEN];
        try (OrtSession.SessionOptions o = cpu().newSessionOptions(); OrtSession session = env.createSession(encoder, o)) {
            assertThat(session.getOutputNames()).containsExactly("last_hidden_state");
            Map<String, OnnxTensor> feeds = new LinkedHashMap<>();
            try {
                for (Tensor x : in) {
                    feeds.put(x.name(), OnnxTensor.createTensor(env, LongBuffer.wrap(x.asLongs()), x.shape()));
                }
                try (OrtSession.Result r = session.run(feeds)) {
                    float[][][] hidden = (float[][][]) r.get(0).getValue();
                    long[] mask = in[1].asLongs();
                    double count = 0;
                    for (int k = 0; k < mask.length; k++) {
                        if (mask[k] == 1) {
                            count++;
                            for (int d = 0; d < expected.length; d++) {
                                expected[d] += hidden[0][k][d];
                            }
                        }
                    }
                    double norm = 0;
                    for (int d = 0; d < expected.length; d++) {
                        expected[d] /= count;
                        norm += expected[d] * expected[d];
                    }
                    for (int d = 0; d < expected.length; d++) {
                        expected[d] /= Math.sqrt(norm);
                    }
                }
            } finally {
                feeds.values().forEach(OnnxTensor::close);
            }
        }
        assertClose(pooled, expected, 1e-5f);
        double norm = 0;
        for (float v : pooled) {
            norm += v * v;
        }
        assertThat(Math.sqrt(norm)).isCloseTo(1.0, within(1e-5));
    }

    @Test
    void similarSentencesEmbedCloserThanUnrelatedOnes() throws Exception {
        float[] dog = embed(fp32, NlpScenario.tokenize(tokenizer, "A dog is running through the park."));
        float[] puppy = embed(fp32, NlpScenario.tokenize(tokenizer, "A puppy runs across the grass in a park."));
        float[] licence = embed(fp32, NlpScenario.tokenize(tokenizer,
                "This License applies to any program or other work which contains a notice."));
        assertThat(cosine(dog, puppy)).isGreaterThan(cosine(dog, licence) + 0.3);
    }

    @Test
    void theInt8ModelIsARealQuantizedTwin(@TempDir Path int8Repo) throws Exception {
        NlpScenario int8 = new NlpScenario(NlpScenario.Precision.INT8);
        assertThat(int8.name()).isEqualTo("nlp-int8");
        assertThat(int8.model()).isEqualTo("bench-minilm-int8");
        int8.prepare(int8Repo);
        Path file = int8.modelFile(int8Repo);
        assertThat(Files.size(file)).isLessThan(Files.size(scenario.modelFile(repo)) / 3);
        try (OnnxModel q = OnnxModel.load(new ModelId(int8.model(), "1"), file, cpu())) {
            double worst = 1;
            for (int i = 0; i < 16; i++) {
                InferenceRequest r = scenario.request("q" + i, i);
                float[] e32 = fp32.run(List.of(r)).get(0).get(0).asFloats();
                float[] e8 = q.run(List.of(r)).get(0).get(0).asFloats();
                worst = Math.min(worst, cosine(e32, e8));
            }
            assertThat(worst).isGreaterThan(0.95).isLessThan(0.99999); // 0.973 worst, 0.990 mean over the corpus
        }
    }

    private int[] sameBucketPair(int bucket) {
        List<Integer> found = new ArrayList<>();
        for (int i = 0; i < scenario.samples() && found.size() < 2; i++) {
            if (scenario.inputs(i).get(0).shape()[1] == bucket) {
                found.add(i);
            }
        }
        assertThat(found).hasSize(2);
        assertThat(scenario.tokens(found.get(0))).isNotEqualTo(scenario.tokens(found.get(1)));
        return new int[] {found.get(0), found.get(1)};
    }

    static float[] embed(OnnxModel model, NlpScenario.Tokens t) throws Exception {
        return embed(model, t, NlpScenario.bucket(t.length()));
    }

    /** The embedding of {@code t} padded to {@code length} (not necessarily its bucket). */
    static float[] embed(OnnxModel model, NlpScenario.Tokens t, int length) throws Exception {
        long[] mask = new long[length];
        Arrays.fill(mask, 0, t.length(), 1);
        long[] shape = {1, length};
        InferenceRequest r = new InferenceRequest("e", "m", null, List.of(
                Tensor.ofLongs("input_ids", shape, Arrays.copyOf(t.ids(), length)),
                Tensor.ofLongs("attention_mask", shape, mask),
                Tensor.ofLongs("token_type_ids", shape, Arrays.copyOf(t.typeIds(), length))),
                RequestParameters.DEFAULTS);
        return model.run(List.of(r)).get(0).get(0).asFloats();
    }

    static void assertClose(float[] actual, float[] expected, float tolerance) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat(actual[i]).as("element %d", i).isCloseTo(expected[i], within(tolerance));
        }
    }

    static double cosine(float[] a, float[] b) {
        double dot = 0;
        double na = 0;
        double nb = 0;
        for (int i = 0; i < a.length; i++) {
            dot += a[i] * b[i];
            na += a[i] * a[i];
            nb += b[i] * b[i];
        }
        return dot / Math.sqrt(na * nb);
    }
}
