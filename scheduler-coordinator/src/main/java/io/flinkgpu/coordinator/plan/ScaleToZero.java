package io.flinkgpu.coordinator.plan;

import java.util.Map;
import java.util.Set;

/**
 * The planner's scale-to-zero input: which models get no instance at all, and which come back
 * from zero this cycle. Measured elsewhere (the idle clocks of the loop's plan step); the planner
 * only follows it.
 *
 * @param atZero model -> why it gets zero instances (no requests measured for the whole
 *     scale-to-zero time); its instances leave with a {@code SCALE_TO_ZERO} decision each, and
 *     DRF gives it nothing
 * @param back model -> its return: the devices whose subtasks answered its requests while it had
 *     no instance (the job's hash routing sent them there and the device cache loaded it on
 *     demand), so its first instance goes to one of them where it fits, and why
 */
public record ScaleToZero(Map<String, String> atZero, Map<String, Back> back) {
    /** No model at zero, none coming back. */
    public static final ScaleToZero NONE = new ScaleToZero(Map.of(), Map.of());

    /** A model back from zero: where it was served meanwhile, and the reason in words. */
    public record Back(Set<String> servedOn, String reason) {
        public Back {
            servedOn = servedOn == null ? Set.of() : Set.copyOf(servedOn);
        }
    }

    public ScaleToZero {
        atZero = atZero == null ? Map.of() : Map.copyOf(atZero);
        back = back == null ? Map.of() : Map.copyOf(back);
    }
}
