package io.flinkgpu.bench.scenario;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Appends sentence-transformers' pooling head to a BERT-style ONNX encoder whose one output is
 * {@code last_hidden_state [batch, seq, hidden]}: attention-masked mean pooling over the sequence,
 * then L2 normalisation (all-MiniLM-L6-v2's {@code Pooling(mean)} + {@code Normalize} modules,
 * including their clamps: token count at least 1e-9, norm at least 1e-12). The new graph output
 * is {@code sentence_embedding [batch, hidden]} and replaces {@code last_hidden_state}, so a
 * response carries 384 floats instead of seq x 384.
 *
 * <p>The edit is done on the protobuf wire format directly (no ONNX protobuf classes are on the
 * classpath): every field of the model and of its graph is copied byte for byte except the graph's
 * outputs, and the pooling nodes are appended after the encoder's nodes, which keeps the graph
 * topologically sorted. Field numbers are those of onnx.proto. Opset 11 and 12 forms only
 * ({@code axes} as attributes), which is what the MiniLM exports use.
 */
public final class SentenceEmbeddingHead {
    public static final String INPUT_MASK = "attention_mask";
    public static final String HIDDEN = "last_hidden_state";
    public static final String OUTPUT = "sentence_embedding";

    // onnx.proto field numbers
    private static final int MODEL_OPSET_IMPORT = 8;
    private static final int MODEL_GRAPH = 7;
    private static final int GRAPH_NODE = 1;
    private static final int GRAPH_OUTPUT = 12;
    private static final int OPSET_DOMAIN = 1;
    private static final int OPSET_VERSION = 2;
    private static final int VALUE_INFO_NAME = 1;
    private static final int VALUE_INFO_TYPE = 2;
    private static final int TYPE_TENSOR = 1;
    private static final int TENSOR_TYPE_ELEM = 1;
    private static final int TENSOR_TYPE_SHAPE = 2;
    private static final int SHAPE_DIM = 1;
    private static final int DIM_VALUE = 1;
    private static final int DIM_PARAM = 2;
    private static final int NODE_INPUT = 1;
    private static final int NODE_OUTPUT = 2;
    private static final int NODE_NAME = 3;
    private static final int NODE_OP_TYPE = 4;
    private static final int NODE_ATTRIBUTE = 5;
    private static final int ATTR_NAME = 1;
    private static final int ATTR_I = 3;
    private static final int ATTR_T = 5;
    private static final int ATTR_INTS = 8;
    private static final int ATTR_TYPE = 20;
    private static final int ATTR_TYPE_INT = 2;
    private static final int ATTR_TYPE_TENSOR = 4;
    private static final int ATTR_TYPE_INTS = 7;
    private static final int TENSOR_DATA_TYPE = 2;
    private static final int TENSOR_NAME = 8;
    private static final int TENSOR_RAW_DATA = 9;
    private static final int ELEM_FLOAT = 1;

    private SentenceEmbeddingHead() {}

    /** The model with the pooling head appended; {@code hidden} is the encoder's width (384 for MiniLM). */
    public static byte[] append(byte[] model, int hidden) {
        int opset = defaultOpset(model);
        if (opset < 1 || opset >= 13) {
            throw new IllegalArgumentException("opset " + opset + ": only opset 1..12 (axes as attributes) is supported");
        }
        Out out = new Out();
        boolean sawGraph = false;
        for (Field f : fields(model, 0, model.length)) {
            if (f.number == MODEL_GRAPH && f.wireType == 2) {
                out.message(MODEL_GRAPH, editGraph(model, f, hidden));
                sawGraph = true;
            } else {
                out.raw(model, f.start, f.end);
            }
        }
        if (!sawGraph) {
            throw new IllegalArgumentException("not an ONNX model: no graph");
        }
        return out.bytes();
    }

