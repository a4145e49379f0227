package io.flinkgpu.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.operator.RefusedRequest;
import io.flinkgpu.inference.protocol.ErrorCode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Base64;

/**
 * A record that could not be accepted as a request: why, where it came from, and its original
 * bytes (base64), so it can be inspected and replayed. A request refused by the inference operator
 * after it was decoded carries its request re-encoded in the binary wire format instead of the
 * record's own bytes ({@code reencoded}); its source is the one the parser stamped on it.
 */
public record DeadLetter(ErrorCode code, String reason, String requestId, String topic, int partition, long offset,
        byte[] original, boolean reencoded) {

    public DeadLetter(ErrorCode code, String reason, String requestId, String topic, int partition, long offset,
            byte[] original) {
        this(code, reason, requestId, topic, partition, offset, original, false);
    }

    /**
     * The dead letter of a request the inference operator refused. Its origin
     * ({@code topic/partition@offset}) gives the source; without one (a request that did not come
     * through the parser) the source is unknown: empty topic, partition and offset -1.
     */
    public static DeadLetter of(RefusedRequest refused) {
        String topic = "";
        int partition = -1;
        long offset = -1;
        String origin = refused.origin();
        if (origin != null) {
            int at = origin.lastIndexOf('@');
            int slash = at < 0 ? -1 : origin.lastIndexOf('/', at);
            try {
                if (slash > 0) {
                    partition = Integer.parseInt(origin.substring(slash + 1, at));
                    offset = Long.parseLong(origin.substring(at + 1));
                    topic = origin.substring(0, slash);
                }
            } catch (NumberFormatException e) {
                partition = -1;
                offset = -1;
            }
        }
        return new DeadLetter(refused.code(), refused.reason(), refused.requestId(), topic, partition, offset,
                refused.request(), true);
    }

    private static final ObjectMapper MAPPER = new ObjectMapper();

    /** JSON with the whole original. */
    public byte[] toJson() {
        return toJson(Integer.MAX_VALUE);
    }

    /**
     * JSON with at most {@code maxOriginalBytes} of the original, so that a dead letter for an
     * oversized record still fits in a Kafka record; {@code original_size} tells the full size.
     */
    public byte[] toJson(int maxOriginalBytes) {
        byte[] bytes = original == null ? new byte[0] : original;
        boolean truncated = bytes.length > maxOriginalBytes;
        ObjectNode n = MAPPER.createObjectNode();
        n.put("code", code.name());
        n.put("reason", reason);
        if (requestId != null) {
            n.put("request_id", requestId);
        }
        n.put("source_topic", topic);
        n.put("source_partition", partition);
        n.put("source_offset", offset);
        n.put("original_size", bytes.length);
        n.put("original_truncated", truncated);
        if (reencoded) {
            n.put("original_reencoded", true);
        }
        n.put("original_base64", Base64.getEncoder().encodeToString(
                truncated ? java.util.Arrays.copyOf(bytes, maxOriginalBytes) : bytes));
        try {
            return MAPPER.writeValueAsBytes(n);
        } catch (JsonProcessingException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static DeadLetter fromJson(byte[] json) throws IOException {
        JsonNode n = MAPPER.readTree(json);
        return new DeadLetter(ErrorCode.valueOf(n.path("code").asText()), n.path("reason").asText(),
                n.hasNonNull("request_id") ? n.get("request_id").asText() : null, n.path("source_topic").asText(),
                n.path("source_partition").asInt(), n.path("source_offset").asLong(),
                Base64.getDecoder().decode(n.path("original_base64").asText()),
                n.path("original_reencoded").asBoolean(false));
    }
}
