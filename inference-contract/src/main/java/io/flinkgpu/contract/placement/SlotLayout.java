package io.flinkgpu.contract.placement;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * Which device each inference subtask runs on: the one mapping from (parallelism, per-device slot
 * weights) to the device of every subtask index, shared by the job (the operator picks its device
 * with it, the router maps a plan's targets with it) and the coordinator (which plans slots per
 * device with it), so that "device d" means the same subtasks on both sides.
 *
 * <p><b>Slots per device</b> ({@link #slotCounts}): the parallelism {@code P} is split in proportion
 * to the weights by largest remainder (Hamilton's method): each device gets the whole part of its
 * quota {@code P * w / sum(w)}, and the slots left go to the largest fractional parts, ties to the
 * lower device index. When {@code P >= devices} every device gets at least one slot: a device whose
 * quota is under one gets exactly one, and the rest is split among the others the same way (repeated
 * until no quota is under one). With {@code P < devices} the devices with the largest quotas get one.
 *
 * <p><b>Which subtask</b> ({@link #assignment}): the layout of {@code P} is built from that of
 * {@code P - 1}: the new subtask {@code P - 1} goes to the device that gained a slot; where the split
 * of {@code P} takes a slot from a device (largest remainder can, rarely: the Alabama paradox), that
 * device's highest subtask moves to a device that gained one. So a rescale {@code P -> P + 1} moves
 * no subtask but those (the least any layout with these counts can move), and subtasks keep their
 * devices across rescales as far as the counts allow. With equal weights this is exactly
 * {@code i mod devices}, the layout the job always had.
 *
 * <p>Immutable and thread-safe; computing a layout costs {@code O(P * devices * log devices)}.
 */
public final class SlotLayout {
    /** Remainders and quotas closer than this count as equal (so that equal exact quotas tie by index). */
    private static final double EPS = 1e-9;

    private final double[] weights;
    private final boolean uniform;

    private SlotLayout(double[] weights) {
        this.weights = weights;
        boolean same = true;
        for (double w : weights) {
            same &= w == weights[0];
        }
        this.uniform = same;
    }

    /** {@code devices} devices of equal weight: subtask {@code i} on device {@code i mod devices}. */
    public static SlotLayout equal(int devices) {
        if (devices < 1) {
            throw new IllegalArgumentException("a slot layout needs at least one device, got " + devices);
        }
        double[] w = new double[devices];
        Arrays.fill(w, 1.0);
        return new SlotLayout(w);
    }

    /**
     * Devices weighted by {@code weights} (one per device, in device order).
     *
     * @throws IllegalArgumentException if there is none, or one is not a finite positive number
     */
    public static SlotLayout of(List<? extends Number> weights) {
        Objects.requireNonNull(weights, "weights");
        if (weights.isEmpty()) {
            throw new IllegalArgumentException("a slot layout needs at least one device weight");
        }
        double[] w = new double[weights.size()];
        for (int i = 0; i < w.length; i++) {
            Number n = weights.get(i);
            w[i] = n == null ? Double.NaN : n.doubleValue();
        }
        checkWeights(w);
        return new SlotLayout(w);
    }

    /** Why {@code weights} cannot be slot weights, or null where they can. */
    public static String invalidReason(List<? extends Number> weights) {
        if (weights == null || weights.isEmpty()) {
            return "no device weight given";
        }
        for (int i = 0; i < weights.size(); i++) {
            Number n = weights.get(i);
            double w = n == null ? Double.NaN : n.doubleValue();
            if (!(Double.isFinite(w) && w > 0)) {
                return String.format(Locale.ROOT, "device %d has weight %s; every weight must be a finite number > 0",
                        i, n);
            }
        }
        return null;
    }

    private static void checkWeights(double[] w) {
        for (int i = 0; i < w.length; i++) {
            if (!(Double.isFinite(w[i]) && w[i] > 0)) {
                throw new IllegalArgumentException(String.format(Locale.ROOT,
                        "device %d has weight %s; every slot weight must be a finite number > 0", i, w[i]));
            }
        }
    }

    public int devices() {
        return weights.length;
    }

    /** The weights, in device order. */
    public List<Double> weights() {
        List<Double> out = new ArrayList<>(weights.length);
        for (double w : weights) {
            out.add(w);
        }
        return List.copyOf(out);
    }

    /** Whether every device has the same weight (the layout is {@code i mod devices}). */
    public boolean isUniform() {
        return uniform;
    }

    /** How many of {@code parallelism} subtasks each device runs (largest remainder, see the class comment). */
    public int[] slotCounts(int parallelism) {
        int n = weights.length;
        int[] counts = new int[n];
        if (parallelism <= 0) {
            return counts;
        }
        boolean[] fixed = new boolean[n];
        int rest = parallelism;
        if (parallelism >= n) {
            boolean changed = true;
            while (changed) {
                changed = false;
                double total = 0;
                int free = 0;
                for (int d = 0; d < n; d++) {
                    if (!fixed[d]) {
                        total += weights[d];
                        free++;
                    }
                }
                if (free <= 1) {
                    break; // the heaviest device's quota is never under one; this guards rounding only
                }
                int pass = rest; // every quota of a pass against the same slots and weights
                for (int d = 0; d < n; d++) {
                    if (!fixed[d] && pass * weights[d] / total < 1 - EPS) {
                        fixed[d] = true;
                        counts[d] = 1;
                        rest--;
                        changed = true;
                    }
                }
            }
        }
        double total = 0;
        for (int d = 0; d < n; d++) {
            if (!fixed[d]) {
                total += weights[d];
            }
        }
        double[] remainder = new double[n];
        int given = 0;
        for (int d = 0; d < n; d++) {
            if (fixed[d]) {
                remainder[d] = Double.NEGATIVE_INFINITY;
                continue;
            }
            double quota = rest * weights[d] / total;
            int whole = (int) Math.floor(quota + EPS);
            counts[d] += whole;
            given += whole;
            remainder[d] = quota - whole;
        }
        for (int left = rest - given; left > 0; left--) {
            int best = -1;
            for (int d = 0; d < n; d++) {
                if (remainder[d] == Double.NEGATIVE_INFINITY) {
                    continue;
                }
                if (best < 0 || remainder[d] > remainder[best] + EPS) {
                    best = d;
                }
            }
            counts[best]++;
            remainder[best] = Double.NEGATIVE_INFINITY; // at most one extra slot each
        }
        return counts;
    }

    /** The device of every subtask {@code 0 .. parallelism - 1} (see the class comment). */
    public int[] assignment(int parallelism) {
        int n = weights.length;
        int[] device = new int[Math.max(0, parallelism)];
        int[] before = new int[n];
        // each device's subtasks in ascending order, as a stack per device (the highest on top)
        List<List<Integer>> byDevice = new ArrayList<>(n);
        for (int d = 0; d < n; d++) {
            byDevice.add(new ArrayList<>());
        }
        for (int p = 1; p <= parallelism; p++) {
            int[] after = slotCounts(p);
            List<Integer> free = new ArrayList<>();
            free.add(p - 1);
            for (int d = 0; d < n; d++) {
                for (int k = after[d]; k < before[d]; k++) {
                    List<Integer> own = byDevice.get(d);
                    free.add(own.remove(own.size() - 1));
                }
            }
            free.sort(null);
            int next = 0;
            for (int d = 0; d < n; d++) {
                for (int k = before[d]; k < after[d]; k++) {
                    int s = free.get(next++);
                    device[s] = d;
                    List<Integer> own = byDevice.get(d);
                    int at = java.util.Collections.binarySearch(own, s);
                    own.add(at < 0 ? -at - 1 : at, s);
                }
            }
            before = after;
        }
        return device;
    }

    /** The device of subtask {@code subtask} of {@code parallelism}. */
    public int deviceOf(int subtask, int parallelism) {
        if (subtask < 0 || subtask >= parallelism) {
            throw new IllegalArgumentException("subtask " + subtask + " is not one of " + parallelism);
        }
        return uniform ? subtask % weights.length : assignment(parallelism)[subtask];
    }

    /** The subtasks of {@code parallelism} that run on {@code device}, ascending. */
    public List<Integer> subtasksOf(int device, int parallelism) {
        if (device < 0 || device >= weights.length) {
            throw new IllegalArgumentException("device " + device + " is not one of " + weights.length);
        }
        int[] a = assignment(parallelism);
        List<Integer> out = new ArrayList<>();
        for (int s = 0; s < a.length; s++) {
            if (a[s] == device) {
                out.add(s);
            }
        }
        return List.copyOf(out);
    }

    /** The slots per device, e.g. {@code "3:1"}. */
    public static String describe(int[] counts) {
        StringBuilder b = new StringBuilder();
        for (int c : counts) {
            b.append(b.length() == 0 ? "" : ":").append(c);
        }
        return b.toString();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof SlotLayout other && Arrays.equals(weights, other.weights);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(weights);
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("SlotLayout[");
        for (int i = 0; i < weights.length; i++) {
            b.append(i == 0 ? "" : ":").append(weights[i] == Math.rint(weights[i]) ? String.valueOf((long) weights[i])
                    : String.valueOf(weights[i]));
        }
        return b.append(']').toString();
    }
}