    private static byte[] editGraph(byte[] b, Field graph, int hidden) {
        Out out = new Out();
        boolean sawHidden = false;
        String batchParam = "batch_size";
        for (Field f : fields(b, graph.payload, graph.end)) {
            if (f.number == GRAPH_OUTPUT && f.wireType == 2) {
                String name = stringField(b, f, VALUE_INFO_NAME);
                if (HIDDEN.equals(name)) {
                    sawHidden = true;
                    continue;
                }
            }
            out.raw(b, f.start, f.end);
        }
        if (!sawHidden) {
            throw new IllegalArgumentException("the graph has no output " + HIDDEN);
        }
        String p = "pooling/";
        out.message(GRAPH_NODE, node("Cast", p + "cast", List.of(INPUT_MASK), p + "mask", intAttr("to", ELEM_FLOAT)));
        out.message(GRAPH_NODE, node("Unsqueeze", p + "unsqueeze", List.of(p + "mask"), p + "mask3",
                intsAttr("axes", 2)));
        out.message(GRAPH_NODE, node("Mul", p + "mul", List.of(HIDDEN, p + "mask3"), p + "masked"));
        out.message(GRAPH_NODE, node("ReduceSum", p + "sum", List.of(p + "masked"), p + "sum",
                intsAttr("axes", 1), intAttr("keepdims", 0)));
        out.message(GRAPH_NODE, node("ReduceSum", p + "count", List.of(p + "mask3"), p + "count",
                intsAttr("axes", 1), intAttr("keepdims", 0)));
        out.message(GRAPH_NODE, node("Constant", p + "min_count", List.of(), p + "min_count",
                scalarAttr("value", p + "min_count", 1e-9f)));
        out.message(GRAPH_NODE, node("Max", p + "clamp_count", List.of(p + "count", p + "min_count"),
                p + "count_clamped"));
        out.message(GRAPH_NODE, node("Div", p + "mean", List.of(p + "sum", p + "count_clamped"), p + "mean"));
        out.message(GRAPH_NODE, node("ReduceL2", p + "norm", List.of(p + "mean"), p + "norm",
                intsAttr("axes", 1), intAttr("keepdims", 1)));
        out.message(GRAPH_NODE, node("Constant", p + "min_norm", List.of(), p + "min_norm",
                scalarAttr("value", p + "min_norm", 1e-12f)));
        out.message(GRAPH_NODE, node("Max", p + "clamp_norm", List.of(p + "norm", p + "min_norm"),
                p + "norm_clamped"));
        out.message(GRAPH_NODE, node("Div", p + "normalize", List.of(p + "mean", p + "norm_clamped"), OUTPUT));
        out.message(GRAPH_OUTPUT, valueInfo(OUTPUT, batchParam, hidden));
        return out.bytes();
    }

    /** The version of the default ("" or "ai.onnx") operator set the model imports, or -1. */
    static int defaultOpset(byte[] model) {
        for (Field f : fields(model, 0, model.length)) {
            if (f.number == MODEL_OPSET_IMPORT && f.wireType == 2) {
                String domain = "";
                long version = -1;
                for (Field g : fields(model, f.payload, f.end)) {
                    if (g.number == OPSET_DOMAIN && g.wireType == 2) {
                        domain = new String(model, g.payload, g.end - g.payload, StandardCharsets.UTF_8);
                    } else if (g.number == OPSET_VERSION && g.wireType == 0) {
                        version = g.varint;
                    }
                }
                if (domain.isEmpty() || domain.equals("ai.onnx")) {
                    return (int) version;
                }
            }
        }
        return -1;
    }

    private static byte[] node(String op, String name, List<String> inputs, String output, byte[]... attributes) {
        Out n = new Out();
        for (String in : inputs) {
            n.string(NODE_INPUT, in);
        }
        n.string(NODE_OUTPUT, output);
        n.string(NODE_NAME, name);
        n.string(NODE_OP_TYPE, op);
        for (byte[] a : attributes) {
            n.message(NODE_ATTRIBUTE, a);
        }
        return n.bytes();
    }

    private static byte[] intAttr(String name, long value) {
        Out a = new Out();
        a.string(ATTR_NAME, name);
        a.varintField(ATTR_I, value);
        a.varintField(ATTR_TYPE, ATTR_TYPE_INT);
        return a.bytes();
    }

    private static byte[] intsAttr(String name, long... values) {
        Out a = new Out();
        a.string(ATTR_NAME, name);
        for (long v : values) {
            a.varintField(ATTR_INTS, v);
        }
        a.varintField(ATTR_TYPE, ATTR_TYPE_INTS);
        return a.bytes();
    }

