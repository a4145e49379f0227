package io.flinkgpu.sql;

import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.Fp16;
import io.flinkgpu.inference.protocol.Tensor;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;

/**
 * One SQL column bound to one model tensor, checked when the query is planned and converted per
 * row. A column is a scalar (one element per row), an {@code ARRAY} of the elements in row-major
 * order (the tensor's shape comes from the model; one variable dimension is taken from the
 * array's length), nested {@code ARRAY}s with one level per dimension of the tensor, or, for a
 * numeric tensor, {@code BYTES} holding its elements as raw little-endian bytes (the binary
 * protocol's layout: no parsing, the row's bytes become the tensor's).
 *
 * <table>
 *   <caption>SQL element types and tensor data types</caption>
 *   <tr><th>SQL</th><th>tensor</th></tr>
 *   <tr><td>FLOAT</td><td>FP32 (and FP16, converted)</td></tr>
 *   <tr><td>DOUBLE</td><td>FP64</td></tr>
 *   <tr><td>BIGINT / INT / SMALLINT / TINYINT</td><td>INT64 / INT32 / INT16 / INT8</td></tr>
 *   <tr><td>BOOLEAN</td><td>BOOL</td></tr>
 *   <tr><td>STRING, BYTES</td><td>BYTES (UTF-8 for STRING)</td></tr>
 * </table>
 */
final class TensorColumn implements Serializable {
    private static final long serialVersionUID = 1L;

    final String column;
    final TensorSpec spec;
    /** Nesting depth of the column's type: 0 for a scalar, 1 for ARRAY, 2 for ARRAY of ARRAY, ... */
    final int depth;
    final LogicalTypeRoot element;
    /** A BYTES column holding a numeric tensor's elements as raw little-endian bytes (the binary protocol's layout). */
    final boolean raw;

    private TensorColumn(String column, TensorSpec spec, int depth, LogicalTypeRoot element, boolean raw) {
        this.column = column;
        this.spec = spec;
        this.depth = depth;
        this.element = element;
        this.raw = raw;
    }

    /** Binds {@code column} of type {@code type} to the model's tensor {@code spec}, or says why it cannot. */
    static TensorColumn bind(String side, String column, LogicalType type, TensorSpec spec) {
        int depth = 0;
        LogicalType t = type;
        while (t.getTypeRoot() == LogicalTypeRoot.ARRAY) {
            depth++;
            t = ((ArrayType) t).getElementType();
        }
        LogicalTypeRoot element = t.getTypeRoot();
        Optional<DataType> expected = tensorType(element);
        String what = side + " column '" + column + "' (" + type.asSummaryString() + ") for tensor " + spec;
        if (expected.isEmpty()) {
            throw new ValidationException(what + ": " + element + " elements are not supported; use FLOAT, DOUBLE, "
                    + "BIGINT, INT, SMALLINT, TINYINT, BOOLEAN, STRING or BYTES, or ARRAYs of them");
        }
        DataType want = spec.datatype();
        if (depth == 0 && (element == LogicalTypeRoot.BINARY || element == LogicalTypeRoot.VARBINARY)
                && want.isFixedSize()) {
            long variable = Arrays.stream(spec.shape()).filter(d -> d < 0).count();
            if (variable > 1) {
                throw new ValidationException(what + ": raw bytes cannot give " + variable
                        + " variable dimensions; declare nested ARRAYs");
            }
            return new TensorColumn(column, spec, 0, element, true);
        }
        boolean compatible = expected.get() == want || (want == DataType.FP16 && element == LogicalTypeRoot.FLOAT)
                || (want == DataType.UINT8 && element == LogicalTypeRoot.TINYINT);
        if (!compatible) {
            throw new ValidationException(what + ": the tensor holds " + want + ", the column " + element
                    + "; declare the column as " + sqlTypeOf(want));
        }
        int rank = spec.shape().length;
        int variable = (int) Arrays.stream(spec.shape()).filter(d -> d < 0).count();
        if (depth == 0 && !(spec.fixedElementsPerSample() == 1)) {
            throw new ValidationException(what + ": a scalar column needs a tensor of one element per row; declare "
                    + "it as ARRAY<" + sqlTypeOf(want) + "> (row-major) or with " + rank + " nested ARRAYs");
        }
        if (depth == 1 && variable > 1) {
            throw new ValidationException(what + ": a flat ARRAY cannot give " + variable
                    + " variable dimensions; declare it with " + rank + " nested ARRAYs");
        }
        if (depth > 1 && depth != rank) {
            throw new ValidationException(what + ": " + depth + " nested ARRAYs for a tensor of " + rank
                    + " dimensions per row; use one ARRAY (row-major) or " + rank + " nested ARRAYs");
        }
        return new TensorColumn(column, spec, depth, element, false);
    }

