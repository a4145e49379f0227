package io.flinkgpu.inference.protocol;

import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A named tensor in the Open Inference Protocol layout. The element data is kept as raw bytes in
 * the protocol's binary layout (little-endian; BYTES elements length-prefixed) so that batching
 * is byte concatenation for every datatype and the binary wire format needs no conversion.
 *
 * <p>The arrays are not copied: treat a tensor as immutable once built.
 */
public final class Tensor implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final DataType datatype;
    private final long[] shape;
    private final byte[] data;

    public Tensor(String name, DataType datatype, long[] shape, byte[] data) {
        this.name = Objects.requireNonNull(name, "name");
        this.datatype = Objects.requireNonNull(datatype, "datatype");
        this.shape = Objects.requireNonNull(shape, "shape");
        this.data = Objects.requireNonNull(data, "data");
    }

    public String name() {
        return name;
    }

    public DataType datatype() {
        return datatype;
    }

    public long[] shape() {
        return shape;
    }

    /** Raw element bytes in the protocol's binary layout. */
    public byte[] data() {
        return data;
    }

    /** The product of the shape, or -1 if it overflows or a dimension is negative. */
    public long elementCount() {
        return elementCount(shape);
    }

    public static long elementCount(long[] shape) {
        long count = 1;
        for (long d : shape) {
            if (d < 0) {
                return -1;
            }
            try {
                count = Math.multiplyExact(count, d);
            } catch (ArithmeticException e) {
                return -1;
            }
        }
        return count;
    }

    /** Number of elements actually present in {@link #data()}, or -1 if BYTES framing is broken. */
    public long dataElementCount() {
        if (datatype.isFixedSize()) {
            return data.length % datatype.elementSize() == 0 ? data.length / datatype.elementSize() : -1;
        }
        ByteBuffer buf = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        long count = 0;
        while (buf.remaining() >= 4) {
            int len = buf.getInt();
            if (len < 0 || len > buf.remaining()) {
                return -1;
            }
            buf.position(buf.position() + len);
            count++;
        }
        return buf.remaining() == 0 ? count : -1;
    }

    /** The leading (batch) dimension. */
    public long batchSize() {
        return shape.length == 0 ? 1 : shape[0];
    }

    public Tensor withName(String newName) {
        return new Tensor(newName, datatype, shape, data);
    }

    // ---- builders -----------------------------------------------------------------------

    public static Tensor ofFloats(String name, long[] shape, float... values) {
        ByteBuffer b = buffer(values.length * 4L);
        for (float v : values) {
            b.putFloat(v);
        }
        return new Tensor(name, DataType.FP32, shape, b.array());
    }

    public static Tensor ofFp16(String name, long[] shape, float... values) {
        ByteBuffer b = buffer(values.length * 2L);
        for (float v : values) {
            b.putShort(Fp16.fromFloat(v));
        }
        return new Tensor(name, DataType.FP16, shape, b.array());
    }

    public static Tensor ofDoubles(String name, long[] shape, double... values) {
        ByteBuffer b = buffer(values.length * 8L);
        for (double v : values) {
            b.putDouble(v);
        }
        return new Tensor(name, DataType.FP64, shape, b.array());
    }

    public static Tensor ofLongs(String name, long[] shape, long... values) {
        ByteBuffer b = buffer(values.length * 8L);
        for (long v : values) {
            b.putLong(v);
        }
        return new Tensor(name, DataType.INT64, shape, b.array());
    }

    public static Tensor ofInts(String name, long[] shape, int... values) {
        ByteBuffer b = buffer(values.length * 4L);
        for (int v : values) {
            b.putInt(v);
        }
        return new Tensor(name, DataType.INT32, shape, b.array());
    }

    public static Tensor ofBooleans(String name, long[] shape, boolean... values) {
        byte[] bytes = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            bytes[i] = (byte) (values[i] ? 1 : 0);
        }
        return new Tensor(name, DataType.BOOL, shape, bytes);
    }

    public static Tensor ofStrings(String name, long[] shape, String... values) {
        List<byte[]> elements = new ArrayList<>(values.length);
        for (String v : values) {
            elements.add(v.getBytes(StandardCharsets.UTF_8));
        }
        return ofByteElements(name, shape, elements);
    }

    public static Tensor ofByteElements(String name, long[] shape, List<byte[]> elements) {
        long size = 0;
        for (byte[] e : elements) {
            size += 4 + e.length;
        }
        ByteBuffer b = buffer(size);
        for (byte[] e : elements) {
            b.putInt(e.length).put(e);
        }
        return new Tensor(name, DataType.BYTES, shape, b.array());
    }

    private static ByteBuffer buffer(long size) {
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("tensor of " + size + " bytes is too large");
        }
        return ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
    }

    // ---- readers ------------------------------------------------------------------------

    /** Values of an FP32, FP16 or FP64 tensor as floats. */
    public float[] asFloats() {
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        switch (datatype) {
            case FP32: {
                float[] out = new float[data.length / 4];
                b.asFloatBuffer().get(out);
                return out;
            }
            case FP16: {
                float[] out = new float[data.length / 2];
                for (int i = 0; i < out.length; i++) {
                    out[i] = Fp16.toFloat(b.getShort());
                }
                return out;
            }
            case FP64: {
                float[] out = new float[data.length / 8];
                for (int i = 0; i < out.length; i++) {
                    out[i] = (float) b.getDouble();
                }
                return out;
            }
            default:
                throw new IllegalStateException("not a floating-point tensor: " + datatype);
        }
    }

    /** Values of an integer or BOOL tensor as longs. */
    public long[] asLongs() {
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        int n = datatype.isFixedSize() ? data.length / datatype.elementSize() : 0;
        long[] out = new long[n];
        for (int i = 0; i < n; i++) {
            switch (datatype) {
                case BOOL:
                case INT8:
                    out[i] = b.get();
                    break;
                case UINT8:
                    out[i] = b.get() & 0xff;
                    break;
                case INT16:
                    out[i] = b.getShort();
                    break;
                case INT32:
                    out[i] = b.getInt();
                    break;
                case INT64:
                    out[i] = b.getLong();
                    break;
                default:
                    throw new IllegalStateException("not an integer tensor: " + datatype);
            }
        }
        return out;
    }

    /** Elements of a BYTES tensor. */
    public List<byte[]> asByteElements() {
        if (datatype != DataType.BYTES) {
            throw new IllegalStateException("not a BYTES tensor: " + datatype);
        }
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        List<byte[]> out = new ArrayList<>();
        while (b.remaining() >= 4) {
            byte[] e = new byte[b.getInt()];
            b.get(e);
            out.add(e);
        }
        return out;
    }

    public List<String> asStrings() {
        List<String> out = new ArrayList<>();
        for (byte[] e : asByteElements()) {
            out.add(new String(e, StandardCharsets.UTF_8));
        }
        return out;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) {
            return true;
        }
        if (!(o instanceof Tensor)) {
            return false;
        }
        Tensor t = (Tensor) o;
        return name.equals(t.name) && datatype == t.datatype && Arrays.equals(shape, t.shape)
                && Arrays.equals(data, t.data);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, datatype, Arrays.hashCode(shape), Arrays.hashCode(data));
    }

    @Override
    public String toString() {
        return "Tensor{" + name + ", " + datatype + Arrays.toString(shape) + ", " + data.length + " bytes}";
    }
}