    private static byte[] scalarAttr(String name, String tensorName, float value) {
        Out t = new Out();
        t.varintField(TENSOR_DATA_TYPE, ELEM_FLOAT);
        t.string(TENSOR_NAME, tensorName);
        t.message(TENSOR_RAW_DATA, ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(value).array());
        Out a = new Out();
        a.string(ATTR_NAME, name);
        a.message(ATTR_T, t.bytes());
        a.varintField(ATTR_TYPE, ATTR_TYPE_TENSOR);
        return a.bytes();
    }

    private static byte[] valueInfo(String name, String batchParam, int hidden) {
        Out batch = new Out();
        batch.string(DIM_PARAM, batchParam);
        Out width = new Out();
        width.varintField(DIM_VALUE, hidden);
        Out shape = new Out();
        shape.message(SHAPE_DIM, batch.bytes());
        shape.message(SHAPE_DIM, width.bytes());
        Out tensor = new Out();
        tensor.varintField(TENSOR_TYPE_ELEM, ELEM_FLOAT);
        tensor.message(TENSOR_TYPE_SHAPE, shape.bytes());
        Out type = new Out();
        type.message(TYPE_TENSOR, tensor.bytes());
        Out v = new Out();
        v.string(VALUE_INFO_NAME, name);
        v.message(VALUE_INFO_TYPE, type.bytes());
        return v.bytes();
    }

    // ---- minimal protobuf wire format ----------------------------------------------------

    /** One field: its whole encoding is {@code [start, end)}; a length-delimited payload starts at {@code payload}. */
    record Field(int number, int wireType, int start, int payload, int end, long varint) {}

    static List<Field> fields(byte[] b, int from, int to) {
        List<Field> out = new ArrayList<>();
        int[] pos = {from};
        while (pos[0] < to) {
            int start = pos[0];
            long tag = readVarint(b, pos);
            int number = (int) (tag >>> 3);
            int wireType = (int) (tag & 7);
            long varint = 0;
            int payload = pos[0];
            switch (wireType) {
                case 0 -> varint = readVarint(b, pos);
                case 1 -> pos[0] += 8;
                case 2 -> {
                    long len = readVarint(b, pos);
                    payload = pos[0];
                    pos[0] = Math.addExact(pos[0], Math.toIntExact(len));
                }
                case 5 -> pos[0] += 4;
                default -> throw new IllegalArgumentException("unsupported protobuf wire type " + wireType + " at "
                        + start);
            }
            if (pos[0] > to) {
                throw new IllegalArgumentException("truncated protobuf field " + number + " at " + start);
            }
            out.add(new Field(number, wireType, start, payload, pos[0], varint));
        }
        return out;
    }

    private static String stringField(byte[] b, Field message, int number) {
        for (Field g : fields(b, message.payload, message.end)) {
            if (g.number == number && g.wireType == 2) {
                return new String(b, g.payload, g.end - g.payload, StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    private static long readVarint(byte[] b, int[] pos) {
        long v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            byte x = b[pos[0]++];
            v |= (long) (x & 0x7f) << shift;
            if (x >= 0) {
                return v;
            }
        }
        throw new IllegalArgumentException("malformed varint");
    }

    private static final class Out {
        private final ByteArrayOutputStream s = new ByteArrayOutputStream();

        void raw(byte[] b, int from, int to) {
            s.write(b, from, to - from);
        }

        void varint(long v) {
            while ((v & ~0x7fL) != 0) {
                s.write((int) ((v & 0x7f) | 0x80));
                v >>>= 7;
            }
            s.write((int) v);
        }

        void varintField(int number, long v) {
            varint((long) number << 3);
            varint(v);
        }

        void message(int number, byte[] payload) {
            varint(((long) number << 3) | 2);
            varint(payload.length);
            s.write(payload, 0, payload.length);
        }

        void string(int number, String value) {
            message(number, value.getBytes(StandardCharsets.UTF_8));
        }

        byte[] bytes() {
            return s.toByteArray();
        }
    }
}
