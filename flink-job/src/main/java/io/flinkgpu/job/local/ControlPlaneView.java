package io.flinkgpu.job.local;

import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.evaluate.Demand;
import io.flinkgpu.coordinator.evaluate.DeviceLoad;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.service.CoordinatorService;
import io.flinkgpu.coordinator.state.StateStore;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The control plane as the live summary shows it, read in-process from the coordinator the local
 * default runs: the plan epoch in force, each model's placement (devices, and the subtasks and
 * shares its requests are routed to), the latest decision with its reason (placement decisions
 * first: the parallelism planner's, logged only, would hide them), and each device's
 * utilisation and memory. Simulated devices are labelled so.
 *
 * <pre>
 * plan      epoch 2, published 6 s ago: placement changed: REPLICATE fashion-mnist-cnn@sim:1
 * placement fashion-mnist-cnn -> sim:0, sim:1 (subtask 0 48%, 1 52%) | fashion-mnist-mlp -> sim:1 (subtask 1)
 * decision  REPLICATE fashion-mnist-cnn@sim:1, 6 s ago: load 0.810 device-s/s needs 2 instance(s) at target 0.70; ...
 * devices   sim:0 (simulated GPU) util 41%, memory 2/8192 MiB | sim:1 (simulated GPU) util 38%, memory 4/8192 MiB
 * </pre>
 */
final class ControlPlaneView implements Supplier<List<String>> {
    /** Bookkeeping entries of the decision log that are not decisions of their own. */
    private static final Set<String> BOOKKEEPING = Set.of("DEMAND", "TENANT", "PUBLISH", "OBSERVE");
    /** Decisions about where models are: shown in preference to the others (ALLOCATE, PARALLELISM). */
    private static final Set<String> PLACEMENT = Set.of("LOAD", "REPLICATE", "SCALE_IN", "MOVE", "EVICT", "UNLOAD",
            "UNPLACED", "HOLD");
    private static final int MAX_REASON = 220;

    private final CoordinatorService service;

    ControlPlaneView(CoordinatorService service) {
        this.service = service;
    }

    @Override
    public List<String> get() {
        Coordinator coordinator = service.coordinator();
        StateStore store = service.store();
        long now = System.currentTimeMillis();
        List<String> lines = new ArrayList<>();
        Optional<ControlMessage> plan = store.lastPlan();
        if (plan.isEmpty()) {
            Coordinator.CycleResult cycle = service.lastCycle();
            RuntimeException failure = service.lastFailure();
            String why = failure != null ? "the last cycle failed: " + failure
                    : cycle == null ? "the first cycle has not run yet"
                    : cycle.skipped() == null || cycle.skipped().equals("unchanged") ? "no traffic measured yet"
                    : cycle.skipped();
            lines.add(line("plan", "none yet (" + truncate(why) + ")"));
        } else {
            ControlMessage p = plan.get();
            lines.add(line("plan", "epoch " + p.epoch() + ", published " + age(now, p.issuedAtMillis()) + ": "
                    + truncate(p.reason())));
            lines.add(line("placement", placement(store, p)));
        }
        decision(store, now).ifPresent(d -> lines.add(line("decision", d)));
        Demand demand = coordinator.lastDemand();
        if (demand != null && !demand.devices().isEmpty()) {
            lines.add(line("devices", devices(demand)));
        }
        return lines;
    }

    private static String placement(StateStore store, ControlMessage plan) {
        Map<String, SortedSet<String>> placement = new TreeMap<>(store.placement().devicesByModel());
        Map<String, ModelRoute> routes = new TreeMap<>();
        plan.routes().forEach(r -> routes.put(r.model(), r));
        routes.keySet().forEach(m -> placement.putIfAbsent(m, new java.util.TreeSet<>()));
        if (placement.isEmpty()) {
            return "no model placed";
        }
        List<String> parts = new ArrayList<>();
        placement.forEach((model, devices) -> {
            StringBuilder b = new StringBuilder(model).append(" -> ");
            b.append(devices.isEmpty() ? "(no device)" : String.join(", ", devices));
            ModelRoute route = routes.get(model);
            if (route != null && !route.targets().isEmpty()) {
                double total = route.targets().stream().mapToDouble(RouteTarget::weight).sum();
                List<String> targets = new ArrayList<>();
                for (RouteTarget t : route.targets()) {
                    targets.add(route.targets().size() == 1 ? String.valueOf(t.subtask())
                            : String.format(Locale.ROOT, "%d %.0f%%", t.subtask(), 100 * t.weight() / total));
                }
                b.append(" (subtask").append(route.targets().size() == 1 ? " " : "s ")
                        .append(String.join(", ", targets)).append(')');
            }
            parts.add(b.toString());
        });
        return String.join(" | ", parts);
    }

    /** The newest placement decision, else the newest that is not bookkeeping, else the newest publish. */
    private static Optional<String> decision(StateStore store, long now) {
        List<Decision> recent = store.recentDecisions(200);
        Decision chosen = null;
        for (int i = recent.size() - 1; i >= 0 && chosen == null; i--) {
            if (PLACEMENT.contains(recent.get(i).action())) {
                chosen = recent.get(i);
            }
        }
        for (int i = recent.size() - 1; i >= 0 && chosen == null; i--) {
            if (!BOOKKEEPING.contains(recent.get(i).action())) {
                chosen = recent.get(i);
            }
        }
        for (int i = recent.size() - 1; i >= 0 && chosen == null; i--) {
            if (recent.get(i).action().equals("PUBLISH")) {
                chosen = recent.get(i);
            }
        }
        if (chosen == null) {
            return Optional.empty();
        }
        String target = (chosen.model() == null ? "" : " " + chosen.model())
                + (chosen.device() == null ? "" : "@" + chosen.device());
        return Optional.of(chosen.action() + target + ", " + age(now, chosen.atMillis()) + ": "
                + truncate(chosen.reason()));
    }

    private static String devices(Demand demand) {
        List<String> parts = new ArrayList<>();
        for (DeviceLoad d : new TreeMap<>(demand.devices()).values()) {
            StringBuilder b = new StringBuilder(label(d.deviceId()));
            b.append(" util ").append(Double.isFinite(d.utilization())
                    ? String.format(Locale.ROOT, "%.0f%%", 100 * d.utilization()) : "-");
            if (d.memoryTotalBytes() > 0) {
                b.append(String.format(Locale.ROOT, ", memory %d/%d MiB", mib(d.memoryUsedBytes()),
                        mib(d.memoryTotalBytes())));
            }
            b.append(" [subtask").append(d.subtasks().size() == 1 ? " " : "s ")
                    .append(String.join(", ", d.subtasks().stream().map(String::valueOf).toList())).append(']');
            parts.add(b.toString());
        }
        return String.join(" | ", parts);
    }

    /** {@code sim:0 (simulated GPU)}; other devices by their id. */
    static String label(String deviceId) {
        return deviceId.startsWith("sim:") ? deviceId + " (simulated GPU)" : deviceId;
    }

    private static long mib(long bytes) {
        return (bytes + (1 << 20) - 1) >> 20;
    }

    private static String age(long now, long atMillis) {
        return Math.max(0, Math.round((now - atMillis) / 1000.0)) + " s ago";
    }

    private static String truncate(String text) {
        if (text == null) {
            return "";
        }
        String s = text.strip();
        return s.length() <= MAX_REASON ? s : s.substring(0, MAX_REASON - 3) + "...";
    }

    private static String line(String label, String text) {
        return String.format("%-10s%s", label, text);
    }
}
