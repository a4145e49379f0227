package io.flinkgpu.inference.execution;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.Tensor;
import java.lang.reflect.Array;
import java.nio.ByteBuffer;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A loaded model: one ONNX Runtime session, shared by every thread that runs batches on it
 * (sessions are thread-safe). {@link #run} stacks a batch's requests into one tensor per input
 * along the batch dimension, runs the session once, and splits every output back per request.
 *
 * <p>Fixed-size inputs are stacked into direct buffers that each thread keeps and reuses, so a
 * steady stream of batches allocates no new input buffers.
 */
public final class OnnxModel implements AutoCloseable {
    private final ModelId id;
    private final Device device;
    private final OrtEnvironment env;
    private final OrtSession session;
    private final Map<String, DataType> inputTypes;
    private final List<String> outputNames;
    private final ThreadLocal<Map<String, ByteBuffer>> buffers = ThreadLocal.withInitial(HashMap::new);

    private OnnxModel(ModelId id, Device device, OrtEnvironment env, OrtSession session) throws OrtException {
        this.id = id;
        this.device = device;
        this.env = env;
        this.session = session;
        Map<String, DataType> types = new LinkedHashMap<>();
        for (Map.Entry<String, NodeInfo> e : session.getInputInfo().entrySet()) {
            types.put(e.getKey(), dataTypeOf(e.getValue()));
        }
        this.inputTypes = types;
        this.outputNames = new ArrayList<>(session.getOutputNames());
    }

    public static OnnxModel load(ModelId id, Path file, Device device) throws OrtException {
        byte[] bytes;
        try {
            bytes = Files.readAllBytes(file);
        } catch (IOException e) {
            throw new OrtException("cannot read " + file + ": " + e.getMessage());
        }
        return load(id, bytes, device);
    }

    /** Creates the session on {@code device} from a serialized model (the host copy the model cache keeps). */
    public static OnnxModel load(ModelId id, byte[] model, Device device) throws OrtException {
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        OrtSession session = device.createSession(env, model);
        try {
            return new OnnxModel(id, device, env, session);
        } catch (OrtException | RuntimeException e) {
            session.close();
            throw e;
        }
    }

    public Device device() {
        return device;
    }

    public ModelId id() {
        return id;
    }

    /** The datatypes the session expects, by input name. */
    public Map<String, DataType> inputTypes() {
        return inputTypes;
    }

    public List<String> outputNames() {
        return outputNames;
    }

    /**
     * Runs the requests as one batch. All requests must carry every model input with identical
     * non-batch dimensions (the batcher groups them so).
     *
     * @return the outputs of each request, in request order
     */
    public List<List<Tensor>> run(List<InferenceRequest> requests) throws OrtException {
        int[] samples = new int[requests.size()];
        int total = 0;
        for (int i = 0; i < samples.length; i++) {
            samples[i] = requests.get(i).batchSize();
            total += samples[i];
        }
        Map<String, OnnxTensor> feeds = new LinkedHashMap<>();
        try {
            for (Map.Entry<String, DataType> input : inputTypes.entrySet()) {
                feeds.put(input.getKey(), stack(input.getKey(), input.getValue(), requests, total));
            }
            try (OrtSession.Result result = device.execute(id.name(), id.version(), requests.get(0).id(), total,
                    () -> session.run(feeds))) {
                List<List<Tensor>> perRequest = new ArrayList<>(requests.size());
                for (int i = 0; i < samples.length; i++) {
                    perRequest.add(new ArrayList<>(outputNames.size()));
                }
                for (String name : outputNames) {
                    OnnxValue value = result.get(name).orElseThrow(
                            () -> new OrtException("model " + id + " produced no output " + name));
                    if (!(value instanceof OnnxTensor)) {
                        throw new OrtException("output " + name + " of model " + id + " is not a tensor");
                    }
                    split(name, (OnnxTensor) value, samples, total, perRequest);
                }
                return perRequest;
            }
        } finally {
            for (OnnxTensor t : feeds.values()) {
                t.close();
            }
        }
    }

    private OnnxTensor stack(String name, DataType type, List<InferenceRequest> requests, int total)
            throws OrtException {
        Tensor first = requests.get(0).input(name);
        if (first == null) {
            throw new OrtException("request " + requests.get(0).id() + " lacks input " + name);
        }
        long[] shape = first.shape().clone();
        shape[0] = total;
        if (type == DataType.BYTES) {
            List<String> strings = new ArrayList<>();
            for (InferenceRequest r : requests) {
                strings.addAll(r.input(name).asStrings());
            }
            return OnnxTensor.createTensor(env, strings.toArray(new String[0]), shape);
        }
        int bytes = 0;
        for (InferenceRequest r : requests) {
            bytes += r.input(name).data().length;
        }
        Map<String, ByteBuffer> mine = buffers.get();
        ByteBuffer buffer = mine.get(name);
        if (buffer == null || buffer.capacity() < bytes) {
            buffer = ByteBuffer.allocateDirect(Math.max(bytes, buffer == null ? 0 : buffer.capacity() * 2))
                    .order(ByteOrder.nativeOrder());
            mine.put(name, buffer);
        }
        buffer.clear();
        for (InferenceRequest r : requests) {
            buffer.put(r.input(name).data()); // tensors are little-endian, as is every supported host
        }
        buffer.flip();
        return OnnxTensor.createTensor(env, buffer, shape, javaType(type));
    }

    private void split(String name, OnnxTensor tensor, int[] samples, int total, List<List<Tensor>> out)
            throws OrtException {
        TensorInfo info = tensor.getInfo();
        long[] shape = info.getShape();
        if (shape.length == 0 || shape[0] != total) {
            throw new OrtException("output " + name + " of model " + id + " has shape " + Arrays.toString(shape)
                    + ", which has no batch dimension of " + total);
        }
        DataType type = dataTypeOf(info);
        long perSample = Tensor.elementCount(Arrays.copyOfRange(shape, 1, shape.length));
        if (type == DataType.BYTES) {
            List<String> flat = new ArrayList<>();
            flattenStrings(tensor.getValue(), flat);
            int offset = 0;
            for (int i = 0; i < samples.length; i++) {
                int n = (int) (samples[i] * perSample);
                out.get(i).add(Tensor.ofStrings(name, withBatch(shape, samples[i]),
                        flat.subList(offset, offset + n).toArray(new String[0])));
                offset += n;
            }
            return;
        }
        ByteBuffer data = tensor.getByteBuffer();
        int bytesPerSample = (int) (perSample * type.elementSize());
        for (int i = 0; i < samples.length; i++) {
            byte[] slice = new byte[samples[i] * bytesPerSample];
            data.get(slice);
            out.get(i).add(new Tensor(name, type, withBatch(shape, samples[i]), slice));
        }
    }

    private static long[] withBatch(long[] shape, int batch) {
        long[] s = shape.clone();
        s[0] = batch;
        return s;
    }

    private static void flattenStrings(Object value, List<String> out) {
        if (value instanceof String) {
            out.add((String) value);
        } else if (value != null && value.getClass().isArray()) {
            for (int i = 0; i < Array.getLength(value); i++) {
                flattenStrings(Array.get(value, i), out);
            }
        }
    }

    static DataType dataTypeOf(NodeInfo node) throws OrtException {
        if (!(node.getInfo() instanceof TensorInfo)) {
            throw new OrtException("input/output " + node.getName() + " is not a tensor");
        }
        return dataTypeOf((TensorInfo) node.getInfo());
    }

    static DataType dataTypeOf(TensorInfo info) throws OrtException {
        switch (info.type) {
            case FLOAT:
                return DataType.FP32;
            case FLOAT16:
                return DataType.FP16;
            case DOUBLE:
                return DataType.FP64;
            case INT8:
                return DataType.INT8;
            case UINT8:
                return DataType.UINT8;
            case INT16:
                return DataType.INT16;
            case INT32:
                return DataType.INT32;
            case INT64:
                return DataType.INT64;
            case BOOL:
                return DataType.BOOL;
            case STRING:
                return DataType.BYTES;
            default:
                throw new OrtException("unsupported tensor type " + info.type);
        }
    }

    static OnnxJavaType javaType(DataType type) {
        switch (type) {
            case FP32:
                return OnnxJavaType.FLOAT;
            case FP16:
                return OnnxJavaType.FLOAT16;
            case FP64:
                return OnnxJavaType.DOUBLE;
            case INT8:
                return OnnxJavaType.INT8;
            case UINT8:
                return OnnxJavaType.UINT8;
            case INT16:
                return OnnxJavaType.INT16;
            case INT32:
                return OnnxJavaType.INT32;
            case INT64:
                return OnnxJavaType.INT64;
            case BOOL:
                return OnnxJavaType.BOOL;
            case BYTES:
                return OnnxJavaType.STRING;
            default:
                throw new IllegalArgumentException(type.name());
        }
    }

    @Override
    public void close() throws OrtException {
        session.close();
    }

    @Override
    public String toString() {
        return "OnnxModel{" + id + ", inputs=" + inputTypes + ", outputs=" + outputNames + "}";
    }

}
