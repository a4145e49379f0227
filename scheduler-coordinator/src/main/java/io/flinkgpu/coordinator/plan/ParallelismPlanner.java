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
 * batches; when a device's subtasks are saturated (Flink's busy time above {@code busyThreshold}),
 * or the forecast rate would make them so, but the device is not (its utilisation under the
 * target), the operator, not the GPU, is the bottleneck, and more slots help.
 *
 * <p><b>How many</b> is sized from the measured rate, as Flink's autoscaler and DS2 do: a device's
 * subtasks' true rate per slot is their measured requests per second over their busy time (the rate
 * they would take fully busy, {@code rate / (mean busy x slots)}); the device needs
 * {@code required = ceil(demand / (true rate per slot x targetBusy))} slots, the demand being the
 * larger of the measured rate and the forecast where there is one. The planner goes straight to the
 * lowest level that gives every operator-bound device its required slots (at least one more), up
 * to {@code maxSlotsPerDevice} on the fullest device (where none within it does, the highest that
 * still gives each one more). Down, it goes straight to the lowest level at which every measured
 * device keeps its required slots and every device's busiest subtask, projected to that level's
 * slots (and to the forecast), stays under the threshold less the hysteresis. {@code targetBusy}
 * lies in that band, between {@code busyThreshold x (1 - hysteresis)} and the threshold (by default
 * its middle, {@code busyThreshold x (1 - hysteresis / 2)}): a level sized up to it is not given
 * back while the demand holds, and one given back sits under the bound, clear of the threshold.
 *
 * <p>Where a device's rate is not measured or zero, or its busy time is under
 * {@value #MIN_MEASURABLE_BUSY} (too small to divide by), it is stepped by busy time alone: an
 * operator-bound one needs one slot more (with weights: the lowest level above the current one at
 * which it has a slot more); and where no device is measured, a level is given back only one at a
 * time, when every device's busiest subtask would stay below the threshold less the hysteresis with
 * the slots of one level fewer. With more GPUs than subtasks, every GPU gets a slot first, and a
 * parallelism between levels is evened out to its level. Changes are at least {@code minInterval}
 * apart: each restarts the job. Every decision's reason gives the numbers it was sized by.
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
    /** The busy time a device's slots are sized for. */
    private final double targetBusy;

    /** Below this busy time a subtask's true rate is not measured: it is stepped by busy time. */
    public static final double MIN_MEASURABLE_BUSY = 0.05;
    /** The most slots a sizing asks for on one device (it is capped by the maximum slots anyway). */
    private static final int MAX_REQUIRED = 1 << 20;

    /** A planner for devices of equal weight: subtask {@code i} on device {@code i mod devices}. */
    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, double busyThreshold,
            double targetUtilization, double hysteresis, Duration minInterval) {
        this(maxSlotsPerDevice, configuredDevices, List.of(), busyThreshold, targetUtilization, hysteresis,
                minInterval);
    }

    /**
     * With the default target busy time, {@link #defaultTargetBusy}.
     *
     * @param deviceWeights one positive weight per device in device order (empty: equal weights);
     *     with {@code configuredDevices} set too, there must be that many
     */
    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, List<Double> deviceWeights,
            double busyThreshold, double targetUtilization, double hysteresis, Duration minInterval) {
        this(maxSlotsPerDevice, configuredDevices, deviceWeights, busyThreshold, targetUtilization, hysteresis,
                minInterval, Double.NaN);
    }

    /**
     * @param targetBusy the busy time slots are sized for, in
     *     {@code [busyThreshold x (1 - hysteresis), busyThreshold]}; NaN: {@link #defaultTargetBusy}
     */
    public ParallelismPlanner(int maxSlotsPerDevice, int configuredDevices, List<Double> deviceWeights,
            double busyThreshold, double targetUtilization, double hysteresis, Duration minInterval,
            double targetBusy) {
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
        if (Double.isNaN(targetBusy)) {
            this.targetBusy = defaultTargetBusy(busyThreshold, hysteresis);
        } else if (targetBusy >= busyThreshold * (1 - hysteresis) - 1e-12 && targetBusy <= busyThreshold && targetBusy > 0) {
            this.targetBusy = targetBusy;
        } else {
            throw new IllegalArgumentException(String.format(Locale.ROOT, "coordinator.parallelism.target-busy %s "
                    + "must lie in [%.3f, %.3f]: between coordinator.parallelism.busy-threshold x (1 - "
                    + "coordinator.plan.hysteresis) and the threshold, or a sized level would be given back or grow "
                    + "again at once", targetBusy, busyThreshold * (1 - hysteresis), busyThreshold));
        }
    }

    /**
     * The target busy time by default: the middle of the band between the scale-down bound
     * {@code busyThreshold x (1 - hysteresis)} and the threshold, {@code busyThreshold x (1 - hysteresis / 2)}
     * (0.74 at the defaults 0.8 and 0.15).
     */
    public static double defaultTargetBusy(double busyThreshold, double hysteresis) {
        return busyThreshold * (1 - Math.max(0, Math.min(1, hysteresis)) / 2);
    }

    /** The busy time slots are sized for. */
    public double targetBusy() {
        return targetBusy;
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
            Sizing[] sizing = new Sizing[n];
            List<String> saturated = new ArrayList<>();
            List<Integer> saturatedIndex = new ArrayList<>();
            int[] need = new int[n];
            double busiest = 0;
            for (int d = 0; d < n; d++) {
                SlotLoad l = byIndex[d];
                if (l == null) {
                    continue;
                }
                sizing[d] = sizing(l, counts[d]);
                busiest = Math.max(busiest, l.busyFraction());
                boolean deviceHasRoom = Double.isNaN(l.utilization()) || l.utilization() < targetUtilization;
                String utilisation = Double.isNaN(l.utilization()) ? "unknown" : String.format(Locale.ROOT,
                        "%.2f < target %.2f", l.utilization(), targetUtilization);
                Sizing z = sizing[d];
                if (l.busyFraction() >= busyThreshold && deviceHasRoom) {
                    saturated.add(String.format(Locale.ROOT, "%s (subtasks busy %.2f >= %.2f, device utilisation %s)",
                            l.deviceId(), l.busyFraction(), busyThreshold, utilisation));
                } else if (z != null && z.forecast() && z.busyAt(counts[d]) >= busyThreshold && deviceHasRoom) {
                    saturated.add(String.format(Locale.ROOT, "%s (forecast %.1f/s would make its subtasks %.2f busy "
                            + ">= %.2f, device utilisation %s)", l.deviceId(), z.demand(), z.busyAt(counts[d]),
                            busyThreshold, utilisation));
                } else {
                    continue;
                }
                saturatedIndex.add(d);
                need[d] = z == null ? counts[d] + 1 : Math.max(z.required(), counts[d] + 1);
            }
            String sized = sizingText(sizing, byIndex, names);
            int[] up = saturated.isEmpty() ? null : levelFor(layout, n, slots, counts, saturatedIndex, need);
            if (up != null) {
                target = up[0];
                reason = "operator-bound: " + String.join(", ", saturated) + "; " + sized
                        + slotsText(layout, layout.slotCounts(target), names)
                        + (up[1] == 0 ? "" : " (fewer than required: coordinator.parallelism.max-slots-per-device is "
                                + maxSlotsPerDevice + ")");
            } else if (!saturated.isEmpty()) {
                return Optional.of(hold(nowMillis, layout.isUniform()
                        ? "operator-bound " + saturated + " but already at " + maxSlotsPerDevice
                                + " slots per device (coordinator.parallelism.max-slots-per-device)"
                        : "operator-bound " + saturated + " but at device weights " + weightsText()
                                + " no level within " + maxSlotsPerDevice + " slots per device on the fullest device "
                                + "(coordinator.parallelism.max-slots-per-device) gives " + String.join(", ",
                                        saturatedIndex.stream().map(d -> names[d]).toList()) + " another slot"));
            } else {
                int down = slots > 1 ? levelDown(layout, n, slots, counts, byIndex, sizing) : -1;
                if (down > 0) {
                    target = down;
                    reason = String.format(Locale.ROOT, "%sbusiest subtask %.2f busy; with %s it would be "
                            + "%.2f < %.2f (threshold less %.0f%% hysteresis)", sized, busiest,
                            slotsText(layout, layout.slotCounts(down), names),
                            projectedBusy(byIndex, counts, layout.slotCounts(down), sizing),
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
     * The level to scale up to: the parallelism of the lowest level above {@code slots}, up to the
     * maximum, at which every device in {@code gaining} has at least {@code need} slots, with 0; where
     * none within the maximum does, the highest at which every one of them still has more slots than
     * {@code counts}, with 1 (capped); null where no level gives them all another slot.
     */
    private int[] levelFor(SlotLayout layout, int n, int slots, int[] counts, List<Integer> gaining, int[] need) {
        int capped = -1;
        for (int level = slots + 1; level <= maxSlotsPerDevice; level++) {
            int p = levelParallelism(layout, n, level);
            int[] c = layout.slotCounts(p);
            if (gaining.stream().allMatch(d -> c[d] >= need[d])) {
                return new int[] {p, 0};
            }
            if (gaining.stream().allMatch(d -> c[d] > counts[d])) {
                capped = p;
            }
        }
        return capped < 0 ? null : new int[] {capped, 1};
    }

    /**
     * The level to scale down to, or -1: where no device's true rate is measured, the level below
     * {@code slots} if its projected busy time stays under the threshold less the hysteresis (one
     * level per step); where some are, the lowest level at which every measured device keeps its
     * required slots and the projected busy time of every device stays under that bound.
     */
    private int levelDown(SlotLayout layout, int n, int slots, int[] counts, SlotLoad[] byIndex, Sizing[] sizing) {
        double bound = busyThreshold * (1 - hysteresis);
        boolean measured = java.util.Arrays.stream(sizing).anyMatch(java.util.Objects::nonNull);
        for (int level = measured ? 1 : slots - 1; level < slots; level++) {
            int p = levelParallelism(layout, n, level);
            int[] c = layout.slotCounts(p);
            boolean enough = true;
            for (int d = 0; d < n; d++) {
                enough &= sizing[d] == null || c[d] >= sizing[d].required();
            }
            if (enough && p < levelParallelism(layout, n, slots) && projectedBusy(byIndex, counts, c, sizing) < bound) {
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

    /**
     * The busiest device's subtask busy time with {@code fewer} slots instead of {@code counts}, each
     * device's scaled up by its demand over its measured rate where the forecast expects more.
     */
    private static double projectedBusy(SlotLoad[] byIndex, int[] counts, int[] fewer, Sizing[] sizing) {
        double worst = 0;
        for (int d = 0; d < byIndex.length; d++) {
            if (byIndex[d] != null && fewer[d] > 0) {
                double growth = sizing[d] == null ? 1 : Math.max(1, sizing[d].demand() / sizing[d].rate());
                worst = Math.max(worst, byIndex[d].busyFraction() * counts[d] / fewer[d] * growth);
            }
        }
        return worst;
    }

    /**
     * What a device's measured rate says it needs: its subtasks' true rate per slot (the measured
     * rate over their busy time, as Flink's autoscaler and DS2 derive it), the demand to serve (the
     * measured rate or the forecast, the larger) and the slots that carry it at the target busy time.
     */
    private record Sizing(String device, double rate, double busy, int slots, double perSlot, double demand,
            boolean forecast, double targetBusy, int required) {
        /** The busy time of its subtasks with {@code s} slots at the demand. */
        double busyAt(int s) {
            return demand / (perSlot * s);
        }

        String text() {
            return String.format(Locale.ROOT, "%s observed %.1f/s at busy %.2f on %d slot(s): true rate %.1f/s per "
                    + "slot, demand %.1f/s (%s), required ceil(%.1f / (%.1f x %.2f)) = %d slot(s)", device, rate, busy,
                    slots, perSlot, demand, forecast ? "forecast" : "observed", demand, perSlot, targetBusy, required);
        }
    }

    /** The device's sizing, or null where its true rate cannot be measured (no rate, busy time too small). */
    private Sizing sizing(SlotLoad l, int slots) {
        double rate = l.ratePerSecond();
        double busy = Math.min(1, l.meanBusy());
        if (slots < 1 || !(Double.isFinite(rate) && rate > 0) || !(busy >= MIN_MEASURABLE_BUSY)) {
            return null;
        }
        double perSlot = rate / (busy * slots);
        double demand = l.demandRate();
        double exact = demand / (perSlot * targetBusy);
        int required = (int) Math.max(1, Math.min(MAX_REQUIRED, Math.ceil(exact - 1e-9)));
        return new Sizing(l.deviceId(), rate, busy, slots, perSlot, demand, demand > rate, targetBusy, required);
    }

    /** The sizing of every measured device, and which were not, for a decision's reason ("" where none is). */
    private static String sizingText(Sizing[] sizing, SlotLoad[] byIndex, String[] names) {
        List<String> measured = new ArrayList<>();
        List<String> not = new ArrayList<>();
        for (int d = 0; d < sizing.length; d++) {
            if (sizing[d] != null) {
                measured.add(sizing[d].text());
            } else if (byIndex[d] != null) {
                not.add(names[d]);
            }
        }
        if (measured.isEmpty()) {
            return "";
        }
        return "sized by rate: " + String.join(", ", measured) + (not.isEmpty() ? "" : "; " + String.join(", ", not)
                + " by busy time (no rate or busy under " + MIN_MEASURABLE_BUSY + ")") + "; ";
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
