package io.flinkgpu.coordinator.plan;

/** An amount of each {@link Resource}. */
public record ResourceVector(double deviceMemory, double deviceTime, double cpu) {
    public static final ResourceVector ZERO = new ResourceVector(0, 0, 0);

    public double get(Resource r) {
        return switch (r) {
            case DEVICE_MEMORY -> deviceMemory;
            case DEVICE_TIME -> deviceTime;
            case CPU -> cpu;
        };
    }

    public ResourceVector plus(ResourceVector o) {
        return new ResourceVector(deviceMemory + o.deviceMemory, deviceTime + o.deviceTime, cpu + o.cpu);
    }

    public ResourceVector minus(ResourceVector o) {
        return new ResourceVector(deviceMemory - o.deviceMemory, deviceTime - o.deviceTime, cpu - o.cpu);
    }

    public ResourceVector times(double k) {
        return new ResourceVector(deviceMemory * k, deviceTime * k, cpu * k);
    }

    /** Whether this fits in {@code capacity}, allowing a relative rounding error of 1e-9. */
    public boolean fitsIn(ResourceVector capacity) {
        for (Resource r : Resource.values()) {
            if (get(r) > capacity.get(r) * (1 + 1e-9) + 1e-12) {
                return false;
            }
        }
        return true;
    }

    public boolean isValid() {
        for (Resource r : Resource.values()) {
            if (!Double.isFinite(get(r)) || get(r) < 0) {
                return false;
            }
        }
        return true;
    }
}
