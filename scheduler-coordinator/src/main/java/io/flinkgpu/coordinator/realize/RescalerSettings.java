package io.flinkgpu.coordinator.realize;

import java.time.Duration;
import java.util.List;

/**
 * What {@link Rescalers#create} needs to build the rescaler of a mode (the coordinator's options
 * {@code coordinator.parallelism.*} and {@code coordinator.flink.rest-*} fill it in).
 *
 * @param mode {@code off}, {@code adaptive}, {@code savepoint} or {@code auto} (any case, surrounding blanks ignored)
 * @param restUrl base URL of the Flink cluster's REST API
 * @param restTimeout timeout of one REST request
 * @param jarId the uploaded job jar that stop-with-savepoint rescaling resubmits (blank: none)
 * @param programArgs program arguments of the resubmitted job
 * @param savepointDir target directory of the stop-with-savepoint (empty: the cluster's default)
 */
public record RescalerSettings(String mode, String restUrl, Duration restTimeout, String jarId,
        List<String> programArgs, String savepointDir) {
    public RescalerSettings {
        programArgs = List.copyOf(programArgs);
    }
}
