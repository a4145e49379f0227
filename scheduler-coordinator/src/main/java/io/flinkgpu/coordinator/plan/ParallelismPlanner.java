package io.flinkgpu.coordinator.plan;

import io.flinkgpu.contract.placement.SlotLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * How many inference subtasks (slots) each device gets. The job places its subtasks by
 * {@link SlotLayout}: without device weights subtask {@code i} uses device {@code i mod devices}, so
 * the job's parallelism is slots-per-device x devices; with weights ({@code deviceWeights}, the
 * same as the job's {@code inference.device.slot-weights}) the devices get slots in proportion to
 * them, and the planner moves in levels: level {@code s} is the largest parallelism at which no
 * device has more than {@code s} slots (with equal weights {@code s x devices}), so a faster device
 * gets more slots per level and a slower one its share.
 *
 * <p>A subtask's mailbox thread validates, batches and answers requests while the device runs
 * batches; when a device's subtasks are saturated (Flink's busy time above {@code busyThreshold})
 * but the device is not (its utilisation under the target), the operator, not the GPU, is the
 * bottleneck, and one more level helps (with weights: the lowest level above the current one at
 * which every such device has a slot more; with equal weights one more slot per device), up to
 * {@code maxSlotsPerDevice} on the fullest device. When every device's busiest subtask would stay
 * below the threshold (less the hysteresis) with the slots of one level fewer, that level is taken.
 * With more GPUs than subtasks, every GPU gets a slot first, and a parallelism between levels is
 * evened out to its level. Changes are at least {@code minInterval} apart: each restarts the job.
 *
 * <p>Where the devices report their subtasks and device weights are set, the planner checks that
 * the job runs the layout the weights give; where it does not (the job's slot weights differ from
 * the coordinator's), it holds, saying so, rather than plan slots the job would place otherwise.
 */
public final class ParallelismPlanner {
    /** A parallelism to apply and why, or a hold and why. */
    public record Result(Optional<Integer> parallelism, Decision decision) {}

    private final int maxSlotsPerDevice;
    private final int configuredDevices;
    /** The devices' slot weights (empty: equal weights over however many devices there are). */
    private final List<Double> deviceWeights;
    private final double busyThreshold;
    private final double targetUtilization;
    private final double hysteresis;
    private final Duration minInterval;

    /** A planner for devices of equal weight: subtask {@code i} on device {@code i mod devices}. */
    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, double busyThreshold,
            double targetUtilization, double hysteresis, Duration minInterval) {
        this(maxSlotsPerDevice, configuredDevices, List.of(), busyThreshold, targetUtilization, hysteresis,
                minInterval);
    }

    /**
     * @param deviceWeights one positive weight per device in device order (empty: equal weights);
     *     with {@code configuredDevices} set too, there must be that many
     */
    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, List<Double> deviceWeights,
            double busyThreshold, double targetUtilization, double hysteresis, Duration minInterval) {
        if (maxSlotsPerDevice < 1 || configuredDevices < 0 || !(busyThreshold > 0 && busyThreshold <= 1)) {
            throw new IllegalArgumentException("max slots per device >= 1, device count >= 0, busy threshold in (0, 1]");
        }
        this.deviceWeights = List.copyOf(deviceWeights);
        if (!this.deviceWeights.isEmpty()) {
            String invalid = SlotLayout.invalidReason(this.deviceWeights);
            if (invalid != null) {
                throw new IllegalArgumentException("coordinator.parallelism.device-weights " + this.deviceWeights
                        + ": " + invalid);
            }
            if (configuredDevices > 0 && configuredDevices != this.deviceWeights.size()) {
                throw new IllegalArgumentException("coordinator.parallelism.device-weights has "
                        + this.deviceWeights.size() + " weight(s) but coordinator.parallelism.device-count is "
                        + configuredDevices + ": give one weight per device");
            }
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
        int n = deviceWeights.isEmpty() ? Math.max(configuredDevices, devices.size()) : deviceWeights.size();
        if (n == 0 || parallelism < 1) {
            return Optional.empty();
        }
        if (devices.size() > n) {
            return Optional.of(hold(nowMillis, "the job reports " + devices.size() + " devices but "
                    + "coordinator.parallelism.device-weights has " + n + " weight(s): give one weight per device"));
        }
        SlotLayout layout = deviceWeights.isEmpty() ? SlotLayout.equal(n) : SlotLayout.of(deviceWeights);
        int[] counts = layout.slotCounts(parallelism);
        SlotLoad[] byIndex = new SlotLoad[n];
        String mismatch = index(devices, layout, parallelism, byIndex);
        if (mismatch != null) {
            return Optional.of(hold(nowMillis, mismatch));
        }
        String[] names = new String[n];
        for (int d = 0; d < n; d++) {
            names[d] = byIndex[d] != null ? byIndex[d].deviceId() : "device " + d;
        }
        int slots = max(counts);
        int target;
        String reason;
        if (parallelism < n) {
            target = n;
            reason = String.format(Locale.ROOT, "%d GPUs but %d inference subtasks: one slot on every GPU", n,
                    parallelism);
        } else {
            List<String> saturated = new ArrayList<>();
            List<Integer> saturatedIndex = new ArrayList<>();
            double busiest = 0;
            for (int d = 0; d < n; d++) {
                SlotLoad l = byIndex[d];
                if (l == null) {
                    continue;
                }
                busiest = Math.max(busiest, l.busyFraction());
                boolean deviceHasRoom = Double.isNaN(l.utilization()) || l.utilization() < targetUtilization;
                if (l.busyFraction() >= busyThreshold && deviceHasRoom) {
                    saturatedIndex.add(d);
                    saturated.add(String.format(Locale.ROOT, "%s (subtasks busy %.2f >= %.2f, device utilisation %s)",
                            l.deviceId(), l.busyFraction(), busyThreshold, Double.isNaN(l.utilization()) ? "unknown"
                                    : String.format(Locale.ROOT, "%.2f < target %.2f", l.utilization(),
                                            targetUtilization)));
                }
            }
            int up = saturated.isEmpty() ? -1 : levelGiving(layout, n, slots, counts, saturatedIndex);
            int down = slots > 1 ? levelParallelism(layout, n, slots - 1) : -1;
            double projected = down < 0 ? Double.NaN : projectedBusy(byIndex, counts, layout.slotCounts(down));
            if (up > 0) {
                target = up;
                reason = "operator-bound: " + String.join(", ", saturated) + "; "
                        + slotsText(layout, layout.slotCounts(up), names);
            } else if (!saturated.isEmpty()) {
                return Optional.of(hold(nowMillis, layout.isUniform()
                        ? "operator-bound " + saturated + " but already at " + maxSlotsPerDevice
                                + " slots per device (coordinator.parallelism.max-slots-per-device)"
                        : "operator-bound " + saturated + " but at device weights " + weightsText()
                                + " no level within " + maxSlotsPerDevice + " slots per device on the fullest device "
                                + "(coordinator.parallelism.max-slots-per-device) gives " + String.join(", ",
                                        saturatedIndex.stream().map(d -> names[d]).toList()) + " another slot"));
            } else if (down > 0 && projected < busyThreshold * (1 - hysteresis)) {
                target = down;
                reason = String.format(Locale.ROOT, "busiest subtask %.2f busy; with %s it would be "
                        + "%.2f < %.2f (threshold less %.0f%% hysteresis)", busiest,
                        slotsText(layout, layout.slotCounts(down), names), projected,
                        busyThreshold * (1 - hysteresis), hysteresis * 100);
            } else if (parallelism != levelParallelism(layout, n, slots)) {
                target = levelParallelism(layout, n, slots);
                reason = layout.isUniform()
                        ? parallelism + " subtasks over " + n + " GPUs is uneven: " + slots + " slots on every GPU"
                        : parallelism + " subtasks over " + n + " GPUs (" + SlotLayout.describe(counts)
                                + ") are between levels: " + slotsText(layout, layout.slotCounts(target), names);
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

    /**
     * Puts each measured device at its index in the layout: the device of its lowest subtask where
     * the subtasks are known, else its position. With device weights, a device whose subtasks are not
     * the ones the layout gives it means the job runs another layout: the reason to hold, else null.
     */
    private String index(Collection<SlotLoad> devices, SlotLayout layout, int parallelism, SlotLoad[] byIndex) {
        int position = 0;
        for (SlotLoad l : devices) {
            int d = position++;
            if (!l.subtasks().isEmpty()) {
                int lowest = l.subtasks().stream().mapToInt(Integer::intValue).min().getAsInt();
                if (lowest >= 0 && lowest < parallelism) {
                    d = layout.deviceOf(lowest, parallelism);
                }
                if (!deviceWeights.isEmpty()) {
                    List<Integer> expected = layout.subtasksOf(d, parallelism);
                    List<Integer> measured = l.subtasks().stream().sorted().toList();
                    if (!expected.equals(measured)) {
                        return String.format(Locale.ROOT, "%s runs subtasks %s but coordinator.parallelism.device-"
                                + "weights %s at parallelism %d give it %s: the job's inference.device.slot-weights "
                                + "must be the same; not planning slots until they agree", l.deviceId(), measured,
                                weightsText(), parallelism, expected);
                    }
                }
            }
            if (d < byIndex.length && byIndex[d] == null) {
                byIndex[d] = l;
            }
        }
        return null;
    }

    /**
     * The parallelism of the lowest level above {@code slots}, up to the maximum, at which every
     * device in {@code gaining} has more slots than {@code counts}; -1 where none does.
     */
    private int levelGiving(SlotLayout layout, int n, int slots, int[] counts, List<Integer> gaining) {
        for (int level = slots + 1; level <= maxSlotsPerDevice; level++) {
            int p = levelParallelism(layout, n, level);
            int[] c = layout.slotCounts(p);
            if (gaining.stream().allMatch(d -> c[d] > counts[d])) {
                return p;
            }
        }
        return -1;
    }

    /** Level {@code slots}: the largest parallelism at which no device has more than {@code slots} slots. */
    static int levelParallelism(SlotLayout layout, int n, int slots) {
        for (int p = slots * n; p > n; p--) {
            if (max(layout.slotCounts(p)) <= slots) {
                return p;
            }
        }
        return n;
    }

    /** The busiest device's subtask busy time with {@code fewer} slots instead of {@code counts}. */
    private static double projectedBusy(SlotLoad[] byIndex, int[] counts, int[] fewer) {
        double worst = 0;
        for (int d = 0; d < byIndex.length; d++) {
            if (byIndex[d] != null && fewer[d] > 0) {
                worst = Math.max(worst, byIndex[d].busyFraction() * counts[d] / fewer[d]);
            }
        }
        return worst;
    }

    /** "3 slots per device" where every device has as many, else the count of each. */
    private String slotsText(SlotLayout layout, int[] counts, String[] names) {
        boolean even = true;
        for (int c : counts) {
            even &= c == counts[0];
        }
        if (even && layout.isUniform()) {
            return counts[0] + " slots per device";
        }
        StringBuilder b = new StringBuilder("slots per device ").append(SlotLayout.describe(counts)).append(" (");
        for (int d = 0; d < counts.length; d++) {
            b.append(d == 0 ? "" : ", ").append(names[d]).append(' ').append(counts[d]);
        }
        b.append(deviceWeights.isEmpty() ? "" : "; device weights " + weightsText());
        return b.append(')').toString();
    }

    private String weightsText() {
        return deviceWeights.stream().map(w -> w == Math.rint(w) ? String.valueOf(w.longValue()) : String.valueOf(w))
                .reduce((a, b) -> a + ":" + b).orElse("");
    }

    private static int max(int[] counts) {
        int m = 0;
        for (int c : counts) {
            m = Math.max(m, c);
        }
        return m;
    }

    private static Result hold(long nowMillis, String reason) {
        return new Result(Optional.empty(), new Decision(nowMillis, "HOLD", null, null, reason));
    }
}
