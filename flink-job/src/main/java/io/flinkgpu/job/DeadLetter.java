package io.flinkgpu.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.protocol.ErrorCode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Base64;

/**
 * A record that could not be accepted as a request: why, where it came from, and its original
 * bytes (base64), so it can be inspected and replayed.
 */
public record DeadLetter(ErrorCode code, String reason, String requestId, String topic, int partition, long offset,
        byte[] original) {

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
                Base64.getDecoder().decode(n.path("original_base64").asText()));
    }
}
