package io.flinkgpu.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TargetsTest {
    private static SimResult run(String policy, double load, double attainment, double goodputPerGpu) {
        return new SimResult(policy, load, 16, 200, 120, 20, 1000, 1000, (long) (attainment * 1000), 0, 0, 0, 0, 0, 5,
                50, 90, attainment, attainment, attainment, 0.5, goodputPerGpu, 100, 0, 0, 0, 1, List.of(), 0, 0,
                Map.of());
    }

    /** Every policy at loads 0.3 and 0.6; {@code name} at 99.5% to 0.6, the rest only at 0.3. */
    private static Map<String, List<SimResult>> trace(String... holdsAtHighLoad) {
        Map<String, List<SimResult>> t = new LinkedHashMap<>();
        List<String> names = new ArrayList<>();
        for (Policy p : Policy.values()) {
            names.add(p.label());
        }
        names.add("planner-max-models-32");
        for (String n : names) {
            boolean high = List.of(holdsAtHighLoad).contains(n);
            t.put(n, List.of(run(n, 0.3, n.equals("planner") ? 0.5 : 0.995, n.equals("planner") ? 100 : 400),
                    run(n, 0.6, high ? 0.995 : 0.6, high ? 800 : 450)));
        }
        return t;
    }

    private static RecoveryValidation.Outcome validation() {
        return new RecoveryValidation.Outcome(4.3, 4.4, 5, 5, Map.of(), Map.of(), List.of(), "test", List.of(4.3),
                List.of(5.0), Map.of(), "1+4*b", "batches of up to 32 samples");
    }

    private static Map<String, Object> find(List<Map<String, Object>> targets, String scenario, String name) {
        return targets.stream().filter(t -> t.get("scenario").equals(scenario) && t.get("target").equals(name))
                .findFirst().orElseThrow();
    }

    /** The planner holds the goals to 0.3 on both traces, its 32-slot variant to 0.6 on the long-tail one. */
    private static List<Map<String, Object>> evaluate(int longTailModels) {
        Map<String, Map<String, List<SimResult>>> traces = new LinkedHashMap<>();
        traces.put("dedicated", trace("planner"));
        traces.put("long-tail", trace("planner-max-models-32"));
        return Targets.evaluate(traces, List.of(), validation(), "planner-max-models-32",
                new Targets.LongTailSlots(longTailModels, 16, 8));
    }

    @Test
    void aPlannerWithFewerSlotsThanModelsIsComparedNotJudgedWhereAVariantWithEnoughSlotsRan() {
        List<Map<String, Object>> targets = evaluate(200);

        Map<String, Object> plain = find(targets, "long-tail", "goodput_per_gpu_vs_lru-memory");
        assertThat(plain.get("pass")).isNull();
        assertThat(plain.get("goal")).isEqualTo("compare");
        assertThat((String) plain.get("description")).contains("128 slots for 200 models", "at least 72 models");
        Map<String, Object> variant = find(targets, "long-tail", "planner-max-models-32_goodput_per_gpu_vs_lru-memory");
        assertThat(variant.get("pass")).isEqualTo(true);
        assertThat((double) variant.get("measured")).isEqualTo(2.0);
        // the dedicated trace is judged as before
        assertThat(find(targets, "dedicated", "goodput_per_gpu_vs_lru-memory").get("pass")).isEqualTo(true);
    }

    @Test
    void aPlannerWithSlotsForEveryModelIsJudged() {
        List<Map<String, Object>> targets = evaluate(100);
        Map<String, Object> plain = find(targets, "long-tail", "goodput_per_gpu_vs_lru-memory");
        assertThat(plain.get("goal")).isEqualTo("> 1");
        assertThat(plain.get("pass")).isEqualTo(false);
    }
}
