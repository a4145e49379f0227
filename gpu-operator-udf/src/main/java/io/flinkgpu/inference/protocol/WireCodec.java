package io.flinkgpu.inference.protocol;

/** Encodes and decodes requests and responses for one wire format. Implementations are thread-safe. */
public interface WireCodec extends java.io.Serializable {
    InferenceRequest decodeRequest(byte[] payload) throws ProtocolException;

    byte[] encodeRequest(InferenceRequest request);

    InferenceResponse decodeResponse(byte[] payload) throws ProtocolException;

    byte[] encodeResponse(InferenceResponse response);
}
