package io.flinkgpu.coordinator.evaluate;

import java.util.Map;

/** The evaluate step's result: per model demand and per device load, at one instant. */
public record Demand(long atMillis, int parallelism, Map<String, ModelDemand> models, Map<String, DeviceLoad> devices) {}
