package io.flinkgpu.coordinator.realize;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

class RescalersTest {
    private static Optional<Rescaler> rescaler(Configuration c) {
        return Rescalers.create(CoordinatorOptions.rescalerSettings(c));
    }

    @Test
    void theParallelismArgumentIsSetOnceWhateverTheArgumentsHad() {
        assertThat(StopWithSavepointRescaler.withParallelism(List.of("--a", "1", "--inference.parallelism", "2", "--b", "x"), 4))
                .containsExactly("--a", "1", "--b", "x", "--inference.parallelism", "4");
        assertThat(StopWithSavepointRescaler.withParallelism(List.of("--inference.parallelism=3"), 1))
                .containsExactly("--inference.parallelism", "1");
        assertThat(StopWithSavepointRescaler.withParallelism(List.of(), 2)).containsExactly("--inference.parallelism", "2");
    }

    @Test
    void modesMapToRescalersAndBadOnesAreRefused() {
        Configuration c = new Configuration();
        assertThat(rescaler(c)).as("off by default").isEmpty();
        c.set(CoordinatorOptions.PARALLELISM_MODE, "adaptive");
        assertThat(rescaler(c)).containsInstanceOf(AdaptiveSchedulerRescaler.class);
        c.set(CoordinatorOptions.PARALLELISM_MODE, "savepoint");
        assertThatThrownBy(() -> rescaler(c)).hasMessageContaining("coordinator.parallelism.jar-id");
        c.set(CoordinatorOptions.JAR_ID, "abc_job.jar");
        assertThat(rescaler(c)).containsInstanceOf(StopWithSavepointRescaler.class);
        c.set(CoordinatorOptions.PARALLELISM_MODE, "auto");
        assertThat(rescaler(c)).isPresent();
        c.set(CoordinatorOptions.PARALLELISM_MODE, "sometimes");
        assertThatThrownBy(() -> rescaler(c)).hasMessageContaining("off, adaptive, savepoint or auto");
    }

    @Test
    void theFallbackRunsOnlyWhereTheFirstRescalerIsRefused() throws Exception {
        List<String> calls = new ArrayList<>();
        Rescaler refused = (j, v, p) -> {
            calls.add("adaptive " + p);
            throw new IOException("PUT resource-requirements answered 500");
        };
        Rescaler accepted = (j, v, p) -> calls.add("adaptive " + p);
        Rescaler fallback = (j, v, p) -> calls.add("savepoint " + p);

        Rescalers.withFallback(accepted, fallback).setParallelism("j", "v", 2);
        Rescalers.withFallback(refused, fallback).setParallelism("j", "v", 3);
        assertThat(calls).containsExactly("adaptive 2", "adaptive 3", "savepoint 3");
        assertThatThrownBy(() -> Rescalers.withFallback(refused, null).setParallelism("j", "v", 4))
                .hasMessageContaining("no fallback: set coordinator.parallelism.jar-id");
    }
}
