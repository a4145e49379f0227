package io.flinkgpu.inference.operator;

import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.InferenceError;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;

/**
 * An event that {@link GpuInference#enrich} could not enrich, and why: emitted on the side output
 * {@link GpuInference#enrichmentFailures} instead of an enriched record, exactly once per event and
 * run (like enriched records, at-least-once across restores).
 *
 * @param event the event as it came in
 * @param error why: a refusal of its inputs (e.g. {@code SHAPE_MISMATCH}), of its model
 *     ({@code UNKNOWN_MODEL}), of load or deadline ({@code QUEUE_FULL}, {@code TIMEOUT}), a failed
 *     run ({@code MODEL_LOAD_FAILED}, {@code INFERENCE_FAILED}), or {@code INTERNAL} where a function
 *     of the enrichment threw or returned null
 * @param model the model the enrichment names
 * @param modelVersion the version that answered, or null where none was resolved
 */
public record EnrichmentFailure<T>(T event, InferenceError error, String model, String modelVersion) {

    /** The side output's id. */
    static final String TAG_ID = "enrichment-failures";

    public EnrichmentFailure {
        Objects.requireNonNull(event, "event");
        Objects.requireNonNull(error, "error");
    }

    public ErrorCode code() {
        return error.code();
    }

    /** Flink's type of failures of events of {@code eventType}: a POJO whose event is serialized as the events are. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static <T> TypeInformation<EnrichmentFailure<T>> typeOf(TypeInformation<T> eventType) {
        Map<String, TypeInformation<?>> fields = new LinkedHashMap<>();
        fields.put("event", Objects.requireNonNull(eventType, "event type"));
        fields.put("error", TypeInformation.of(InferenceError.class));
        fields.put("model", Types.STRING);
        fields.put("modelVersion", Types.STRING);
        return (TypeInformation) Types.POJO(EnrichmentFailure.class, fields);
    }
}
