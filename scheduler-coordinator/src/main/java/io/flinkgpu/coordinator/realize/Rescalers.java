package io.flinkgpu.coordinator.realize;

import io.flinkgpu.coordinator.CoordinatorOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import org.apache.flink.configuration.ReadableConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link Rescaler} that {@code coordinator.parallelism.mode} asks for. */
public final class Rescalers {
    private static final Logger LOG = LoggerFactory.getLogger(Rescalers.class);

    private Rescalers() {}

    /** Empty for mode {@code off}. */
    public static Optional<Rescaler> fromConfig(ReadableConfig config) {
        String mode = config.get(CoordinatorOptions.PARALLELISM_MODE).trim().toLowerCase(Locale.ROOT);
        String rest = config.get(CoordinatorOptions.REST_URL);
        Duration timeout = config.get(CoordinatorOptions.REST_TIMEOUT);
        switch (mode) {
            case "off":
                return Optional.empty();
            case "adaptive":
                return Optional.of(new ParallelismRealizer(rest, timeout));
            case "savepoint":
                return Optional.of(savepoint(config));
            case "auto": {
                Rescaler adaptive = new ParallelismRealizer(rest, timeout);
                Rescaler fallback = config.get(CoordinatorOptions.JAR_ID).isBlank() ? null : savepoint(config);
                return Optional.of(withFallback(adaptive, fallback));
            }
            default:
                throw new IllegalArgumentException("coordinator.parallelism.mode must be off, adaptive, savepoint or "
                        + "auto, not '" + mode + "'");
        }
    }

    private static SavepointRescaler savepoint(ReadableConfig config) {
        return new SavepointRescaler(config.get(CoordinatorOptions.REST_URL), config.get(CoordinatorOptions.JAR_ID),
                config.get(CoordinatorOptions.PROGRAM_ARGS), config.get(CoordinatorOptions.SAVEPOINT_DIR),
                config.get(CoordinatorOptions.REST_TIMEOUT), Duration.ofMinutes(5));
    }

    /** Tries {@code first}; where it fails (the default scheduler refuses resource requirements), {@code fallback}. */
    public static Rescaler withFallback(Rescaler first, Rescaler fallback) {
        return (jobId, vertexId, parallelism) -> {
            try {
                first.setParallelism(jobId, vertexId, parallelism);
            } catch (IOException e) {
                if (fallback == null) {
                    throw new IOException(e.getMessage() + "; no fallback: set coordinator.parallelism.jar-id for "
                            + "stop-with-savepoint rescaling", e);
                }
                LOG.info("Adaptive rescaling refused ({}); falling back to stop-with-savepoint", e.getMessage());
                fallback.setParallelism(jobId, vertexId, parallelism);
            }
        };
    }
}
