package io.flinkgpu.sim;

/** How the fleet places models and routes requests. Each is run on the same trace. */
public enum Policy {
    /** One model per GPU for the whole run, GPUs shared among models in proportion to their mean load (at least one each). */
    STATIC("static"),
    /** Every device loads models from the repository (its own rotation of it) until full, and never evicts (Triton's default). */
    NO_EVICTION("no-eviction"),
    /** Load on demand, at most 3 models per replica, least recently used out (Ray Serve model multiplexing). */
    LRU_COUNT("lru-count"),
    /** Load on demand, as many as memory holds, least recently used out (ModelMesh). */
    LRU_MEMORY("lru-memory"),
    /** The coordinator's loop (DemandEvaluator, PlacementPlanner with DRF) placing and routing every cycle. */
    PLANNER("planner");

    private final String label;

    Policy(String label) {
        this.label = label;
    }

    public String label() {
        return label;
    }

    public static Policy parse(String s) {
        for (Policy p : values()) {
            if (p.label.equals(s) || p.name().equalsIgnoreCase(s)) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown policy " + s);
    }
}
