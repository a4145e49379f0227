package io.flinkgpu.bench.scenario;

import java.nio.file.Path;
import java.util.List;

/** The scenarios by the names the command lines use. */
public final class Scenarios {
    /** Every scenario's name. */
    public static final List<String> NAMES = List.of(ImageScenario.NAME, RecommendationScenario.NAME,
            NlpScenario.NAME, NlpScenario.NAME_INT8);

    private Scenarios() {}

    /**
     * The scenario called {@code name} (one of {@link #NAMES}); {@code root} is the repository root,
     * {@code workDir} holds what a scenario generates (the DLRM export).
     */
    public static Scenario named(String name, Path root, Path workDir) throws Exception {
        return switch (name) {
            case ImageScenario.NAME -> new ImageScenario(root);
            case RecommendationScenario.NAME -> new RecommendationScenario(root, workDir.resolve("dlrm"));
            case NlpScenario.NAME -> new NlpScenario(NlpScenario.Precision.FP32);
            case NlpScenario.NAME_INT8 -> new NlpScenario(NlpScenario.Precision.INT8);
            default -> throw new IllegalArgumentException("unknown scenario " + name + "; use one of " + NAMES);
        };
    }
}
