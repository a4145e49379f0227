package io.flinkgpu.inference.execution;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OnnxModelTest {
    static final Path MODELS = Path.of("src/test/resources/models");
    static final Path FASHION_MODEL = Path.of("../models/fashion-mnist-cnn/1/model.onnx");
    static final Path FASHION_IMAGES = Path.of("../data/fashion-mnist/test-images-2000.idx3-ubyte.gz");
    static final Path FASHION_LABELS = Path.of("../data/fashion-mnist/test-labels-2000.idx1-ubyte.gz");
    static final int PIXELS = 28 * 28;

    private static CpuDevice device;

    @BeforeAll
    static void createDevice() {
        device = new CpuDevice("cpu:0", 1L << 30, 1);
    }

    @AfterAll
    static void closeDevice() {
        device.close();
    }

    private static OnnxModel load(String name) throws Exception {
        return OnnxModel.load(new ModelId(name, "1"), MODELS.resolve(name).resolve("1/model.onnx"), device);
    }

    private static InferenceRequest request(String id, String model, Tensor... inputs) {
        return new InferenceRequest(id, model, "1", List.of(inputs), RequestParameters.DEFAULTS);
    }

    /** A [samples, 3] tensor of the given type whose values all differ, seeded per request. */
    private static Tensor echoInput(DataType type, int samples, int seed) {
        Random random = new Random(seed);
        int n = samples * 3;
        long[] shape = {samples, 3};
        switch (type) {
            case FP32: {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = (float) random.nextGaussian() * 1000;
                }
                return Tensor.ofFloats("x", shape, v);
            }
            case FP16: {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = (float) random.nextGaussian() * 100;
                }
                return Tensor.ofFp16("x", shape, v);
            }
            case INT64: {
                long[] v = new long[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextLong();
                }
                return Tensor.ofLongs("x", shape, v);
            }
            case INT32: {
                int[] v = new int[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextInt();
                }
                return Tensor.ofInts("x", shape, v);
            }
            case BOOL: {
                boolean[] v = new boolean[n];
                for (int i = 0; i < n; i++) {
                    v[i] = random.nextBoolean();
                }
                return Tensor.ofBooleans("x", shape, v);
            }
            case BYTES: {
                String[] v = new String[n];
                for (int i = 0; i < n; i++) {
                    v[i] = "s" + seed + "-" + i + "-" + "\u00e9".repeat(random.nextInt(4));
                }
                v[0] = ""; // empty strings must survive too
                return Tensor.ofStrings("x", shape, v);
            }
            default:
                throw new IllegalArgumentException(type.name());
        }
    }

    // ---- echo models: stacking and splitting is exact --------------------------------------

    @ParameterizedTest
    @ValueSource(strings = {"echo-fp32", "echo-fp16", "echo-int64", "echo-int32", "echo-bool", "echo-bytes"})
    void batchedRequestsEachGetExactlyTheirOwnData(String name) throws Exception {
        DataType type = DataType.valueOf(name.substring("echo-".length()).toUpperCase());
        int[] samples = {1, 2, 1};
        List<InferenceRequest> requests = new ArrayList<>();
        for (int i = 0; i < samples.length; i++) {
            requests.add(request("r" + i, name, echoInput(type, samples[i], 100 + i)));
        }

        try (OnnxModel model = load(name)) {
            assertThat(model.inputTypes()).isEqualTo(Map.of("x", type));
            assertThat(model.outputNames()).containsExactly("y");

            List<List<Tensor>> outputs = model.run(requests);

            assertThat(outputs).hasSize(requests.size());
            for (int i = 0; i < requests.size(); i++) {
                Tensor in = requests.get(i).input("x");
                assertThat(outputs.get(i)).hasSize(1);
                Tensor out = outputs.get(i).get(0);
                assertThat(out.name()).isEqualTo("y");
                assertThat(out.datatype()).isEqualTo(type);
                assertThat(out.shape()).containsExactly(samples[i], 3);
                assertThat(out.data()).as("request %d", i).isEqualTo(in.data());
            }
        }
    }

    @Test
    void modelCanRunManyBatchesOfVaryingSizeInARow() throws Exception {
        try (OnnxModel model = load("echo-fp32")) {
            for (int round = 0; round < 5; round++) {
                int[] samples = round % 2 == 0 ? new int[] {4, 1} : new int[] {1, 1, 1, 8, 2};
                List<InferenceRequest> requests = new ArrayList<>();
                for (int i = 0; i < samples.length; i++) {
                    requests.add(request("r" + i, "echo-fp32", echoInput(DataType.FP32, samples[i], round * 10 + i)));
                }

                List<List<Tensor>> outputs = model.run(requests);

                for (int i = 0; i < samples.length; i++) {
                    assertThat(outputs.get(i).get(0).data()).isEqualTo(requests.get(i).input("x").data());
                }
            }
        }
    }

    // ---- affine ---------------------------------------------------------------------------

    /** W and b of affine-fp32 as documented in models/README.md. */
    private static final float[][] W = {{2.0f, 2.0f, 2.0f}, {-0.5f, -1.5f, 1.75f}, {-1.75f, -1.0f, -1.5f},
        {-0.75f, 0.25f, -1.5f}};
    private static final float[] B = {1.25f, -1.0f, 1.25f};

    private static Tensor affineInput(int samples, int seed) {
        Random random = new Random(seed);
        float[] v = new float[samples * 4];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) random.nextGaussian();
        }
        return Tensor.ofFloats("x", new long[] {samples, 4}, v);
    }

    private static void assertClose(float[] actual, float[] expected) {
        assertThat(actual).hasSameSizeAs(expected);
        for (int i = 0; i < expected.length; i++) {
            float tolerance = 1e-5f * Math.max(1f, Math.abs(expected[i]));
            assertThat(actual[i]).as("element %d", i).isCloseTo(expected[i],
                    org.assertj.core.data.Offset.offset(tolerance));
        }
    }

    @Test
    void affineBatchedOutputsEqualRunningEachRequestAlone() throws Exception {
        int[] samples = {1, 3, 2, 1};
        List<InferenceRequest> requests = new ArrayList<>();
        for (int i = 0; i < samples.length; i++) {
            requests.add(request("r" + i, "affine-fp32", affineInput(samples[i], i)));
        }

        try (OnnxModel model = load("affine-fp32")) {
            assertThat(model.outputNames()).containsExactlyInAnyOrder("y", "norm");
            List<List<Tensor>> batched = model.run(requests);

            for (int i = 0; i < requests.size(); i++) {
                List<Tensor> alone = model.run(List.of(requests.get(i))).get(0);
                for (String output : List.of("y", "norm")) {
                    Tensor b = find(batched.get(i), output);
                    Tensor a = find(alone, output);
                    assertThat(b.shape()).isEqualTo(a.shape());
                    assertClose(b.asFloats(), a.asFloats());
                }
                assertThat(find(batched.get(i), "y").shape()).containsExactly(samples[i], 3);
                assertThat(find(batched.get(i), "norm").shape()).containsExactly(samples[i], 1);
            }
        }
    }

    @Test
    void affineOutputsMatchTheDocumentedFormula() throws Exception {
        Tensor x = affineInput(5, 42);
        float[] in = x.asFloats();
        float[] expectedY = new float[5 * 3];
        float[] expectedNorm = new float[5];
        for (int s = 0; s < 5; s++) {
            for (int j = 0; j < 3; j++) {
                double acc = B[j];
                for (int k = 0; k < 4; k++) {
                    acc += (double) in[s * 4 + k] * W[k][j];
                }
                expectedY[s * 3 + j] = (float) acc;
            }
            double norm = 0;
            for (int k = 0; k < 4; k++) {
                norm += (double) in[s * 4 + k] * in[s * 4 + k];
            }
            expectedNorm[s] = (float) norm;
        }

        try (OnnxModel model = load("affine-fp32")) {
            List<List<Tensor>> both = model.run(List.of(request("r", "affine-fp32", x),
                    request("one-hot", "affine-fp32", Tensor.ofFloats("x", new long[] {1, 4}, 1, 0, 0, 0))));
            List<Tensor> out = both.get(0);
            List<Tensor> oneHot = both.get(1);

            assertClose(find(out, "y").asFloats(), expectedY);
            assertClose(find(out, "norm").asFloats(), expectedNorm);
            // x = e0 selects the first row of W
            assertClose(find(oneHot, "y").asFloats(), new float[] {W[0][0] + B[0], W[0][1] + B[1], W[0][2] + B[2]});
            assertClose(find(oneHot, "norm").asFloats(), new float[] {1f});
        }
    }

    // ---- seq-sum and two-inputs ----------------------------------------------------------

    @Test
    void seqSumReturnsEachSequencesSumForABatchOfSameLengthSequences() throws Exception {
        Tensor first = Tensor.ofLongs("tokens", new long[] {1, 5}, 1, 2, 3, 4, 5);
        Tensor second = Tensor.ofLongs("tokens", new long[] {2, 5}, 10, 20, 30, 40, 50, -1, -1, -1, -1, 1L << 40);
        Tensor third = Tensor.ofLongs("tokens", new long[] {1, 5}, 0, 0, 0, 0, 7);

        try (OnnxModel model = load("seq-sum")) {
            List<List<Tensor>> out = model.run(List.of(request("a", "seq-sum", first), request("b", "seq-sum", second),
                    request("c", "seq-sum", third)));

            assertThat(out.get(0).get(0).name()).isEqualTo("total");
            assertThat(out.get(0).get(0).datatype()).isEqualTo(DataType.INT64);
            assertThat(out.get(0).get(0).shape()).containsExactly(1, 1);
            assertThat(out.get(0).get(0).asLongs()).containsExactly(15);
            assertThat(out.get(1).get(0).shape()).containsExactly(2, 1);
            assertThat(out.get(1).get(0).asLongs()).containsExactly(150, (1L << 40) - 4);
            assertThat(out.get(2).get(0).asLongs()).containsExactly(7);
        }
    }

    @Test
    void seqSumAcceptsADifferentSequenceLengthInTheNextBatch() throws Exception {
        try (OnnxModel model = load("seq-sum")) {
            List<List<Tensor>> five = model.run(List.of(
                    request("a", "seq-sum", Tensor.ofLongs("tokens", new long[] {1, 5}, 1, 1, 1, 1, 1))));
            List<List<Tensor>> nine = model.run(List.of(
                    request("b", "seq-sum", Tensor.ofLongs("tokens", new long[] {2, 9}, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                            9, 9, 9, 9, 9, 9, 9, 9, 9))));

            assertThat(five.get(0).get(0).asLongs()).containsExactly(5);
            assertThat(nine.get(0).get(0).asLongs()).containsExactly(45, 81);
        }
    }

    @Test
    void twoInputsOfDifferentTypesAreStackedTogether() throws Exception {
        InferenceRequest r0 = request("r0", "two-inputs", Tensor.ofFloats("a", new long[] {1, 2}, 0.5f, -1.5f),
                Tensor.ofLongs("b", new long[] {1, 2}, 10, -20));
        // inputs deliberately in the other order
        InferenceRequest r1 = request("r1", "two-inputs", Tensor.ofLongs("b", new long[] {2, 2}, 1, 2, 3, 4),
                Tensor.ofFloats("a", new long[] {2, 2}, 0.25f, 0.75f, 100f, -100f));

        try (OnnxModel model = load("two-inputs")) {
            assertThat(model.inputTypes()).isEqualTo(Map.of("a", DataType.FP32, "b", DataType.INT64));
            List<List<Tensor>> out = model.run(List.of(r0, r1));

            Tensor s0 = out.get(0).get(0);
            Tensor s1 = out.get(1).get(0);
            assertThat(s0.name()).isEqualTo("sum");
            assertThat(s0.datatype()).isEqualTo(DataType.FP32);
            assertThat(s0.shape()).containsExactly(1, 2);
            assertThat(s0.asFloats()).containsExactly(10.5f, -21.5f);
            assertThat(s1.shape()).containsExactly(2, 2);
            assertThat(s1.asFloats()).containsExactly(1.25f, 2.75f, 103f, -96f);
        }
    }

    // ---- the real model -------------------------------------------------------------------

    /** Reads IDX images (16-byte header, then rows of unsigned bytes) scaled to [0, 1]. */
    private static float[][] readImages(Path file, int limit) throws IOException {
        try (DataInputStream in = new DataInputStream(new GZIPInputStream(Files.newInputStream(file)))) {
            assertThat(in.readInt()).as("IDX3 magic").isEqualTo(0x00000803);
            int count = in.readInt();
            assertThat(in.readInt()).isEqualTo(28);
            assertThat(in.readInt()).isEqualTo(28);
            int n = Math.min(count, limit);
            float[][] images = new float[n][PIXELS];
            byte[] row = new byte[PIXELS];
            for (int i = 0; i < n; i++) {
                in.readFully(row);
                for (int p = 0; p < PIXELS; p++) {
                    images[i][p] = (row[p] & 0xff) / 255f;
                }
            }
            return images;
        }
    }

    private static int[] readLabels(Path file, int limit) throws IOException {
        try (InputStream raw = new GZIPInputStream(Files.newInputStream(file));
                DataInputStream in = new DataInputStream(raw)) {
            assertThat(in.readInt()).as("IDX1 magic").isEqualTo(0x00000801);
            int n = Math.min(in.readInt(), limit);
            int[] labels = new int[n];
            for (int i = 0; i < n; i++) {
                labels[i] = in.readUnsignedByte();
            }
            return labels;
        }
    }

    private static Tensor imageBatch(float[][] images, int from, int count) {
        ByteBuffer b = ByteBuffer.allocate(count * PIXELS * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = from; i < from + count; i++) {
            for (float v : images[i]) {
                b.putFloat(v);
            }
        }
        return new Tensor("input", DataType.FP32, new long[] {count, 1, 28, 28}, b.array());
    }

    private static OnnxModel loadFashion() throws Exception {
        return OnnxModel.load(new ModelId("fashion-mnist-cnn", "1"), FASHION_MODEL, device);
    }

    @Test
    void fashionMnistBatchedLogitsEqualRunningEachRequestAlone() throws Exception {
        float[][] images = readImages(FASHION_IMAGES, 40);
        int[] samples = {1, 3, 2, 5, 1, 8};
        List<InferenceRequest> requests = new ArrayList<>();
        int offset = 0;
        for (int i = 0; i < samples.length; i++) {
            requests.add(request("img" + i, "fashion-mnist-cnn", imageBatch(images, offset, samples[i])));
            offset += samples[i];
        }

        try (OnnxModel model = loadFashion()) {
            assertThat(model.inputTypes()).isEqualTo(Map.of("input", DataType.FP32));
            assertThat(model.outputNames()).containsExactly("logits");
            List<List<Tensor>> batched = model.run(requests);

            offset = 0;
            for (int i = 0; i < samples.length; i++) {
                Tensor logits = batched.get(i).get(0);
                assertThat(logits.shape()).containsExactly(samples[i], 10);
                float[] got = logits.asFloats();
                // each image alone, one request of one sample each
                for (int s = 0; s < samples[i]; s++) {
                    float[] alone = model.run(List.of(request("single", "fashion-mnist-cnn",
                            imageBatch(images, offset + s, 1)))).get(0).get(0).asFloats();
                    float[] slice = java.util.Arrays.copyOfRange(got, s * 10, s * 10 + 10);
                    assertClose(slice, alone);
                }
                offset += samples[i];
            }
        }
    }

    @Test
    void fashionMnistClassifiesTheTestImagesAccurately() throws Exception {
        float[][] images = readImages(FASHION_IMAGES, 2000);
        int[] labels = readLabels(FASHION_LABELS, 2000);
        assertThat(images.length).isEqualTo(2000);
        assertThat(labels).hasSize(2000);

        int correct = 0;
        try (OnnxModel model = loadFashion()) {
            for (int from = 0; from < images.length; from += 64) {
                int count = Math.min(64, images.length - from);
                // split each 64-image batch into requests of 1, 7 and the rest
                List<InferenceRequest> requests = List.of(
                        request("a", "fashion-mnist-cnn", imageBatch(images, from, 1)),
                        request("b", "fashion-mnist-cnn", imageBatch(images, from + 1, Math.min(7, count - 1))));
                int used = 1 + Math.min(7, count - 1);
                if (count > used) {
                    requests = new ArrayList<>(requests);
                    requests.add(request("c", "fashion-mnist-cnn", imageBatch(images, from + used, count - used)));
                }
                List<List<Tensor>> out = model.run(requests);
                int index = from;
                for (List<Tensor> perRequest : out) {
                    float[] logits = perRequest.get(0).asFloats();
                    for (int s = 0; s < logits.length / 10; s++) {
                        int best = 0;
                        for (int c = 1; c < 10; c++) {
                            if (logits[s * 10 + c] > logits[s * 10 + best]) {
                                best = c;
                            }
                        }
                        if (best == labels[index]) {
                            correct++;
                        }
                        index++;
                    }
                }
                assertThat(index).isEqualTo(from + count);
            }
        }

        // The README documents 0.9205 on these 2,000 images; a mis-sliced batch would be near 0.1.
        assertThat(correct / 2000.0).isGreaterThan(0.9);
    }

    private static Tensor find(List<Tensor> tensors, String name) {
        for (Tensor t : tensors) {
            if (t.name().equals(name)) {
                return t;
            }
        }
        throw new AssertionError("no output " + name + " in " + tensors);
    }
}
