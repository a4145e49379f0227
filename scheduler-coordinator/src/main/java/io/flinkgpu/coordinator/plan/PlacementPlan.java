package io.flinkgpu.coordinator.plan;

import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The planner's output: the new placement, the decisions that led to it (with reasons), the
 * relocations it makes, and each device's projected load.
 */
public record PlacementPlan(
        Placement previous,
        Placement placement,
        List<Decision> decisions,
        List<MoveRecord> moves,
        Map<String, Double> deviceLoad,
        DrfAllocation allocation) {

    public boolean changesPlacement() {
        return !previous.equals(placement);
    }

    /**
     * The routing table: each model to the subtasks of the devices that hold it, weighted by the
     * device's projected headroom (GPU-utilisation-weighted round robin), split evenly among a
     * device's subtasks.
     */
    public List<ModelRoute> routes(List<DeviceSpec> devices) {
        List<ModelRoute> routes = new ArrayList<>();
        placement.devicesByModel().forEach((model, ds) -> {
            List<RouteTarget> targets = new ArrayList<>();
            StringBuilder why = new StringBuilder();
            for (String d : ds) {
                DeviceSpec spec = device(devices, d);
                if (spec == null || spec.subtasks().isEmpty()) {
                    continue;
                }
                double load = deviceLoad.getOrDefault(d, 0.0);
                double headroom = Math.max(MIN_WEIGHT, 1 - load);
                for (int s : spec.subtasks()) {
                    targets.add(new RouteTarget(s, round(headroom / spec.subtasks().size())));
                }
                why.append(why.length() == 0 ? "" : ", ")
                        .append(String.format(Locale.ROOT, "%s (load %.2f, headroom %.2f)", d, load, headroom));
            }
            if (!targets.isEmpty()) {
                routes.add(new ModelRoute(model, targets, "held by " + why + "; weighted by headroom"));
            }
        });
        return routes;
    }

    /** LOAD for every subtask of a device that gained a model, UNLOAD where one left. */
    public List<SubtaskCommand> commands(List<DeviceSpec> devices) {
        List<SubtaskCommand> out = new ArrayList<>();
        placement.devicesByModel().forEach((model, ds) -> {
            for (String d : ds) {
                if (!previous.devices(model).contains(d)) {
                    addFor(out, devices, d, SubtaskCommand.Action.LOAD, model, reasonFor(model, d));
                }
            }
        });
        previous.devicesByModel().forEach((model, ds) -> {
            for (String d : ds) {
                if (!placement.devices(model).contains(d)) {
                    addFor(out, devices, d, SubtaskCommand.Action.UNLOAD, model, reasonFor(model, d));
                }
            }
        });
        return out;
    }

    private String reasonFor(String model, String device) {
        for (int i = decisions.size() - 1; i >= 0; i--) {
            Decision dec = decisions.get(i);
            if (model.equals(dec.model()) && (device.equals(dec.device()) || dec.reason().contains(device))) {
                return dec.reason();
            }
        }
        return "placement changed";
    }

    private static void addFor(List<SubtaskCommand> out, List<DeviceSpec> devices, String device,
            SubtaskCommand.Action action, String model, String reason) {
        DeviceSpec spec = device(devices, device);
        if (spec != null) {
            for (int s : spec.subtasks()) {
                out.add(new SubtaskCommand(s, action, model, null, reason));
            }
        }
    }

    private static DeviceSpec device(List<DeviceSpec> devices, String id) {
        return devices.stream().filter(d -> d.id().equals(id)).findFirst().orElse(null);
    }

    private static final double MIN_WEIGHT = 0.05;

    private static double round(double w) {
        return Math.max(1e-3, Math.round(w * 1000) / 1000.0);
    }
}
