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

    public byte[] toJson() {
        ObjectNode n = MAPPER.createObjectNode();
        n.put("code", code.name());
        n.put("reason", reason);
        if (requestId != null) {
            n.put("request_id", requestId);
        }
        n.put("source_topic", topic);
        n.put("source_partition", partition);
        n.put("source_offset", offset);
        n.put("original_base64", Base64.getEncoder().encodeToString(original == null ? new byte[0] : original));
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
