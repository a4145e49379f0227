package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import java.util.List;

/**
 * Where one model's requests go: the subtasks that hold it and their relative weights.
 *
 * @param reason why these subtasks and weights (e.g. "replicated: 1.7 device-seconds/s over 2 devices")
 */
@JsonIgnoreProperties(ignoreUnknown = true)
public record ModelRoute(String model, List<RouteTarget> targets, String reason) {
    public ModelRoute {
        targets = targets == null ? List.of() : List.copyOf(targets);
    }
}
