package io.flinkgpu.coordinator.state;

import java.util.Map;
import java.util.TreeMap;

/**
 * One model's idle clock, as the scale-to-zero step last left it: the counters it compared, when
 * the model's requests last grew, and whether it was scaled to zero. Stored, so a restarted
 * coordinator goes on from the counters rather than from a guess: requests the job answered while
 * the coordinator was down show as counters that grew.
 *
 * @param jobId the job whose counters these are (another job's counters start again)
 * @param requestsBySubtask per inference subtask, the model's {@code requestsIn} summed over its
 *     versions at the last observation (a subtask without the model's metrics counts 0)
 * @param observedAtMillis when they were read
 * @param idleSinceMillis since when every observation found the counters unchanged (the last
 *     growth, or the last time growth could not be ruled out)
 * @param zeroSinceMillis when the model was scaled to zero, or -1 while it is not
 */
public record IdleClock(String jobId, Map<Integer, Double> requestsBySubtask, long observedAtMillis,
        long idleSinceMillis, long zeroSinceMillis) {
    public IdleClock {
        requestsBySubtask = requestsBySubtask == null ? Map.of()
                : java.util.Collections.unmodifiableMap(new TreeMap<>(requestsBySubtask));
    }

    public boolean atZero() {
        return zeroSinceMillis >= 0;
    }
}
