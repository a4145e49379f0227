package io.flinkgpu.bench.sut;

import io.flinkgpu.inference.protocol.BinaryCodec;
import io.flinkgpu.inference.protocol.WireFormat;
import java.util.ArrayList;
import java.util.List;

/**
 * Several streams of binary requests to one job (other models, priorities or tenants, each on a
 * producer of its own) whose answers, in either wire format, are read from the responses topic by
 * one shared consumer. Each stream is a {@link KafkaTarget}; run ids come from {@link #newRun} so
 * that the streams' answers never mix. Closing it closes every stream.
 */
public final class KafkaTraffic implements AutoCloseable {
    private final String bootstrap;
    private final String requestsTopic;
    private final KafkaResponses responses;
    private final List<KafkaTarget> streams = new ArrayList<>();
    private int runs;

    /** Reads {@code responsesTopic} from its end, now. */
    public KafkaTraffic(String bootstrap, String requestsTopic, String responsesTopic) {
        this.bootstrap = bootstrap;
        this.requestsTopic = requestsTopic;
        this.responses = new KafkaResponses(bootstrap, responsesTopic, r -> WireFormat.AUTO.decodeResponse(r.value()), false);
    }

    /** A new stream of {@code requests}. */
    public synchronized KafkaTarget stream(KafkaTarget.Requests requests) {
        KafkaTarget t = new KafkaTarget(KafkaClients.producer(bootstrap), requestsTopic, responses, requests,
                RecordCodec.of(new BinaryCodec()));
        streams.add(t);
        return t;
    }

    /** A run id no other stream of this traffic has used. */
    public synchronized int newRun() {
        return runs++;
    }

    @Override
    public void close() throws InterruptedException {
        for (KafkaTarget t : streams) {
            t.close();
        }
        responses.close();
    }
}
