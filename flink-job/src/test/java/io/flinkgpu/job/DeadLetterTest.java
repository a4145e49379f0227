package io.flinkgpu.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Tensor;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.protocol.WireFormat;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class DeadLetterTest {
    @Test
    void roundTripsWithOriginBytesAndReason() throws Exception {
        byte[] original = "{\"id\":\"x\", oops".getBytes(StandardCharsets.UTF_8);
        DeadLetter d = new DeadLetter(ErrorCode.MALFORMED_PAYLOAD, "malformed JSON", "x", "requests", 1, 42, original);
        DeadLetter back = DeadLetter.fromJson(d.toJson());
        assertThat(back.code()).isEqualTo(ErrorCode.MALFORMED_PAYLOAD);
        assertThat(back.reason()).isEqualTo("malformed JSON");
        assertThat(back.requestId()).isEqualTo("x");
        assertThat(back.topic()).isEqualTo("requests");
        assertThat(back.partition()).isEqualTo(1);
        assertThat(back.offset()).isEqualTo(42);
        assertThat(back.original()).isEqualTo(original);
    }

    @Test
    void oversizedOriginalIsTruncatedButItsSizeIsKept() throws Exception {
        byte[] original = new byte[10_000];
        DeadLetter d = new DeadLetter(ErrorCode.TENSOR_TOO_LARGE, "too large", null, "requests", 0, 0, original);
        byte[] json = d.toJson(1000);
        assertThat(json.length).isLessThan(2000);
        var node = new ObjectMapper().readTree(json);
        assertThat(node.get("original_size").asInt()).isEqualTo(10_000);
        assertThat(node.get("original_truncated").asBoolean()).isTrue();
        assertThat(DeadLetter.fromJson(json).original()).hasSize(1000);
        assertThat(node.has("request_id")).isFalse();
    }

    @Test
    void responseOverTheRecordLimitBecomesOutputTooLarge() throws ProtocolException {
        InferenceResponse big = InferenceResponse.success("big", "m", "1",
                List.of(Tensor.ofFloats("y", new long[] {1, 100_000}, new float[100_000])), Timings.NONE);
        InferenceResponse small = InferenceResponse.success("small", "m", "1",
                List.of(Tensor.ofFloats("y", new long[] {1, 2}, 1f, 2f)), Timings.NONE);

        InferenceResponse bigOut = WireFormat.JSON.decodeResponse(
                InferenceJob.encodeBounded(WireFormat.JSON.writer(), big, 64 * 1024));
        InferenceResponse smallOut = WireFormat.JSON.decodeResponse(
                InferenceJob.encodeBounded(WireFormat.JSON.writer(), small, 64 * 1024));

        assertThat(bigOut.id()).isEqualTo("big");
        assertThat(bigOut.error().code()).isEqualTo(ErrorCode.OUTPUT_TOO_LARGE);
        assertThat(smallOut).isEqualTo(small);
    }
}
