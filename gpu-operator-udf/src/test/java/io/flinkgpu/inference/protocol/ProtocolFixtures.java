package io.flinkgpu.inference.protocol;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;

/** Tensors of every datatype, with edge values, shared by the codec tests. */
final class ProtocolFixtures {
    private ProtocolFixtures() {}

    static final long[] SHAPE_2x3 = {2, 3};

    static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** One [2,3] tensor per datatype, each with that type's extreme values. */
    static Tensor tensorOf(DataType type) {
        String name = "t_" + type.name().toLowerCase();
        switch (type) {
            case BOOL:
                return Tensor.ofBooleans(name, SHAPE_2x3, true, false, true, true, false, false);
            case UINT8:
                return new Tensor(name, type, SHAPE_2x3, new byte[] {0, 1, 127, (byte) 128, (byte) 200, (byte) 255});
            case INT8:
                return new Tensor(name, type, SHAPE_2x3, new byte[] {-128, -1, 0, 1, 42, 127});
            case INT16: {
                ByteBuffer b = le(12);
                for (short v : new short[] {Short.MIN_VALUE, -1, 0, 1, 1234, Short.MAX_VALUE}) {
                    b.putShort(v);
                }
                return new Tensor(name, type, SHAPE_2x3, b.array());
            }
            case INT32:
                return Tensor.ofInts(name, SHAPE_2x3, Integer.MIN_VALUE, -1, 0, 1, 123456789, Integer.MAX_VALUE);
            case INT64:
                return Tensor.ofLongs(name, SHAPE_2x3, Long.MIN_VALUE, -1, 0, 1, 1L << 53 | 1, Long.MAX_VALUE);
            case FP16:
                // all exactly representable in binary16
                return Tensor.ofFp16(name, SHAPE_2x3, 0f, -0f, 1.5f, -65504f, 0x1p-24f, 0.333251953125f);
            case FP32:
                return Tensor.ofFloats(name, SHAPE_2x3, 0f, -0f, 0.1f, -3.4028235e38f, Float.MIN_VALUE, 1.17549435e-38f);
            case FP64:
                return Tensor.ofDoubles(name, SHAPE_2x3, 0d, -0d, 0.1d, -Double.MAX_VALUE, Double.MIN_VALUE, Math.PI);
            case BYTES:
                return Tensor.ofStrings(name, SHAPE_2x3, "", "a", "h\u00e9llo", "\u65e5\u672c", "\ud83d\ude00",
                        "quote \" and \\ backslash\n");
            default:
                throw new IllegalArgumentException(type.name());
        }
    }

    static InferenceRequest requestWith(Tensor... inputs) {
        return new InferenceRequest("req-1", "model-a", "3", List.of(inputs), new RequestParameters(2, 250, "acme"));
    }
}
