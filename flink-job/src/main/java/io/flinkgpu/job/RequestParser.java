package io.flinkgpu.job;

import io.flinkgpu.inference.model.ModelReloader;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.protocol.WireFormat;
import io.flinkgpu.inference.validation.RequestValidator;
import io.flinkgpu.inference.validation.ValidationLimits;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Parse and validate: decodes each record and checks it against the model repository. Valid
 * requests go on, pinned to the version that will serve them. An invalid record goes to the
 * dead-letter output with its original bytes and reason, and, when it names a request id, an
 * error response goes to the responses too so that the caller is answered.
 */
public class RequestParser extends ProcessFunction<KafkaRecord, InferenceRequest> {
    private static final long serialVersionUID = 1L;

    public static final OutputTag<DeadLetter> DEAD_LETTERS = new OutputTag<>("dead-letters") {};
    public static final OutputTag<InferenceResponse> ERROR_RESPONSES =
            new OutputTag<>("error-responses", io.flinkgpu.inference.operator.InferenceTypes.RESPONSE) {};

    private final WireFormat format;
    private final String modelRepository;
    private final ValidationLimits limits;
    private final Duration repositoryPollInterval;
    private transient RequestValidator validator;
    private transient ModelReloader reloader;
    private transient Counter valid;
    private transient Counter invalid;

    public RequestParser(WireFormat format, String modelRepository, ValidationLimits limits,
            Duration repositoryPollInterval) {
        this.format = format;
        this.modelRepository = modelRepository;
        this.limits = limits;
        this.repositoryPollInterval = repositoryPollInterval;
    }

    @Override
    public void open(OpenContext openContext) {
        ModelRepository repository = ModelRepository.open(Path.of(modelRepository));
        validator = new RequestValidator(repository, limits);
        // Follow the repository as the inference operator does, so new models and versions validate.
        reloader = new ModelReloader(repository, null).startPolling(repositoryPollInterval,
                "parser-model-reload-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask());
        valid = getRuntimeContext().getMetricGroup().addGroup("gpu_inference").counter("validRequests");
        invalid = getRuntimeContext().getMetricGroup().addGroup("gpu_inference").counter("invalidRequests");
    }

    @Override
    public void processElement(KafkaRecord record, Context ctx, Collector<InferenceRequest> out) {
        InferenceRequest request = null;
        try {
            byte[] payload = record.value();
            validator.checkPayloadSize(payload == null ? 0 : payload.length);
            request = format.decodeRequest(payload);
            validator.check(request);
            // Unversioned requests stay unversioned: the inference operator picks the default
            // version when it queues them, so traffic follows a hot reload there.
            out.collect(request);
            valid.inc();
        } catch (ProtocolException e) {
            invalid.inc();
            String id = request != null ? request.id() : keyAsId(record.key());
            ctx.output(DEAD_LETTERS, new DeadLetter(e.code(), e.getMessage(), id, record.topic(), record.partition(),
                    record.offset(), record.value()));
            if (id != null) {
                ctx.output(ERROR_RESPONSES, InferenceResponse.failure(id,
                        request != null ? request.modelName() : null,
                        request != null ? request.modelVersion() : null, e.toError(), Timings.NONE));
            }
        }
    }

    @Override
    public void close() throws Exception {
        if (reloader != null) {
            reloader.close();
        }
        super.close();
    }

    /** Producers may key records by request id; such a key identifies an undecodable request. */
    private static String keyAsId(byte[] key) {
        if (key == null || key.length == 0 || key.length > 256) {
            return null;
        }
        String s = new String(key, StandardCharsets.UTF_8);
        return s.chars().allMatch(c -> c >= 0x20 && c < 0x7f) ? s : null;
    }
}
