package io.flinkgpu.bench.sut;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.DataType;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import java.io.Serializable;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.java.tuple.Tuple2;

/**
 * What a Flink user writes today: decode the record, call ONNX Runtime once for it, encode the
 * answer. Same session options as the job's CPU device (1 intra-op thread), same wire format.
 */
final class PerRecordInference implements Serializable {
    private static final long serialVersionUID = 1L;
    private final String modelFile;
    private transient OrtEnvironment env;
    private transient OrtSession session;
    private transient BinaryCodec codec;

    PerRecordInference(String modelFile) {
        this.modelFile = modelFile;
    }

    void open() throws OrtException {
        env = OrtEnvironment.getEnvironment();
        try (OrtSession.SessionOptions options = new CpuDevice("cpu", 2L << 30, 1).newSessionOptions()) {
            session = env.createSession(modelFile, options);
        }
        codec = new BinaryCodec();
    }

    void close() throws OrtException {
        if (session != null) {
            session.close();
        }
    }

    /** Key (request id) and encoded response for one encoded request. */
    Tuple2<byte[], byte[]> process(byte[] payload) throws Exception {
        InferenceRequest request = codec.decodeRequest(payload);
        long started = System.nanoTime();
        Map<String, OnnxTensor> feeds = new HashMap<>();
        List<Tensor> outputs = new ArrayList<>();
        try {
            for (Tensor t : request.inputs()) {
                feeds.put(t.name(), toOnnx(t));
            }
            try (OrtSession.Result result = session.run(feeds)) {
                for (Map.Entry<String, OnnxValue> e : result) {
                    OnnxTensor out = (OnnxTensor) e.getValue();
                    ByteBuffer data = out.getByteBuffer();
                    byte[] bytes = new byte[data.remaining()];
                    data.get(bytes);
                    outputs.add(new Tensor(e.getKey(), DataType.FP32, out.getInfo().getShape(), bytes));
                }
            }
        } finally {
            for (OnnxTensor t : feeds.values()) {
                t.close();
            }
        }
        double ms = (System.nanoTime() - started) / 1e6;
        InferenceResponse response = InferenceResponse.success(request.id(), request.modelName(), "1", outputs,
                new Timings(0, ms, 1));
        return Tuple2.of(request.id().getBytes(java.nio.charset.StandardCharsets.UTF_8),
                codec.encodeResponse(response));
    }

    private OnnxTensor toOnnx(Tensor t) throws OrtException {
        ByteBuffer b = ByteBuffer.wrap(t.data()).order(ByteOrder.LITTLE_ENDIAN);
        switch (t.datatype()) {
            case FP32:
                return OnnxTensor.createTensor(env, b.asFloatBuffer(), t.shape());
            case INT64:
                return OnnxTensor.createTensor(env, b.asLongBuffer(), t.shape());
            default:
                throw new IllegalArgumentException("unsupported input type " + t.datatype());
        }
    }
}
