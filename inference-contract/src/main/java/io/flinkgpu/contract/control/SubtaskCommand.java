package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;

/**
 * An instruction for one inference subtask: load a model (ahead of its traffic, so the first
 * request does not pay the cold start) or unload it (to free device memory for another).
 *
 * @param version the model version, or null for the served default
 * @param reason why, in words (which metric, which threshold)
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record SubtaskCommand(
        @JsonProperty(required = true) int subtask, @JsonProperty(required = true) Action action, String model, String version, String reason) {
    public enum Action {
        LOAD,
        UNLOAD
    }
}
