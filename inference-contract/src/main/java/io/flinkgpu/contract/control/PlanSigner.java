package io.flinkgpu.contract.control;

import io.flinkgpu.contract.security.Hmac;

/**
 * Signs plans for the control topic under one key ({@link PlanEnvelope}): the coordinator's side
 * of the signed control plane. The key is never part of {@link #toString()}.
 */
public final class PlanSigner {
    private final String keyId;
    private final byte[] key;

    /** A signer under {@code key}, named {@code keyId} in every envelope; the key needs {@link Hmac#MIN_KEY_BYTES}. */
    public PlanSigner(String keyId, byte[] key) {
        PlanEnvelope.checkKeyId(keyId);
        Hmac.checkKey(key);
        this.keyId = keyId;
        this.key = key.clone();
    }

    public String keyId() {
        return keyId;
    }

    /** The envelope record of {@code plan} in its codec's JSON ({@link ControlMessageCodec#encode}). */
    public byte[] sign(ControlMessage plan) {
        return sign(ControlMessageCodec.encode(plan));
    }

    /** The envelope record of exactly these plan bytes. */
    public byte[] sign(byte[] planJson) {
        return PlanEnvelope.encode(keyId, Hmac.sign(key, PlanEnvelope.macInput(keyId, planJson)), planJson);
    }

    @Override
    public String toString() {
        return "PlanSigner[key id " + keyId + "]";
    }
}
