package io.flinkgpu.contract.control;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.annotation.JsonProperty;

/** One subtask serving a model; requests are spread over a model's targets in proportion to {@code weight}. */
@JsonIgnoreProperties(ignoreUnknown = true)
public record RouteTarget(@JsonProperty(required = true) int subtask, @JsonProperty(required = true) double weight) {}
