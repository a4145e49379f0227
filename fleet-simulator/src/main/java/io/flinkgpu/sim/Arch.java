package io.flinkgpu.sim;

/**
 * The model architectures of the simulated catalogue: the benchmark scenarios' three (Fashion-MNIST
 * CNN, DLRM-shaped recommendation, MiniLM-L6-shaped NLP) and two larger encoders with published
 * datacenter-GPU latency tables (BERT-base at 128 tokens, BERT-large at 384 tokens), so that the
 * fleet carries models whose requests cost milliseconds of device time. {@link Calibration} holds
 * each one's speed per device kind and where the numbers come from.
 *
 * @param samplesPerRequest samples one request carries (a page of images, a user's candidates, a
 *     document's sentences): the batcher counts samples
 * @param fileBytes the model's size on disk: the real ONNX file where the repository or a benchmark
 *     run has one
 * @param memoryBytes the device memory declared for one loaded instance ({@code memory_bytes})
 */
public enum Arch {
    IMAGE_CNN("image-cnn", 32, 228_479L, 64L << 20),
    DLRM("dlrm", 256, 13_061_315L, 256L << 20),
    MINILM_L6("minilm-l6", 8, 90_388_550L, 256L << 20),
    BERT_BASE_128("bert-base-128", 1, 440_000_000L, 768L << 20),
    BERT_LARGE_384("bert-large-384", 1, 1_340_000_000L, 2048L << 20);

    private final String label;
    private final int samplesPerRequest;
    private final long fileBytes;
    private final long memoryBytes;

    Arch(String label, int samplesPerRequest, long fileBytes, long memoryBytes) {
        this.label = label;
        this.samplesPerRequest = samplesPerRequest;
        this.fileBytes = fileBytes;
        this.memoryBytes = memoryBytes;
    }

    public String label() {
        return label;
    }

    public int samplesPerRequest() {
        return samplesPerRequest;
    }

    public long fileBytes() {
        return fileBytes;
    }

    public long memoryBytes() {
        return memoryBytes;
    }
}
