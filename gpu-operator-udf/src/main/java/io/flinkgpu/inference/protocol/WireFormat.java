package io.flinkgpu.inference.protocol;

/**
 * The encoding used on a topic. {@link #AUTO} (for reading only) tells the two apart by the
 * binary format's magic bytes, which can never start a JSON document.
 */
public enum WireFormat {
    JSON,
    BINARY,
    AUTO;

    private static final JsonCodec JSON_CODEC = new JsonCodec();
    private static final BinaryCodec BINARY_CODEC = new BinaryCodec();

    /** The codec for this format; for {@link #AUTO}, the one matching the payload. */
    public WireCodec codecFor(byte[] payload) {
        switch (this) {
            case JSON:
                return JSON_CODEC;
            case BINARY:
                return BINARY_CODEC;
            default:
                return BinaryCodec.hasMagic(payload) ? BINARY_CODEC : JSON_CODEC;
        }
    }

    /** The codec used for writing; {@link #AUTO} writes JSON. */
    public WireCodec writer() {
        return this == BINARY ? BINARY_CODEC : JSON_CODEC;
    }

    public InferenceRequest decodeRequest(byte[] payload) throws ProtocolException {
        return codecFor(payload).decodeRequest(payload);
    }

    public InferenceResponse decodeResponse(byte[] payload) throws ProtocolException {
        return codecFor(payload).decodeResponse(payload);
    }
}
