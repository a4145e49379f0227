package io.flinkgpu.inference.protocol;

import java.util.Locale;
import java.util.Optional;

/**
 * Tensor element types, named as in the Open Inference Protocol (KServe v2). Fixed-size types
 * travel as little-endian bytes; {@link #BYTES} elements are each a 4-byte little-endian length
 * followed by the bytes, the layout of the protocol's binary-data extension.
 */
public enum DataType {
    BOOL(1),
    UINT8(1),
    INT8(1),
    INT16(2),
    INT32(4),
    INT64(8),
    FP16(2),
    FP32(4),
    FP64(8),
    BYTES(-1);

    private final int elementSize;

    DataType(int elementSize) {
        this.elementSize = elementSize;
    }

    /** Bytes per element, or -1 for variable-length {@link #BYTES}. */
    public int elementSize() {
        return elementSize;
    }

    public boolean isFixedSize() {
        return elementSize > 0;
    }

    public boolean isFloatingPoint() {
        return this == FP16 || this == FP32 || this == FP64;
    }

    public static Optional<DataType> parse(String name) {
        if (name == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(DataType.valueOf(name.toUpperCase(Locale.ROOT)));
        } catch (IllegalArgumentException e) {
            return Optional.empty();
        }
    }
}
