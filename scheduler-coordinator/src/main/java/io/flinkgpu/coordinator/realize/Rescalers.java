package io.flinkgpu.coordinator.realize;

import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The {@link Rescaler} that {@code coordinator.parallelism.mode} asks for. */
public final class Rescalers {
    private static final Logger LOG = LoggerFactory.getLogger(Rescalers.class);
    /** How long a stop-with-savepoint may take before the rescale counts as failed. */
    private static final Duration SAVEPOINT_TIMEOUT = Duration.ofMinutes(5);

    private Rescalers() {}

    /** Empty for mode {@code off}. */
    public static Optional<Rescaler> create(RescalerSettings settings) {
        String mode = settings.mode().trim().toLowerCase(Locale.ROOT);
        switch (mode) {
            case "off":
                return Optional.empty();
            case "adaptive":
                return Optional.of(adaptive(settings));
            case "savepoint":
                return Optional.of(savepoint(settings));
            case "auto": {
                Rescaler fallback = settings.jarId().isBlank() ? null : savepoint(settings);
                return Optional.of(withFallback(adaptive(settings), fallback));
            }
            default:
                throw new IllegalArgumentException("coordinator.parallelism.mode must be off, adaptive, savepoint or "
                        + "auto, not '" + mode + "'");
        }
    }

    private static AdaptiveSchedulerRescaler adaptive(RescalerSettings s) {
        return new AdaptiveSchedulerRescaler(s.restUrl(), s.restTimeout());
    }

    private static StopWithSavepointRescaler savepoint(RescalerSettings s) {
        return new StopWithSavepointRescaler(s.restUrl(), s.jarId(), s.programArgs(), s.savepointDir(),
                s.restTimeout(), SAVEPOINT_TIMEOUT);
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