    static Optional<DataType> tensorType(LogicalTypeRoot root) {
        switch (root) {
            case FLOAT: return Optional.of(DataType.FP32);
            case DOUBLE: return Optional.of(DataType.FP64);
            case BIGINT: return Optional.of(DataType.INT64);
            case INTEGER: return Optional.of(DataType.INT32);
            case SMALLINT: return Optional.of(DataType.INT16);
            case TINYINT: return Optional.of(DataType.INT8);
            case BOOLEAN: return Optional.of(DataType.BOOL);
            case CHAR:
            case VARCHAR:
            case BINARY:
            case VARBINARY: return Optional.of(DataType.BYTES);
            default: return Optional.empty();
        }
    }

    static String sqlTypeOf(DataType t) {
        switch (t) {
            case FP16:
            case FP32: return "FLOAT";
            case FP64: return "DOUBLE";
            case INT64: return "BIGINT";
            case INT32: return "INT";
            case INT16: return "SMALLINT";
            case INT8:
            case UINT8: return "TINYINT";
            case BOOL: return "BOOLEAN";
            default: return "STRING";
        }
    }

    /** A row's value the model cannot take; becomes an error of the row, never of the task. */
    static final class BadValue extends Exception {
        final io.flinkgpu.inference.protocol.ErrorCode code;

        BadValue(io.flinkgpu.inference.protocol.ErrorCode code, String message) {
            super(message, null, false, false);
            this.code = code;
        }
    }

    // ---- row -> tensor ----------------------------------------------------------------------

