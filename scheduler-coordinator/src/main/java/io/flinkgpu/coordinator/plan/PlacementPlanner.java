package io.flinkgpu.coordinator.plan;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Places model instances on devices.
 *
 * <ol>
 *   <li>Keep the current placement, minus models and devices that are gone, and evict from any
 *       device over its memory budget or model limit (lowest load first).
 *   <li>Decide how many instances each model wants: enough to keep each instance's share of its
 *       load under the target utilisation; fewer only once the load is below the target by the
 *       hysteresis margin, so replicas do not flap.
 *   <li>Let {@link DrfAllocator} divide memory, device time and CPU among the models by weight;
 *       it grants each at most what it wants.
 *   <li>Remove surplus instances (from the busiest devices), then add missing ones: a hot model
 *       on the least loaded device that fits (replicas spread load), a cold one packed onto the
 *       busiest device that still has headroom (co-location keeps devices free). With
 *       {@link PlannerSettings#sloColocation()} a new instance goes to a device none of whose
 *       models it conflicts with ({@link ModelSpec#compatibleWith}: one batch of the neighbour and
 *       one of its own must fit the tighter SLO) wherever such a device fits it within target x
 *       (1 + hysteresis), and surplus instances leave a conflicting device first.
 *   <li>Rebalance: while the busiest device is over target x (1 + hysteresis), move the instance
 *       whose move lowers the peak most, if that gain exceeds the move penalty, the model was not
 *       moved within the minimum interval, and a move back does not exceed the reversal limit.
 *       With SLO co-location, no move makes a conflict, and the moves left in the plan's budget
 *       separate conflicting pairs (those an earlier placement or a fallback made) under the same
 *       interval and reversal limits, each onto the least loaded device without a conflict that
 *       stays within target x (1 + hysteresis).
 * </ol>
 *
 * Scale to zero ({@link ScaleToZero}): a model measured idle for the scale-to-zero time wants no
 * instance; its instances leave ({@code SCALE_TO_ZERO}) and DRF gives it nothing. Every other
 * model wants at least one; one back from zero starts on a device that served it meanwhile.
 *
 * Deterministic (ties by name), plain Java; every decision carries its reason.
 */
public final class PlacementPlanner {
    private final PlannerSettings settings;
    private final DrfAllocator drf = new DrfAllocator();

    public PlacementPlanner(PlannerSettings settings) {
        this.settings = settings;
    }

    public PlannerSettings settings() {
        return settings;
    }

    public PlacementPlan plan(List<DeviceSpec> devices, List<ModelSpec> models, Placement current,
            List<MoveRecord> history, long now) {
        return plan(devices, models, current, history, now, Map.of());
    }

    /**
     * @param recentPeakLoad per model, the highest load measured within the scale-in
     *     stabilisation window: an instance is given back only if that peak, not just the latest
     *     sample, is low enough (as Kubernetes' HPA scales down on the highest recommendation of
     *     its window), so one low sample does not remove a replica that the next sample needs
     */
    public PlacementPlan plan(List<DeviceSpec> devices, List<ModelSpec> models, Placement current,
            List<MoveRecord> history, long now, Map<String, Double> recentPeakLoad) {
        return plan(devices, models, current, history, now, recentPeakLoad, ScaleToZero.NONE);
    }

    /**
     * @param zero the models that get no instance (idle for the scale-to-zero time) and those that
     *     come back from zero, with where they were served meanwhile
     */
    public PlacementPlan plan(List<DeviceSpec> devices, List<ModelSpec> models, Placement current,
            List<MoveRecord> history, long now, Map<String, Double> recentPeakLoad, ScaleToZero zero) {
        List<Decision> decisions = new ArrayList<>();
        Map<String, DeviceSpec> devs = new TreeMap<>();
        devices.forEach(d -> devs.put(d.id(), d));
        Map<String, ModelSpec> mods = new TreeMap<>();
        models.forEach(m -> mods.put(m.name(), m));
        Working w = new Working(devs, mods);

        // 1. what is still valid of the current placement
        current.devicesByModel().forEach((model, ds) -> {
            for (String d : ds) {
                if (!mods.containsKey(model)) {
                    decisions.add(new Decision(now, "UNLOAD", model, d, "model is no longer in the catalog"));
                } else if (!devs.containsKey(d)) {
                    decisions.add(new Decision(now, "UNLOAD", model, d, "device " + d + " is gone"));
                } else {
                    w.add(model, d);
                }
            }
        });
        for (DeviceSpec d : devs.values()) {
            while (w.memory(d.id()) > d.memoryBytes() || w.models(d.id()).size() > d.maxModels()) {
                String victim = w.models(d.id()).stream()
                        .min(Comparator.comparingDouble((String m) -> mods.get(m).load()).thenComparing(m -> m))
                        .orElseThrow();
                decisions.add(new Decision(now, "EVICT", victim, d.id(), String.format(Locale.ROOT,
                        "%s holds %s of %s bytes and %d of %d models; %s has the lowest load (%.3f)", d.id(),
                        w.memory(d.id()), d.memoryBytes(), w.models(d.id()).size(), d.maxModels(), victim,
                        mods.get(victim).load())));
                w.remove(victim, d.id());
            }
        }

        // 2. instances wanted, with hysteresis
        Map<String, Integer> wanted = new LinkedHashMap<>();
        Map<String, String> wantReason = new LinkedHashMap<>();
        double target = settings.targetUtilization();
        for (ModelSpec m : mods.values()) {
            int have = w.devices(m.name()).size();
            if (zero.atZero().containsKey(m.name())) {
                wanted.put(m.name(), 0);
                wantReason.put(m.name(), zero.atZero().get(m.name()));
                continue;
            }
            int up = Math.max(1, (int) Math.ceil(m.load() / target - 1e-9));
            int want;
            String why;
            if (up > have) {
                want = up;
                why = String.format(Locale.ROOT, "load %.3f device-s/s needs %d instance(s) at target %.2f", m.load(),
                        up, target);
            } else if (up < have && Math.max(m.load(), recentPeakLoad.getOrDefault(m.name(), 0.0))
                    <= (have - 1) * target * (1 - settings.hysteresis())) {
                double peak = Math.max(m.load(), recentPeakLoad.getOrDefault(m.name(), 0.0));
                want = Math.max(up, (int) Math.ceil(peak / (target * (1 - settings.hysteresis())) - 1e-9));
                want = Math.max(1, Math.min(want, have - 1));
                why = String.format(Locale.ROOT, "load %.3f device-s/s (peak of the stabilisation window %.3f) fell "
                        + "below %.3f (%d instances x target %.2f x (1 - %.2f hysteresis)); %d suffice", m.load(), peak,
                        (have - 1) * target * (1 - settings.hysteresis()), have - 1, target, settings.hysteresis(), want);
            } else if (up < have) {
                want = have;
                why = String.format(Locale.ROOT, "load %.3f device-s/s keeps %d instance(s): its peak within the "
                        + "stabilisation window, %.3f, is above %.3f", m.load(), have,
                        recentPeakLoad.getOrDefault(m.name(), 0.0), (have - 1) * target * (1 - settings.hysteresis()));
            } else {
                want = Math.max(have, up);
                why = String.format(Locale.ROOT, "load %.3f device-s/s keeps %d instance(s) (within hysteresis)",
                        m.load(), want);
            }
            wanted.put(m.name(), Math.min(want, Math.max(1, devs.size())));
            ScaleToZero.Back back = zero.back().get(m.name());
            wantReason.put(m.name(), back == null ? why : back.reason() + "; " + why);
        }

        // 3. DRF over the pooled capacity
        ResourceVector capacity = new ResourceVector(
                devs.values().stream().mapToDouble(DeviceSpec::memoryBytes).sum(), devs.size(),
                devs.values().stream().mapToDouble(DeviceSpec::cpuCores).sum());
        // Device time is soft: an overloaded fleet queues, it does not lose instances. When the
        // models together want more device time than the devices have, every claim is scaled down
        // in proportion, so DRF still divides it by weight but never refuses a model the replicas
        // it needs most just then; memory and model slots stay hard.
        double timeWanted = 0;
        for (ModelSpec m : mods.values()) {
            int want = wanted.get(m.name());
            if (want > 0) {
                timeWanted += want * Math.min(1.0, m.load() / want);
            }
        }
        double timeScale = timeWanted > capacity.deviceTime() ? capacity.deviceTime() / timeWanted : 1.0;
        if (timeScale < 1.0) {
            decisions.add(new Decision(now, "ALLOCATE", null, null, String.format(Locale.ROOT,
                    "models want %.3f device-s/s of %.0f devices: device-time claims scaled by %.3f (device time is "
                            + "soft; memory and model slots are not)", timeWanted, capacity.deviceTime(), timeScale)));
        }
        List<DrfClaimant> claimants = new ArrayList<>();
        for (ModelSpec m : mods.values()) {
            int want = wanted.get(m.name());
            if (want == 0) {
                continue; // scaled to zero: claims nothing
            }
            claimants.add(new DrfClaimant(m.name(), m.weight(), new ResourceVector(m.memoryBytes(),
                    Math.min(1.0, m.load() / want) * timeScale, m.cpuPerInstance()), want));
        }
        DrfAllocation allocation = drf.allocate(capacity, claimants);
        for (ModelSpec m : mods.values()) {
            if (allocation.tasks(m.name()) < wanted.get(m.name())) {
                decisions.add(new Decision(now, "ALLOCATE", m.name(), null, wantReason.get(m.name()) + "; DRF grants "
                        + allocation.reason(m.name())));
            }
        }

        // 4a. surplus instances leave the busiest devices; a model scaled to zero leaves every device
        for (ModelSpec m : mods.values()) {
            int granted = allocation.tasks(m.name());
            if (wanted.get(m.name()) == 0) {
                for (String d : new ArrayList<>(w.devices(m.name()))) {
                    w.remove(m.name(), d);
                    decisions.add(new Decision(now, "SCALE_TO_ZERO", m.name(), d, wantReason.get(m.name())
                            + "; UNLOAD from " + d + " and no route: a request for it keeps the job's hash routing "
                            + "(the subtask's device cache loads it on demand) and brings it back"));
                }
                continue;
            }
            while (w.devices(m.name()).size() > granted) {
                boolean colo = settings.sloColocation();
                String busiest = w.devices(m.name()).stream()
                        .max(Comparator.comparingInt((String d) -> colo && w.conflicts(m.name(), d) ? 1 : 0)
                                .thenComparingDouble(w::load).thenComparing(Comparator.reverseOrder()))
                        .orElseThrow();
                boolean conflicting = colo && w.conflicts(m.name(), busiest);
                w.remove(m.name(), busiest);
                decisions.add(new Decision(now, "SCALE_IN", m.name(), busiest, wantReason.get(m.name())
                        + (granted < wanted.get(m.name()) ? "; DRF grants " + granted : "")
                        + (conflicting ? "; removed from " + busiest + ", where its batches and a neighbour's "
                                + "conflict with an SLO" : "; removed from the busiest holder " + busiest)));
            }
        }
        // 4b. missing instances, hot models first
        List<ModelSpec> byLoad = new ArrayList<>(mods.values());
        byLoad.sort(Comparator.comparingDouble(ModelSpec::load).reversed().thenComparing(ModelSpec::name));
        for (ModelSpec m : byLoad) {
            int granted = allocation.tasks(m.name());
            while (w.devices(m.name()).size() < granted) {
                int n = w.devices(m.name()).size() + 1;
                double perInstance = m.load() / n;
                boolean hot = perInstance >= settings.hotThreshold();
                ScaleToZero.Back back = n == 1 ? zero.back().get(m.name()) : null;
                String servedOn = back == null ? null : servedOn(w, m, back);
                String d = servedOn != null ? servedOn : hot ? leastLoaded(w, m, perInstance) : packed(w, m, perInstance);
                String colocation = "";
                if (servedOn == null && settings.sloColocation() && d != null && w.conflicts(m.name(), d)) {
                    String apart = hot ? leastLoaded(w, m, apart(w, m, perInstance))
                            : packed(w, m, perInstance, apart(w, m, perInstance));
                    if (apart != null) {
                        colocation = String.format(Locale.ROOT, "; %s, not %s, whose models' batches and its own "
                                + "would not fit the SLO", apart, d);
                        d = apart;
                    } else {
                        colocation = "; no device without an SLO conflict fits it within target x (1 + hysteresis)";
                    }
                }
                if (d == null) {
                    decisions.add(new Decision(now, "UNPLACED", m.name(), null, String.format(Locale.ROOT,
                            "instance %d of %d: no device has %d bytes free and a free model slot", n, granted,
                            m.memoryBytes())));
                    break;
                }
                String action = n == 1 ? "LOAD" : "REPLICATE";
                w.add(m.name(), d);
                decisions.add(new Decision(now, action, m.name(), d, wantReason.get(m.name()) + (servedOn != null
                        ? "; -> " + d + ", where it was served while at zero (loaded there on demand)"
                        : String.format(Locale.ROOT, "; %s model (%.3f per instance, hot from %.2f) -> %s, %s",
                                hot ? "hot" : "cold", perInstance, settings.hotThreshold(), d,
                                hot ? "the least loaded device that fits" : "packed with others within target"))
                        + colocation));
            }
        }

        // 5. rebalance, bounded
        List<MoveRecord> moves = new ArrayList<>();
        List<MoveRecord> allMoves = new ArrayList<>(history);
        double overload = target * (1 + settings.hysteresis());
        java.util.Set<String> held = new TreeSet<>();
        while (moves.size() < settings.maxMovesPerPlan() && !devs.isEmpty()) {
            String hottest = devs.keySet().stream()
                    .max(Comparator.comparingDouble(w::load).thenComparing(Comparator.reverseOrder()))
                    .orElseThrow();
            double peak = w.load(hottest);
            if (peak <= overload) {
                break;
            }
            Candidate best = null;
            for (String model : w.models(hottest)) {
                double x = w.instanceLoad(model);
                MoveRecord last = lastMove(allMoves, model);
                if (last != null && now - last.atMillis() < settings.minMoveIntervalMillis()) {
                    if (held.add(model)) {
                        decisions.add(new Decision(now, "HOLD", model, hottest, String.format(Locale.ROOT,
                                "%s is at %.3f > %.3f but %s moved %d s ago (minimum interval %d s)", hottest, peak,
                                overload, model, (now - last.atMillis()) / 1000,
                                settings.minMoveIntervalMillis() / 1000)));
                    }
                    continue;
                }
                for (String to : devs.keySet()) {
                    if (to.equals(hottest) || w.devices(model).contains(to) || !w.fits(model, to)
                            || (settings.sloColocation() && w.conflicts(model, to))) {
                        continue;
                    }
                    double newPeak = Math.max(peak - x, w.load(to) + x);
                    double gain = peak - newPeak;
                    if (gain <= settings.movePenalty()) {
                        continue;
                    }
                    boolean reversal = isReversal(allMoves, model, hottest, to, now);
                    if (reversal && reversals(allMoves, model, now) >= settings.maxReversalsPerWindow()) {
                        if (held.add(model)) {
                            decisions.add(new Decision(now, "HOLD", model, hottest, String.format(Locale.ROOT,
                                    "moving %s back to %s would be its reversal number %d within %d min (limit %d)",
                                    model, to, reversals(allMoves, model, now) + 1,
                                    settings.reversalWindowMillis() / 60_000, settings.maxReversalsPerWindow())));
                        }
                        continue;
                    }
                    if (best == null || gain > best.gain + 1e-12
                            || (Math.abs(gain - best.gain) <= 1e-12 && (model + to).compareTo(best.model + best.to) < 0)) {
                        best = new Candidate(model, to, gain, newPeak, reversal);
                    }
                }
            }
            if (best == null) {
                break;
            }
            double toLoad = w.load(best.to);
            move(w, best.model, hottest, best.to, now, best.reversal, moves, allMoves);
            decisions.add(new Decision(now, "MOVE", best.model, best.to, String.format(Locale.ROOT,
                    "%s at %.3f device-s/s > %.3f (target %.2f + %.0f%% hysteresis); moving %s (%.3f) from %s to %s "
                            + "(%.3f) lowers the peak to %.3f, a gain of %.3f > move penalty %.3f%s",
                    hottest, peak, overload, target, settings.hysteresis() * 100, best.model,
                    w.instanceLoad(best.model), hottest, best.to, toLoad, best.newPeak, best.gain,
                    settings.movePenalty(), best.reversal ? " (a reversal)" : "")));
        }

        // 6. separate models whose batches conflict with an SLO, within the plan's move budget
        while (settings.sloColocation() && moves.size() < settings.maxMovesPerPlan()) {
            Candidate best = null;
            String bestFrom = null;
            for (String from : devs.keySet()) {
                for (String model : w.models(from)) {
                    if (!w.conflicts(model, from)) {
                        continue;
                    }
                    MoveRecord last = lastMove(allMoves, model);
                    if (last != null && now - last.atMillis() < settings.minMoveIntervalMillis()) {
                        continue;
                    }
                    double x = w.instanceLoad(model);
                    for (String to : devs.keySet()) {
                        if (to.equals(from) || w.devices(model).contains(to) || !w.fits(model, to)
                                || w.conflicts(model, to) || w.load(to) + x > overload) {
                            continue;
                        }
                        boolean reversal = isReversal(allMoves, model, from, to, now);
                        if (reversal && reversals(allMoves, model, now) >= settings.maxReversalsPerWindow()) {
                            continue;
                        }
                        double newLoad = w.load(to) + x;
                        if (best == null || newLoad < best.newPeak - 1e-12 || (Math.abs(newLoad - best.newPeak) <= 1e-12
                                && (model + to).compareTo(best.model + best.to) < 0)) {
                            best = new Candidate(model, to, 0, newLoad, reversal);
                            bestFrom = from;
                        }
                    }
                }
            }
            if (best == null) {
                break;
            }
            Candidate c = best;
            String from = bestFrom;
            ModelSpec ms = mods.get(c.model);
            String others = String.join(", ", w.models(from).stream()
                    .filter(o -> !o.equals(c.model) && !ms.compatibleWith(mods.get(o))).toList());
            move(w, c.model, from, c.to, now, c.reversal, moves, allMoves);
            decisions.add(new Decision(now, "MOVE", c.model, c.to, String.format(Locale.ROOT,
                    "on %s, %s (batch %.1f ms, SLO %s) and %s cannot both meet their SLOs behind each other's batches; "
                            + "moving %s to %s, the least loaded device without a conflict (%.3f after the move)%s",
                    from, c.model, ms.batchMillis(), ms.sloMillis() > 0 ? String.format(Locale.ROOT, "%.0f ms",
                            ms.sloMillis()) : "none", others, c.model, c.to, c.newPeak,
                    c.reversal ? " (a reversal)" : "")));
        }

        Map<String, Double> loads = new TreeMap<>();
        devs.keySet().forEach(d -> loads.put(d, w.load(d)));
        return new PlacementPlan(current, w.placement(), List.copyOf(decisions), List.copyOf(moves), loads,
                allocation);
    }

    private record Candidate(String model, String to, double gain, double newPeak, boolean reversal) {}

    /** Of the devices that served a model back from zero, the least loaded one it fits on, or null. */
    /** Moves {@code model}'s instance from {@code from} to {@code to} and records the move in this plan's and all moves. */
    private static void move(Working w, String model, String from, String to, long now, boolean reversal,
            List<MoveRecord> moves, List<MoveRecord> allMoves) {
        w.remove(model, from);
        w.add(model, to);
        MoveRecord record = new MoveRecord(model, from, to, now, reversal);
        moves.add(record);
        allMoves.add(record);
    }

    private static String servedOn(Working w, ModelSpec m, ScaleToZero.Back back) {
        return back.servedOn().stream()
                .filter(d -> w.devs.containsKey(d) && !w.devices(m.name()).contains(d) && w.fits(m.name(), d))
                .min(Comparator.comparingDouble(w::load).thenComparing(d -> d))
                .orElse(null);
    }

    private String leastLoaded(Working w, ModelSpec m, double perInstance) {
        return leastLoaded(w, m, d -> true);
    }

    /** The least loaded device that fits the instance and is allowed, or null. */
    private static String leastLoaded(Working w, ModelSpec m, java.util.function.Predicate<String> allowed) {
        return w.devs.keySet().stream()
                .filter(d -> !w.devices(m.name()).contains(d) && w.fits(m.name(), d) && allowed.test(d))
                .min(Comparator.comparingDouble(w::load)
                        .thenComparing(Comparator.comparingLong((String d) -> w.freeMemory(d)).reversed())
                        .thenComparing(d -> d))
                .orElse(null);
    }

    private String packed(Working w, ModelSpec m, double perInstance) {
        return packed(w, m, perInstance, d -> true);
    }

    /** The busiest allowed device that stays within target with the instance, else the least loaded allowed one. */
    private String packed(Working w, ModelSpec m, double perInstance, java.util.function.Predicate<String> allowed) {
        double target = settings.targetUtilization();
        String within = w.devs.keySet().stream()
                .filter(d -> !w.devices(m.name()).contains(d) && w.fits(m.name(), d) && allowed.test(d))
                .filter(d -> w.load(d) + perInstance <= target)
                .max(Comparator.comparingDouble(w::load)
                        .thenComparing(Comparator.comparingLong((String d) -> w.freeMemory(d)).reversed())
                        .thenComparing(Comparator.reverseOrder()))
                .orElse(null);
        return within != null ? within : leastLoaded(w, m, allowed);
    }

    /** The devices without an SLO conflict for the model that take the instance within target x (1 + hysteresis). */
    private java.util.function.Predicate<String> apart(Working w, ModelSpec m, double perInstance) {
        double overload = settings.targetUtilization() * (1 + settings.hysteresis());
        return d -> !w.conflicts(m.name(), d) && w.load(d) + perInstance <= overload;
    }

    private static MoveRecord lastMove(List<MoveRecord> moves, String model) {
        MoveRecord last = null;
        for (MoveRecord r : moves) {
            if (r.model().equals(model) && (last == null || r.atMillis() >= last.atMillis())) {
                last = r;
            }
        }
        return last;
    }

    private boolean isReversal(List<MoveRecord> moves, String model, String from, String to, long now) {
        for (MoveRecord r : moves) {
            if (r.model().equals(model) && r.from().equals(to) && r.to().equals(from)
                    && now - r.atMillis() < settings.reversalWindowMillis()) {
                return true;
            }
        }
        return false;
    }

    private int reversals(List<MoveRecord> moves, String model, long now) {
        int n = 0;
        for (MoveRecord r : moves) {
            if (r.model().equals(model) && r.reversal() && now - r.atMillis() < settings.reversalWindowMillis()) {
                n++;
            }
        }
        return n;
    }

    /**
     * The placement being built, with per-device memory and load. Indexed both ways (model to
     * devices, device to models) with each device's memory kept as instances come and go, so a
     * device's load or free memory costs its few models, not a scan of every model: the planner
     * asks for them once per device for every instance it places.
     */
    private static final class Working {
        final Map<String, DeviceSpec> devs;
        final Map<String, ModelSpec> mods;
        final SortedMap<String, SortedSet<String>> byModel = new TreeMap<>();
        final Map<String, SortedSet<String>> byDevice = new java.util.HashMap<>();
        final Map<String, Long> memoryUsed = new java.util.HashMap<>();

        Working(Map<String, DeviceSpec> devs, Map<String, ModelSpec> mods) {
            this.devs = devs;
            this.mods = mods;
        }

        void add(String model, String device) {
            if (byModel.computeIfAbsent(model, k -> new TreeSet<>()).add(device)) {
                byDevice.computeIfAbsent(device, k -> new TreeSet<>()).add(model);
                ModelSpec m = mods.get(model);
                memoryUsed.merge(device, m == null ? 0L : m.memoryBytes(), Long::sum);
            }
        }

        void remove(String model, String device) {
            SortedSet<String> ds = byModel.get(model);
            if (ds != null && ds.remove(device)) {
                if (ds.isEmpty()) {
                    byModel.remove(model);
                }
                SortedSet<String> ms = byDevice.get(device);
                ms.remove(model);
                if (ms.isEmpty()) {
                    byDevice.remove(device);
                }
                ModelSpec m = mods.get(model);
                memoryUsed.merge(device, -(m == null ? 0L : m.memoryBytes()), Long::sum);
            }
        }

        SortedSet<String> devices(String model) {
            return byModel.getOrDefault(model, new TreeSet<>());
        }

        /** The models on a device (a copy: callers may change the placement while they look). */
        SortedSet<String> models(String device) {
            SortedSet<String> ms = byDevice.get(device);
            return ms == null ? new TreeSet<>() : new TreeSet<>(ms);
        }

        long memory(String device) {
            return memoryUsed.getOrDefault(device, 0L);
        }

        long freeMemory(String device) {
            return devs.get(device).memoryBytes() - memory(device);
        }

        double instanceLoad(String model) {
            int n = devices(model).size();
            return n == 0 ? 0 : mods.get(model).load() / n;
        }

        double load(String device) {
            SortedSet<String> ms = byDevice.get(device);
            if (ms == null) {
                return 0;
            }
            return ms.stream().mapToDouble(this::instanceLoad).sum(); // sorted, as before: the same sum
        }

        /** Whether the model conflicts with any other model on the device ({@link ModelSpec#compatibleWith}). */
        boolean conflicts(String model, String device) {
            SortedSet<String> ms = byDevice.get(device);
            ModelSpec m = mods.get(model);
            if (ms == null || m == null || !(m.batchMillis() > 0)) {
                return false;
            }
            for (String other : ms) {
                ModelSpec o = mods.get(other);
                if (!other.equals(model) && o != null && !m.compatibleWith(o)) {
                    return true;
                }
            }
            return false;
        }

        boolean fits(String model, String device) {
            DeviceSpec d = devs.get(device);
            SortedSet<String> ms = byDevice.get(device);
            return freeMemory(device) >= mods.get(model).memoryBytes() && (ms == null ? 0 : ms.size()) < d.maxModels();
        }

        Placement placement() {
            return new Placement(byModel);
        }
    }
}
