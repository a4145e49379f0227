package io.flinkgpu.bench.sut;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.WireCodec;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * How the harness writes a request as a Kafka record's value (the key is always the request id)
 * and reads an answer from a whole record: its key, value and headers. The job's wire formats
 * carry everything in the value ({@link #of}); the SQL configurations' rows carry the id in the
 * key and, in the raw format, an error in a header ({@link SqlRowCodec}).
 */
public interface RecordCodec {
    /** The record value of {@code request}. */
    byte[] requestValue(InferenceRequest request);

    /** The response an answer record carries. */
    InferenceResponse answer(ConsumerRecord<byte[], byte[]> record) throws ProtocolException;

    /** A wire format's codec: requests and answers are record values. */
    static RecordCodec of(WireCodec codec) {
        return new RecordCodec() {
            @Override
            public byte[] requestValue(InferenceRequest request) {
                return codec.encodeRequest(request);
            }

            @Override
            public InferenceResponse answer(ConsumerRecord<byte[], byte[]> record) throws ProtocolException {
                return codec.decodeResponse(record.value());
            }
        };
    }
}
