package io.flinkgpu.bench.cache;

/** How the six models of the Zipf workload are placed on the two simulated GPUs. */
enum Placement {
    STATIC("static-one-model-per-device", 1, false,
            "one model slot per device; model i on device i mod 2; a request for another model swaps"),
    SHARED_PARTITIONED("shared-partitioned", 4, false,
            "up to 4 models per device (LRU); model i on device i mod 2"),
    SHARED_ANY_DEVICE("shared-any-device", 4, true,
            "up to 4 models per device (LRU); each model placed on the device with fewer models, a hot one "
                    + "replicated to the other device while a slot is free; requests to the shorter queue");

    final String key;
    final int maxModels;
    final boolean anyDevice;
    final String description;

    Placement(String key, int maxModels, boolean anyDevice, String description) {
        this.key = key;
        this.maxModels = maxModels;
        this.anyDevice = anyDevice;
        this.description = description;
    }
}