    /** The tensor of field {@code pos} of {@code row}: shape [1, ...], bytes written once. */
    Tensor toTensor(RowData row, int pos) throws BadValue {
        if (row.isNullAt(pos)) {
            throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.MISSING_INPUT,
                    "column '" + column + "' is null");
        }
        if (raw) {
            byte[] bytes = row.getBinary(pos);
            int size = spec.datatype().elementSize();
            if (bytes.length % size != 0) {
                throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH, "column '" + column
                        + "' has " + bytes.length + " bytes, not a whole number of " + spec.datatype() + " elements");
            }
            long[] sampleShape = flatShape(bytes.length / size);
            long[] shape = new long[sampleShape.length + 1];
            shape[0] = 1;
            System.arraycopy(sampleShape, 0, shape, 1, sampleShape.length);
            return new Tensor(spec.name(), spec.datatype(), shape, bytes); // the row's bytes, not copied
        }
        if (depth == 0) {
            return encode(spec.shape(), 1, (b, i) -> writeScalar(b, row, pos));
        }
        ArrayData array = row.getArray(pos);
        if (depth == 1) {
            int n = array.size();
            long[] sampleShape = flatShape(n);
            checkNoNulls(array);
            return encode(sampleShape, n, (b, i) -> writeElement(b, array, i));
        }
        // Nested: lengths from the first element of each level, every sibling checked.
        long[] dims = new long[depth];
        collectDims(array, 0, dims);
        long[] declared = spec.shape();
        for (int d = 0; d < depth; d++) {
            if (declared[d] > 0 && declared[d] != dims[d]) {
                throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH, "column '" + column
                        + "' has " + dims[d] + " elements in dimension " + (d + 1) + ", the model's " + spec
                        + " needs " + declared[d]);
            }
        }
        List<ArrayData> innermost = new ArrayList<>();
        flatten(array, 0, dims, innermost);
        int inner = (int) dims[depth - 1];
        int total = innermost.size() * inner;
        return encode(dims, total, (b, i) -> writeElement(b, innermost.get(i / inner), i % inner));
    }

    private void collectDims(ArrayData a, int level, long[] dims) throws BadValue {
        dims[level] = a.size();
        if (a.size() == 0) {
            throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH,
                    "column '" + column + "' has an empty array in dimension " + (level + 1));
        }
        if (level + 1 < dims.length) {
            if (a.isNullAt(0)) {
                throw nullElement();
            }
            collectDims(a.getArray(0), level + 1, dims);
        }
    }

    private void flatten(ArrayData a, int level, long[] dims, List<ArrayData> out) throws BadValue {
        if (a.size() != dims[level]) {
            throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH, "column '" + column
                    + "' is ragged: " + a.size() + " elements in dimension " + (level + 1) + " where the first has "
                    + dims[level]);
        }
        if (level == dims.length - 1) {
            checkNoNulls(a);
            out.add(a);
            return;
        }
        for (int i = 0; i < a.size(); i++) {
            if (a.isNullAt(i)) {
                throw nullElement();
            }
            flatten(a.getArray(i), level + 1, dims, out);
        }
    }

    private void checkNoNulls(ArrayData a) throws BadValue {
        for (int i = 0; i < a.size(); i++) {
            if (a.isNullAt(i)) {
                throw nullElement();
            }
        }
    }

    private BadValue nullElement() {
        return new BadValue(io.flinkgpu.inference.protocol.ErrorCode.INVALID_FIELD,
                "column '" + column + "' holds a null element");
    }

    /** The per-row shape of a flat array of {@code n} elements (the variable dimension, if any, from n). */
    private long[] flatShape(int n) throws BadValue {
        long[] shape = spec.shape();
        long fixed = 1;
        int variableAt = -1;
        for (int d = 0; d < shape.length; d++) {
            if (shape[d] < 0) {
                variableAt = d;
            } else {
                fixed *= shape[d];
            }
        }
        if (variableAt < 0) {
            if (n != fixed) {
                throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH, "column '" + column
                        + "' has " + n + " elements, the model's " + spec + " needs " + fixed);
            }
            return shape;
        }
        if (n == 0 || n % fixed != 0) {
            throw new BadValue(io.flinkgpu.inference.protocol.ErrorCode.SHAPE_MISMATCH, "column '" + column
                    + "' has " + n + " elements, not a positive multiple of the " + fixed + " the model's " + spec
                    + " fixes");
        }
        shape[variableAt] = n / fixed;
        return shape;
    }

    private interface Writer {
        void write(ElementSink sink, int index);
    }

    /** Appends elements to the tensor's bytes: fixed-size ones little-endian, BYTES ones as a list. */
    private static final class ElementSink {
        final ByteBuffer fixed;
        final List<byte[]> variable;

        ElementSink(ByteBuffer fixed, List<byte[]> variable) {
            this.fixed = fixed;
            this.variable = variable;
        }
    }

    private Tensor encode(long[] sampleShape, int count, Writer writer) {
        long[] shape = new long[sampleShape.length + 1];
        shape[0] = 1;
        System.arraycopy(sampleShape, 0, shape, 1, sampleShape.length);
        DataType type = spec.datatype();
        if (type == DataType.BYTES) {
            List<byte[]> elements = new ArrayList<>(count);
            ElementSink sink = new ElementSink(null, elements);
            for (int i = 0; i < count; i++) {
                writer.write(sink, i);
            }
            return Tensor.ofByteElements(spec.name(), shape, elements);
        }
        ByteBuffer b = ByteBuffer.allocate(count * type.elementSize()).order(ByteOrder.LITTLE_ENDIAN);
        ElementSink sink = new ElementSink(b, null);
        for (int i = 0; i < count; i++) {
            writer.write(sink, i);
        }
        return new Tensor(spec.name(), type, shape, b.array());
    }

    private void writeElement(ElementSink s, ArrayData a, int i) {
        switch (element) {
            case FLOAT:
                if (spec.datatype() == DataType.FP16) {
                    s.fixed.putShort(Fp16.fromFloat(a.getFloat(i)));
                } else {
                    s.fixed.putFloat(a.getFloat(i));
                }
                break;
            case DOUBLE: s.fixed.putDouble(a.getDouble(i)); break;
            case BIGINT: s.fixed.putLong(a.getLong(i)); break;
            case INTEGER: s.fixed.putInt(a.getInt(i)); break;
            case SMALLINT: s.fixed.putShort(a.getShort(i)); break;
            case TINYINT: s.fixed.put(a.getByte(i)); break;
            case BOOLEAN: s.fixed.put((byte) (a.getBoolean(i) ? 1 : 0)); break;
            case CHAR:
            case VARCHAR: s.variable.add(a.getString(i).toBytes()); break;
            default: s.variable.add(a.getBinary(i)); break;
        }
    }

    private void writeScalar(ElementSink s, RowData r, int pos) {
        switch (element) {
            case FLOAT:
                if (spec.datatype() == DataType.FP16) {
                    s.fixed.putShort(Fp16.fromFloat(r.getFloat(pos)));
                } else {
                    s.fixed.putFloat(r.getFloat(pos));
                }
                break;
            case DOUBLE: s.fixed.putDouble(r.getDouble(pos)); break;
            case BIGINT: s.fixed.putLong(r.getLong(pos)); break;
            case INTEGER: s.fixed.putInt(r.getInt(pos)); break;
            case SMALLINT: s.fixed.putShort(r.getShort(pos)); break;
            case TINYINT: s.fixed.put(r.getByte(pos)); break;
            case BOOLEAN: s.fixed.put((byte) (r.getBoolean(pos) ? 1 : 0)); break;
            case CHAR:
            case VARCHAR: s.variable.add(r.getString(pos).toBytes()); break;
            default: s.variable.add(r.getBinary(pos)); break;
        }
    }

    // ---- tensor -> field ---------------------------------------------------------------------

    /** The SQL value of an output tensor of one row (its leading batch dimension of 1 dropped). */
    Object toField(Tensor t) {
        if (raw) {
            return t.data();
        }
        long[] shape = t.shape();
        int count = (int) t.elementCount();
        ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
        List<byte[]> strings = t.datatype() == DataType.BYTES ? t.asByteElements() : null;
        if (depth == 0) {
            return read(t.datatype(), b, strings, 0);
        }
        if (depth == 1) {
            return array(t.datatype(), b, strings, 0, count);
        }
        // Nested: one level per dimension after the batch dimension.
        long[] dims = Arrays.copyOfRange(shape, shape.length - depth, shape.length);
        return nested(t.datatype(), b, strings, dims, 0, new int[] {0});
    }

    private Object nested(DataType type, ByteBuffer b, List<byte[]> strings, long[] dims, int level, int[] next) {
        if (level == dims.length - 1) {
            GenericArrayData a = array(type, b, strings, next[0], (int) dims[level]);
            next[0] += (int) dims[level];
            return a;
        }
        Object[] children = new Object[(int) dims[level]];
        for (int i = 0; i < children.length; i++) {
            children[i] = nested(type, b, strings, dims, level + 1, next);
        }
        return new GenericArrayData(children);
    }

    private GenericArrayData array(DataType type, ByteBuffer b, List<byte[]> strings, int from, int n) {
        switch (element) {
            case FLOAT: {
                float[] v = new float[n];
                for (int i = 0; i < n; i++) {
                    v[i] = type == DataType.FP16 ? Fp16.toFloat(b.getShort((from + i) * 2)) : b.getFloat((from + i) * 4);
                }
                return new GenericArrayData(v);
            }
            case DOUBLE: {
                double[] v = new double[n];
                for (int i = 0; i < n; i++) {
                    v[i] = b.getDouble((from + i) * 8);
                }
                return new GenericArrayData(v);
            }
            case BIGINT: {
                long[] v = new long[n];
                for (int i = 0; i < n; i++) {
                    v[i] = b.getLong((from + i) * 8);
                }
                return new GenericArrayData(v);
            }
            case INTEGER: {
                int[] v = new int[n];
                for (int i = 0; i < n; i++) {
                    v[i] = b.getInt((from + i) * 4);
                }
                return new GenericArrayData(v);
            }
            default: {
                Object[] v = new Object[n];
                for (int i = 0; i < n; i++) {
                    v[i] = read(type, b, strings, from + i);
                }
                return new GenericArrayData(v);
            }
        }
    }

    private Object read(DataType type, ByteBuffer b, List<byte[]> strings, int i) {
        switch (element) {
            case FLOAT: return type == DataType.FP16 ? Fp16.toFloat(b.getShort(i * 2)) : b.getFloat(i * 4);
            case DOUBLE: return b.getDouble(i * 8);
            case BIGINT: return b.getLong(i * 8);
            case INTEGER: return b.getInt(i * 4);
            case SMALLINT: return b.getShort(i * 2);
            case TINYINT: return b.get(i);
            case BOOLEAN: return b.get(i) != 0;
            case CHAR:
            case VARCHAR: return StringData.fromString(new String(strings.get(i), StandardCharsets.UTF_8));
            default: return strings.get(i);
        }
    }
}
