package io.flinkgpu.job;

import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.inference.admission.RequestAdmission;
import io.flinkgpu.inference.admission.ValidationLimits;
import io.flinkgpu.inference.operator.InferenceTypes;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Timings;
import io.flinkgpu.inference.protocol.WireFormat;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Parse: decodes each record ({@link RequestAdmission#decode}) and stamps it with its Kafka
 * origin. Everything else about admission (the model, its limits, tenants, deadlines) is decided
 * once, by the inference operator, except the tenant: the parser binds it to the record's topic
 * or signature ({@link TenantBinding}) and refuses a request that claims another. A record that does not decode goes to the dead-letter output
 * with its original bytes and reason and, when its id can be read from the payload or the Kafka
 * key, an error response goes to the responses too, so that its caller is answered. Nothing a
 * record contains can fail this task: an unexpected exception becomes an {@code INTERNAL} dead
 * letter (and response) naming the exception.
 */
public class RequestParser extends ProcessFunction<KafkaRecord, InferenceRequest> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(RequestParser.class);

    public static final OutputTag<DeadLetter> DEAD_LETTERS = new OutputTag<>("dead-letters") {};
    public static final OutputTag<InferenceResponse> ERROR_RESPONSES =
            new OutputTag<>("error-responses", InferenceTypes.RESPONSE) {};

    private final WireFormat format;
    private final ValidationLimits limits;
    private final TenantBinding tenants;
    private transient Counter decoded;
    private transient Counter deadLetters;
    private transient Counter failures;
    private transient Counter tenantRefusals;

    /** Tenants as the requests declare them. */
    public RequestParser(WireFormat format, ValidationLimits limits) {
        this(format, limits, TenantBinding.declared());
    }

    public RequestParser(WireFormat format, ValidationLimits limits, TenantBinding tenants) {
        this.format = format;
        this.limits = limits;
        this.tenants = tenants;
    }

    @Override
    public void open(OpenContext openContext) {
        var group = getRuntimeContext().getMetricGroup().addGroup(MetricNames.GROUP);
        decoded = group.counter(MetricNames.DECODED_REQUESTS);
        deadLetters = group.counter(MetricNames.DEAD_LETTERS);
        failures = group.counter(MetricNames.RECORD_FAILURES);
        tenantRefusals = group.counter(MetricNames.TENANT_REFUSALS);
    }

    @Override
    public void processElement(KafkaRecord record, Context ctx, Collector<InferenceRequest> out) {
        RequestAdmission.Decoded d;
        try {
            d = RequestAdmission.decode(record.value(), record.key(), format, limits);
        } catch (RuntimeException e) {
            // The last line of defence: a decoder bug must not become a restart loop.
            LOG.warn("Decoding the record at {} failed; dead-lettering it as INTERNAL", origin(record), e);
            failures.inc();
            reject(record, ErrorCode.INTERNAL, e.getClass().getName() + ": " + e.getMessage(),
                    RequestAdmission.keyAsId(record.key()), null, ctx);
            return;
        }
        if (d.ok()) {
            InferenceRequest r = d.request();
            TenantBinding.Result tenant = tenants.bind(record, r.parameters().tenant());
            if (!tenant.ok()) {
                tenantRefusals.inc();
                reject(record, tenant.error(), tenant.reason(), r.id(), r.modelName(), ctx);
                return;
            }
            out.collect(r.withParameters(r.parameters().withTenant(tenant.tenant()).withOrigin(origin(record))));
            decoded.inc();
        } else {
            reject(record, d.error().code(), d.error().getMessage(), d.requestId(), d.modelName(), ctx);
        }
    }

    private void reject(KafkaRecord record, ErrorCode code, String reason, String id, String model,
            Context ctx) {
        deadLetters.inc();
        ctx.output(DEAD_LETTERS, new DeadLetter(code, reason, id, record.topic(), record.partition(), record.offset(),
                record.value()));
        if (id != null) {
            ctx.output(ERROR_RESPONSES, InferenceResponse.failure(id, model, null, new InferenceError(code, reason),
                    Timings.NONE));
        }
    }

    /** {@code topic/partition@offset}: carried in the request so that a later refusal names its record. */
    static String origin(KafkaRecord record) {
        return record.topic() + "/" + record.partition() + "@" + record.offset();
    }
}
