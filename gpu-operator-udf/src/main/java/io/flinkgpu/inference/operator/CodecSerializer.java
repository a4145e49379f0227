package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.io.IOException;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Flink serializers for requests and responses, in the project's binary wire format (a JSON
 * header plus raw tensor bytes). The same format on the wire, between operators and in
 * checkpoints means one versioned layout to keep compatible.
 */
public abstract class CodecSerializer<T> extends TypeSerializerSingleton<T> {
    static final BinaryCodec CODEC = new BinaryCodec();

    abstract byte[] encode(T value);

    abstract T decode(byte[] bytes) throws ProtocolException;

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public T createInstance() {
        return null;
    }

    @Override
    public T copy(T from) {
        return from;
    }

    @Override
    public T copy(T from, T reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(T record, DataOutputView target) throws IOException {
        byte[] bytes = encode(record);
        target.writeInt(bytes.length);
        target.write(bytes);
    }

    @Override
    public T deserialize(DataInputView source) throws IOException {
        byte[] bytes = new byte[source.readInt()];
        source.readFully(bytes);
        try {
            return decode(bytes);
        } catch (ProtocolException e) {
            throw new IOException("corrupt serialized record: " + e.getMessage(), e);
        }
    }

    @Override
    public T deserialize(T reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        int length = source.readInt();
        target.writeInt(length);
        target.write(source, length);
    }

    /** Serializer of {@link InferenceRequest}. */
    public static final class RequestSerializer extends CodecSerializer<InferenceRequest> {
        public static final RequestSerializer INSTANCE = new RequestSerializer();

        @Override
        byte[] encode(InferenceRequest value) {
            return CODEC.encodeRequest(value);
        }

        @Override
        InferenceRequest decode(byte[] bytes) throws ProtocolException {
            return CODEC.decodeRequest(bytes);
        }

        @Override
        public TypeSerializerSnapshot<InferenceRequest> snapshotConfiguration() {
            return new RequestSnapshot();
        }
    }

    /** Serializer of {@link InferenceResponse}. */
    public static final class ResponseSerializer extends CodecSerializer<InferenceResponse> {
        public static final ResponseSerializer INSTANCE = new ResponseSerializer();

        @Override
        byte[] encode(InferenceResponse value) {
            return CODEC.encodeResponse(value);
        }

        @Override
        InferenceResponse decode(byte[] bytes) throws ProtocolException {
            return CODEC.decodeResponse(bytes);
        }

        @Override
        public TypeSerializerSnapshot<InferenceResponse> snapshotConfiguration() {
            return new ResponseSnapshot();
        }
    }

    /** Snapshot of {@link RequestSerializer}; public no-arg constructor for restore. */
    public static final class RequestSnapshot extends SimpleTypeSerializerSnapshot<InferenceRequest> {
        public RequestSnapshot() {
            super(() -> RequestSerializer.INSTANCE);
        }
    }

    /** Snapshot of {@link ResponseSerializer}; public no-arg constructor for restore. */
    public static final class ResponseSnapshot extends SimpleTypeSerializerSnapshot<InferenceResponse> {
        public ResponseSnapshot() {
            super(() -> ResponseSerializer.INSTANCE);
        }
    }
}
