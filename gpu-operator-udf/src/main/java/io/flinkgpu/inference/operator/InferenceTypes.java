package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import java.util.Objects;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/** Flink type information for requests, responses and refusals; requests and responses backed by {@link CodecSerializer}. */
public final class InferenceTypes {
    private InferenceTypes() {}

    public static final TypeInformation<InferenceRequest> REQUEST =
            new CodecTypeInfo<>(InferenceRequest.class, CodecSerializer.RequestSerializer.INSTANCE);
    public static final TypeInformation<InferenceResponse> RESPONSE =
            new CodecTypeInfo<>(InferenceResponse.class, CodecSerializer.ResponseSerializer.INSTANCE);
    /** A record: Flink serializes it as a POJO, without Kryo. */
    public static final TypeInformation<RefusedRequest> REFUSED = TypeInformation.of(RefusedRequest.class);

    static final class CodecTypeInfo<T> extends TypeInformation<T> {
        private final Class<T> type;
        private final TypeSerializer<T> serializer;

        CodecTypeInfo(Class<T> type, TypeSerializer<T> serializer) {
            this.type = type;
            this.serializer = serializer;
        }

        @Override
        public boolean isBasicType() {
            return false;
        }

        @Override
        public boolean isTupleType() {
            return false;
        }

        @Override
        public int getArity() {
            return 1;
        }

        @Override
        public int getTotalFields() {
            return 1;
        }

        @Override
        public Class<T> getTypeClass() {
            return type;
        }

        @Override
        public boolean isKeyType() {
            return false;
        }

        @Override
        public TypeSerializer<T> createSerializer(SerializerConfig config) {
            return serializer;
        }

        @Override
        public String toString() {
            return type.getSimpleName();
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof CodecTypeInfo && ((CodecTypeInfo<?>) o).type == type;
        }

        @Override
        public int hashCode() {
            return Objects.hash(type);
        }

        @Override
        public boolean canEqual(Object o) {
            return o instanceof CodecTypeInfo;
        }
    }
}
