package io.flinkgpu.contract.control;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.regex.Pattern;

/**
 * A signed plan as it travels on the control topic:
 * {@code {"key_id": "k1", "signature": "<HMAC-SHA256>", "plan": "<base64 of the plan's JSON bytes>"}}.
 * The signature covers the exact plan bytes (no canonicalisation): the MAC input is
 * {@link #DOMAIN}, the key id, a line break, then the plan bytes, so a signature made for
 * anything else, or under another key id, never verifies as a plan's. The signature is
 * {@link io.flinkgpu.contract.security.Hmac}'s (unpadded URL-safe base64); the plan is standard
 * base64. A control record is an envelope iff it is a JSON object with a {@code plan} field; any
 * other record is read as a bare plan ({@link ControlMessageCodec}).
 */
public final class PlanEnvelope {
    /** Domain separation: the first bytes of every MAC input. */
    public static final String DOMAIN = "flink-gpu-inference plan v1\n";
    /** Key ids: 1 to 64 of {@code A-Z a-z 0-9 . _ -} (no line break can end one early in the MAC input). */
    public static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    static final String FIELD_KEY_ID = "key_id";
    static final String FIELD_SIGNATURE = "signature";
    static final String FIELD_PLAN = "plan";
    private static final byte[] DOMAIN_BYTES = DOMAIN.getBytes(StandardCharsets.UTF_8);
    private static final byte[] SEPARATOR = {'\n'};

    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private final String keyId;
    private final String signature;
    private final byte[] plan;

    private PlanEnvelope(String keyId, String signature, byte[] plan) {
        this.keyId = keyId;
        this.signature = signature;
        this.plan = plan;
    }

    /** The key id the envelope names, or null where it names none. */
    public String keyId() {
        return keyId;
    }

    /** The signature, or null where the envelope carries none (or an empty one). */
    public String signature() {
        return signature;
    }

    /** The plan's bytes, exactly as signed. */
    public byte[] plan() {
        return plan.clone();
    }

    /** Whether {@code keyId} can name a key. */
    public static boolean isValidKeyId(String keyId) {
        return keyId != null && KEY_ID.matcher(keyId).matches();
    }

    /** Throws unless {@code keyId} can name a key. */
    public static void checkKeyId(String keyId) {
        if (!isValidKeyId(keyId)) {
            throw new IllegalArgumentException("a key id is 1 to 64 of A-Z a-z 0-9 . _ -, got '" + keyId + "'");
        }
    }

    /** The parts of the MAC input of {@code plan} under {@code keyId}, in order. */
    static byte[][] macInput(String keyId, byte[] plan) {
        return new byte[][] {DOMAIN_BYTES, keyId.getBytes(StandardCharsets.UTF_8), SEPARATOR, plan};
    }

    /** The envelope record of {@code plan} signed as {@code signature} under {@code keyId}. */
    static byte[] encode(String keyId, String signature, byte[] plan) {
        ObjectNode node = MAPPER.createObjectNode();
        node.put(FIELD_KEY_ID, keyId);
        node.put(FIELD_SIGNATURE, signature);
        node.put(FIELD_PLAN, Base64.getEncoder().encodeToString(plan));
        try {
            return MAPPER.writeValueAsBytes(node);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode a plan envelope", e);
        }
    }

    /**
     * The envelope {@code record} is, or null where it is none (not a JSON object with a
     * {@code plan} field: a bare plan, or something {@link ControlMessageCodec#decode} refuses).
     * Throws only {@link InvalidControlMessageException}, whatever the bytes: for an empty,
     * oversized or malformed record, and for an envelope whose fields have the wrong types or
     * whose plan is not base64.
     */
    public static PlanEnvelope parse(byte[] record) throws InvalidControlMessageException {
        if (record == null || record.length == 0) {
            throw new InvalidControlMessageException("empty control record");
        }
        if (record.length > ControlMessageCodec.MAX_RECORD_BYTES) {
            throw new InvalidControlMessageException(
                    "control record of " + record.length + " bytes exceeds " + ControlMessageCodec.MAX_RECORD_BYTES);
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(record);
        } catch (IOException | RuntimeException e) {
            throw new InvalidControlMessageException("malformed control record: " + firstLine(e.getMessage()), e);
        }
        if (node == null || !node.isObject() || !node.has(FIELD_PLAN)) {
            return null;
        }
        JsonNode planNode = node.get(FIELD_PLAN);
        if (!planNode.isTextual()) {
            throw new InvalidControlMessageException("plan envelope: 'plan' must be a base64 string");
        }
        byte[] plan;
        try {
            plan = Base64.getDecoder().decode(planNode.textValue());
        } catch (IllegalArgumentException e) {
            throw new InvalidControlMessageException("plan envelope: 'plan' is not base64: " + e.getMessage());
        }
        return new PlanEnvelope(text(node, FIELD_KEY_ID), text(node, FIELD_SIGNATURE), plan);
    }

    private static String text(JsonNode envelope, String field) throws InvalidControlMessageException {
        JsonNode v = envelope.get(field);
        if (v == null || v.isNull()) {
            return null;
        }
        if (!v.isTextual()) {
            throw new InvalidControlMessageException("plan envelope: '" + field + "' must be a string");
        }
        return v.textValue().isEmpty() ? null : v.textValue();
    }

    private static String firstLine(String s) {
        if (s == null) {
            return "";
        }
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }
}
