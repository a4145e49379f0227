package io.flinkgpu.inference.protocol;

/**
 * Stable error codes carried by error responses and dead-letter records. Codes are part of the
 * wire contract: add new ones, never rename.
 */
public enum ErrorCode {
    /** The payload is not a decodable request (bad JSON, bad binary framing, invalid UTF-8). */
    MALFORMED_PAYLOAD,
    /** A required field is absent (id, model_name, inputs, a tensor's name/shape/datatype/data). */
    MISSING_FIELD,
    /** A field has the wrong JSON type or an impossible value (negative dimension, bad priority). */
    INVALID_FIELD,
    UNKNOWN_MODEL,
    UNKNOWN_VERSION,
    /** An input that the model does not declare. */
    UNKNOWN_INPUT,
    /** An input that the model declares but the request lacks. */
    MISSING_INPUT,
    DATATYPE_MISMATCH,
    /** Wrong rank, a fixed dimension that differs, or inputs disagreeing on the batch dimension. */
    SHAPE_MISMATCH,
    /** The number of data elements does not match the product of the shape. */
    ELEMENT_COUNT_MISMATCH,
    /** Over the configured per-tensor element limit or the request byte limit. */
    TENSOR_TOO_LARGE,
    /** A NaN or infinity in an input whose model config forbids it. */
    NAN_NOT_ALLOWED,
    /** The request's batch dimension exceeds the model's max_batch_size. */
    BATCH_TOO_LARGE,
    /** The request's priority is outside the model's levels. */
    INVALID_PRIORITY,
    /** The request's deadline passed while it was queued (queue policy REJECT). */
    TIMEOUT,
    /** Its priority level's queue for the model is full. */
    QUEUE_FULL,
    /** Its tenant is over its rate limit or in-flight limit. */
    QUOTA_EXCEEDED,
    /** The predicted run time alone already exceeds the time left to its deadline. */
    DEADLINE_INFEASIBLE,
    /** Its tenant may not use this model. */
    FORBIDDEN_MODEL,
    /** The model could not be loaded onto the device. */
    MODEL_LOAD_FAILED,
    /** The runtime failed while executing the batch. */
    INFERENCE_FAILED,
    /** The response would exceed the largest record the responses topic accepts. */
    OUTPUT_TOO_LARGE,
    /** A bug: anything not covered above. */
    INTERNAL,
    /** The request claims a tenant other than the one its topic or signature binds it to. */
    TENANT_MISMATCH,
    /** The job binds tenants by signature and the record carries no valid one. */
    UNAUTHENTICATED
}
