package io.flinkgpu.contract.control;

import io.flinkgpu.contract.security.Hmac;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks control records against a set of keys (key id -> key; two or more at once while keys
 * rotate) and says what each is: {@link Verdict#VALID} (an envelope signed by one of the keys),
 * {@link Verdict#UNSIGNED} (a bare plan, or an envelope without a signature),
 * {@link Verdict#UNKNOWN_KEY} (signed under a key id it does not hold) or
 * {@link Verdict#BAD_SIGNATURE} (the signature does not match the plan bytes: tampered, forged or
 * another key's). Whether an unsigned plan may still be applied is {@link #requireSignature()}'s
 * to say ({@link ControlPlanState} decides). Keys are never part of {@link #toString()}.
 */
public final class PlanVerifier {
    /** What a control record is, as far as its signature goes. */
    public enum Verdict {
        VALID,
        UNSIGNED,
        UNKNOWN_KEY,
        BAD_SIGNATURE
    }

    /**
     * The verdict on one record, the plan bytes it carries (the envelope's, or the bare record),
     * and the key id it named (null: none).
     */
    public record Result(Verdict verdict, byte[] plan, String keyId) {}

    private final Map<String, byte[]> keys;
    private final boolean requireSignature;

    /**
     * A verifier holding {@code keys} (at least one; ids as {@link PlanEnvelope#KEY_ID}, keys of at
     * least {@link Hmac#MIN_KEY_BYTES}); {@code requireSignature}: unsigned plans are refused.
     */
    public PlanVerifier(Map<String, byte[]> keys, boolean requireSignature) {
        if (keys == null || keys.isEmpty()) {
            throw new IllegalArgumentException("a plan verifier needs at least one key");
        }
        Map<String, byte[]> copy = new TreeMap<>();
        keys.forEach((id, key) -> {
            PlanEnvelope.checkKeyId(id);
            try {
                Hmac.checkKey(key);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("verify key '" + id + "': " + e.getMessage());
            }
            copy.put(id, key.clone());
        });
        this.keys = copy;
        this.requireSignature = requireSignature;
    }

    /** A verifier that refuses unsigned plans. */
    public PlanVerifier(Map<String, byte[]> keys) {
        this(keys, true);
    }

    public boolean requireSignature() {
        return requireSignature;
    }

    public Set<String> keyIds() {
        return java.util.Collections.unmodifiableSet(keys.keySet());
    }

    /**
     * The verdict on {@code record}. Throws only {@link InvalidControlMessageException}, for a
     * record that is no JSON or a malformed envelope (see {@link PlanEnvelope#parse}); the plan
     * bytes are not decoded here.
     */
    public Result verify(byte[] record) throws InvalidControlMessageException {
        PlanEnvelope envelope = PlanEnvelope.parse(record);
        if (envelope == null) {
            return new Result(Verdict.UNSIGNED, record, null);
        }
        byte[] plan = envelope.plan();
        if (envelope.signature() == null) {
            return new Result(Verdict.UNSIGNED, plan, envelope.keyId());
        }
        byte[] key = envelope.keyId() == null ? null : keys.get(envelope.keyId());
        if (key == null) {
            return new Result(Verdict.UNKNOWN_KEY, plan, envelope.keyId());
        }
        boolean ok = Hmac.verify(key, envelope.signature(), PlanEnvelope.macInput(envelope.keyId(), plan));
        return new Result(ok ? Verdict.VALID : Verdict.BAD_SIGNATURE, plan, envelope.keyId());
    }

    @Override
    public String toString() {
        return "PlanVerifier[key ids " + keys.keySet() + ", signature " + (requireSignature ? "required" : "optional")
                + "]";
    }
}
