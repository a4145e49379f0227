package io.flinkgpu.sim;

import io.flinkgpu.coordinator.plan.DeviceSpec;
import io.flinkgpu.coordinator.plan.ModelSpec;
import io.flinkgpu.coordinator.plan.MoveRecord;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.coordinator.plan.PlacementPlan;
import io.flinkgpu.coordinator.plan.PlacementPlanner;
import io.flinkgpu.coordinator.plan.PlannerSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The planner's decision time against fleet size: {@link PlacementPlanner#plan} on D devices and M
 * models with Zipf loads summing to {@code load} x D, timed in real wall time, first from an empty
 * placement (a cold start) and then for steady cycles (the previous placement, loads perturbed by
 * +-20%), as the coordinator calls it every cycle, with the default planner settings but up to 4 moves.
 */
public final class PlannerScaling {
    /** One fleet size's timings (ms). */
    public record Point(int devices, int models, double coldMs, double steadyMedianMs, double steadyMaxMs,
            int instances, int unplaced) {}

    private PlannerScaling() {}

    public static Point measure(int devices, int models, int maxModels, double load, int steadyCycles, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<DeviceSpec> ds = new ArrayList<>();
        for (int i = 0; i < devices; i++) {
            ds.add(new DeviceSpec(String.format("sim-%04d", i), 38L << 30, maxModels, 8.0, List.of(i)));
        }
        double[] pop = new double[models];
        double total = 0;
        for (int i = 0; i < models; i++) {
            pop[i] = 1.0 / (i + 1);
            total += pop[i];
        }
        long[] mem = new long[models];
        for (int i = 0; i < models; i++) {
            Arch a = Arch.values()[rnd.nextInt(Arch.values().length)];
            mem[i] = a == Arch.DLRM && rnd.nextDouble() < 0.3 ? 12L << 30 : a.memoryBytes();
        }
        PlacementPlanner planner = new PlacementPlanner(new PlannerSettings(0.7, 0.15, 0.25, 0.1, 120_000, 600_000,
                1, 4));
        List<ModelSpec> ms = specs(models, pop, total, load * devices, mem, rnd, 0);
        long t0 = System.nanoTime();
        PlacementPlan plan = planner.plan(ds, ms, Placement.EMPTY, List.of(), 0, Map.of());
        double cold = (System.nanoTime() - t0) / 1e6;
        List<MoveRecord> moves = new ArrayList<>(plan.moves());
        double[] steady = new double[steadyCycles];
        for (int c = 0; c < steadyCycles; c++) {
            List<ModelSpec> next = specs(models, pop, total, load * devices, mem, rnd, 0.2);
            long now = (c + 1) * 5_000L;
            long t = System.nanoTime();
            plan = planner.plan(ds, next, plan.placement(), moves, now, Map.of());
            steady[c] = (System.nanoTime() - t) / 1e6;
            moves.addAll(plan.moves());
        }
        java.util.Arrays.sort(steady);
        int unplaced = (int) plan.decisions().stream().filter(d -> d.action().equals("UNPLACED")).count();
        return new Point(devices, models, cold, steady.length == 0 ? Double.NaN : steady[steady.length / 2],
                steady.length == 0 ? Double.NaN : steady[steady.length - 1], plan.placement().instanceCount(),
                unplaced);
    }

    private static List<ModelSpec> specs(int models, double[] pop, double total, double totalLoad, long[] mem,
            SplittableRandom rnd, double jitter) {
        List<ModelSpec> out = new ArrayList<>();
        for (int i = 0; i < models; i++) {
            double f = 1 + (rnd.nextDouble() * 2 - 1) * jitter;
            out.add(new ModelSpec(String.format("m%04d", i), mem[i], totalLoad * pop[i] / total * f, 0.1, 1.0));
        }
        return out;
    }
}
