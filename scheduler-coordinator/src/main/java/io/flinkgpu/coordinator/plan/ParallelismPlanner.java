package io.flinkgpu.coordinator.plan;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * How many inference subtasks (slots) each device gets. Subtask {@code i} uses device
 * {@code i mod devices}, so the job's parallelism is slots-per-device x devices. A subtask's
 * mailbox thread validates, batches and answers requests while the device runs batches; when a
 * device's subtasks are saturated (Flink's busy time above {@code busyThreshold}) but the device
 * is not (its utilisation under the target), the operator, not the GPU, is the bottleneck, and
 * one more slot per device helps. When every subtask would stay below the threshold (less the
 * hysteresis) with one slot fewer, one is given back. With more GPUs than subtasks, every GPU
 * gets a slot first. Changes are at least {@code minInterval} apart: each restarts the job.
 */
public final class ParallelismPlanner {
    /** A parallelism to apply and why, or a hold and why. */
    public record Result(Optional<Integer> parallelism, Decision decision) {}

    private final int maxSlotsPerDevice;
    private final int configuredDevices;
    private final double busyThreshold;
    private final double targetUtilization;
    private final double hysteresis;
    private final Duration minInterval;

    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, double busyThreshold,
            double targetUtilization, double hysteresis, Duration minInterval) {
        if (maxSlotsPerDevice < 1 || configuredDevices < 0 || !(busyThreshold > 0 && busyThreshold <= 1)) {
            throw new IllegalArgumentException("max slots per device >= 1, device count >= 0, busy threshold in (0, 1]");
        }
        this.maxSlotsPerDevice = maxSlotsPerDevice;
        this.configuredDevices = configuredDevices;
        this.busyThreshold = busyThreshold;
        this.targetUtilization = targetUtilization;
        this.hysteresis = hysteresis;
        this.minInterval = minInterval;
    }

    /**
     * The parallelism to run at, if it should change.
     *
     * @param lastChangeMillis when the parallelism last changed (Long.MIN_VALUE: never)
     */
    public Optional<Result> plan(Collection<SlotLoad> devices, int parallelism, long nowMillis,
            long lastChangeMillis) {
        int n = Math.max(configuredDevices, devices.size());
        if (n == 0 || parallelism < 1) {
            return Optional.empty();
        }
        int slots = (parallelism + n - 1) / n;
        int target;
        String reason;
        if (parallelism < n) {
            target = n;
            reason = String.format(Locale.ROOT, "%d GPUs but %d inference subtasks: one slot on every GPU", n,
                    parallelism);
        } else {
            List<String> saturated = new ArrayList<>();
            double busiest = 0;
            for (SlotLoad d : devices) {
                busiest = Math.max(busiest, d.busyFraction());
                boolean deviceHasRoom = Double.isNaN(d.utilization()) || d.utilization() < targetUtilization;
                if (d.busyFraction() >= busyThreshold && deviceHasRoom) {
                    saturated.add(String.format(Locale.ROOT, "%s (subtasks busy %.2f >= %.2f, device utilisation %s)",
                            d.deviceId(), d.busyFraction(), busyThreshold, Double.isNaN(d.utilization()) ? "unknown"
                                    : String.format(Locale.ROOT, "%.2f < target %.2f", d.utilization(),
                                            targetUtilization)));
                }
            }
            if (!saturated.isEmpty() && slots < maxSlotsPerDevice) {
                target = (slots + 1) * n;
                reason = "operator-bound: " + String.join(", ", saturated) + "; " + (slots + 1)
                        + " slots per device";
            } else if (!saturated.isEmpty()) {
                return Optional.of(hold(nowMillis, "operator-bound " + saturated + " but already at "
                        + maxSlotsPerDevice + " slots per device (coordinator.parallelism.max-slots-per-device)"));
            } else if (slots > 1 && busiest * slots / (slots - 1) < busyThreshold * (1 - hysteresis)) {
                target = (slots - 1) * n;
                reason = String.format(Locale.ROOT, "busiest subtask %.2f busy; with %d slots per device it would be "
                        + "%.2f < %.2f (threshold less %.0f%% hysteresis)", busiest, slots - 1,
                        busiest * slots / (slots - 1), busyThreshold * (1 - hysteresis), hysteresis * 100);
            } else if (parallelism % n != 0) {
                target = slots * n;
                reason = parallelism + " subtasks over " + n + " GPUs is uneven: " + slots + " slots on every GPU";
            } else {
                return Optional.empty();
            }
        }
        if (target == parallelism) {
            return Optional.empty();
        }
        if (lastChangeMillis != Long.MIN_VALUE && nowMillis - lastChangeMillis < minInterval.toMillis()) {
            return Optional.of(hold(nowMillis, "would set parallelism " + parallelism + " -> " + target + " (" + reason
                    + ") but the last change was " + (nowMillis - lastChangeMillis) / 1000 + " s ago < "
                    + minInterval.toSeconds() + " s (coordinator.parallelism.min-interval)"));
        }
        return Optional.of(new Result(Optional.of(target), new Decision(nowMillis, "PARALLELISM", null, null,
                "parallelism " + parallelism + " -> " + target + ": " + reason)));
    }

    private static Result hold(long nowMillis, String reason) {
        return new Result(Optional.empty(), new Decision(nowMillis, "HOLD", null, null, reason));
    }
}
