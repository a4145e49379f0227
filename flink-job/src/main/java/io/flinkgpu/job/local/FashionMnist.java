package io.flinkgpu.job.local;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.GZIPInputStream;

/**
 * Real Fashion-MNIST test images shipped with the repository (IDX format, gzipped), as the
 * model's input: FP32 pixel/255 in [0, 1], shape [1, 28, 28] per image.
 */
public final class FashionMnist {
    public static final String IMAGES = "data/fashion-mnist/test-images-2000.idx3-ubyte.gz";
    public static final String LABELS = "data/fashion-mnist/test-labels-2000.idx1-ubyte.gz";
    public static final int PIXELS = 28 * 28;

    private final float[][] images;
    private final int[] labels;

    private FashionMnist(float[][] images, int[] labels) {
        this.images = images;
        this.labels = labels;
    }

    /** Loads the samples from {@code root} (the repository root). */
    public static FashionMnist load(Path root) throws IOException {
        byte[] rawImages = readIdx(root.resolve(IMAGES), 0x803);
        byte[] rawLabels = readIdx(root.resolve(LABELS), 0x801);
        int n = rawLabels.length;
        if (rawImages.length != n * PIXELS) {
            throw new IOException("images and labels disagree: " + rawImages.length + " bytes for " + n + " labels");
        }
        float[][] images = new float[n][PIXELS];
        int[] labels = new int[n];
        for (int i = 0; i < n; i++) {
            for (int p = 0; p < PIXELS; p++) {
                images[i][p] = (rawImages[i * PIXELS + p] & 0xff) / 255f;
            }
            labels[i] = rawLabels[i];
        }
        return new FashionMnist(images, labels);
    }

    private static byte[] readIdx(Path file, int magic) throws IOException {
        try (InputStream in = new GZIPInputStream(Files.newInputStream(file));
                DataInputStream data = new DataInputStream(in)) {
            int m = data.readInt();
            if (m != magic) {
                throw new IOException(file + ": magic " + Integer.toHexString(m) + ", expected " + Integer.toHexString(magic));
            }
            int dims = m & 0xff;
            long size = 1;
            for (int i = 0; i < dims; i++) {
                size *= data.readInt();
            }
            byte[] bytes = new byte[(int) size];
            data.readFully(bytes);
            return bytes;
        }
    }

    public int size() {
        return labels.length;
    }

    public float[] image(int i) {
        return images[i];
    }

    public int label(int i) {
        return labels[i];
    }

    /** Locates the repository root (holding {@code data/}) from the working directory upwards. */
    public static Path findRoot() {
        Path dir = Path.of("").toAbsolutePath();
        while (dir != null) {
            if (Files.isRegularFile(dir.resolve(IMAGES))) {
                return dir;
            }
            dir = dir.getParent();
        }
        throw new IllegalStateException("cannot find " + IMAGES + " above " + Path.of("").toAbsolutePath());
    }
}
