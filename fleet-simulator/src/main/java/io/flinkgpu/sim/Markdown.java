package io.flinkgpu.sim;

import java.util.List;
import java.util.Locale;
import java.util.Map;

/** report.md: every number of a run, as tables, with the plots. */
final class Markdown {
    private Markdown() {}

    static String report(Map<String, Object> results, Map<String, Map<String, List<SimResult>>> traces,
            List<PlannerScaling.Point> scaling, RecoveryValidation.Outcome v, List<Map<String, Object>> targets,
            Calibration cal, String command) {
        StringBuilder sb = new StringBuilder();
        sb.append("<!-- written by io.flinkgpu.sim.SimulationMain; do not edit -->\n\n# Fleet simulation run\n\n");
        sb.append("Reproduce (from the repository root): `").append(command).append("`\n\n");
        sb.append("Started ").append(results.get("started")).append(", finished ").append(results.get("finished"))
                .append(". Fleet: ").append(results.get("fleet")).append("\n\n");

        sb.append("## Calibration\n\n| architecture | device | alpha ms | beta ms per sample | source |\n|---|---|---:|---:|---|\n");
        for (Calibration.Entry e : cal.entries()) {
            sb.append(String.format(Locale.ROOT, "| %s | %s | %.4f | %.5f | %s |%n", e.arch().label(), e.deviceKind(),
                    e.alphaMs(), e.betaMs(), e.source()));
        }
        sb.append('\n');

        for (Map.Entry<String, Map<String, List<SimResult>>> t : traces.entrySet()) {
            String name = t.getKey();
            sb.append("## Trace: ").append(name).append("\n\n");
            SimResult any = t.getValue().values().iterator().next().get(0);
            sb.append(String.format(Locale.ROOT, "%d models on %d GPUs, %.0f s simulated (first %.0f s not counted).%n%n",
                    any.models(), any.devices(), any.horizonSeconds(), any.warmupSeconds()));
            sb.append("| policy | load | arrivals | attainment | latency-bound / throughput-bound | p50 / p95 / p99 ms "
                    + "| GPU utilisation | goodput per GPU (req/s) | swaps per min | evictions | refused / expired / "
                    + "unrouted / no room | coordinator cycle ms (median / max) |\n");
            sb.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
            for (Map.Entry<String, List<SimResult>> p : t.getValue().entrySet()) {
                for (SimResult r : p.getValue()) {
                    sb.append(String.format(Locale.ROOT,
                            "| %s | %.2f | %d | %.2f%% | %.2f%% / %.2f%% | %.1f / %.1f / %.1f | %.3f | %.0f | %.1f | %d "
                                    + "| %d / %d / %d / %d | %s |%n",
                            r.policy(), r.load(), r.arrivals(), 100 * r.attainment(), 100 * r.attainmentLatencyBound(),
                            100 * r.attainmentThroughputBound(), r.p50Ms(), r.p95Ms(), r.p99Ms(), r.utilization(),
                            r.goodputPerGpu(), r.swapsPerMinute(), r.evictions(), r.refused(), r.expired(),
                            r.unrouted(), r.noRoom(), r.cycleWallMs().isEmpty() ? "-"
                                    : String.format(Locale.ROOT, "%.1f / %.1f", r.cycleWallMsMedian(),
                                            r.cycleWallMsMax())));
                }
            }
            sb.append("\nOperating point of each policy: the highest load with >= 99% attainment and p95 < 200 ms.\n\n");
            sb.append("| policy | load | GPU utilisation | goodput per GPU | attainment | p95 / p99 ms | swaps per min |\n");
            sb.append("|---|---:|---:|---:|---:|---:|---:|\n");
            for (Map.Entry<String, List<SimResult>> p : t.getValue().entrySet()) {
                SimResult op = Targets.operatingPoint(p.getValue());
                if (op == null) {
                    sb.append("| ").append(p.getKey()).append(" | none | - | - | - | - | - |\n");
                } else {
                    sb.append(String.format(Locale.ROOT, "| %s | %.2f | %.3f | %.0f | %.2f%% | %.1f / %.1f | %.1f |%n",
                            op.policy(), op.load(), op.utilization(), op.goodputPerGpu(), 100 * op.attainment(),
                            op.p95Ms(), op.p99Ms(), op.swapsPerMinute()));
                }
            }
            sb.append("\n![utilisation](").append(name).append("-utilization.png)\n\n![attainment](").append(name)
                    .append("-attainment.png)\n\n![goodput](").append(name).append("-goodput.png)\n\n");
        }

        sb.append("## Planner decision time\n\nReal wall time of `PlacementPlanner.plan` (this machine), Zipf loads "
                + "summing to 0.6 per device, up to 8 models per device.\n\n");
        sb.append("| devices | models | cold start ms | steady cycle ms (median) | steady max ms | instances | unplaced |\n");
        sb.append("|---:|---:|---:|---:|---:|---:|---:|\n");
        for (PlannerScaling.Point p : scaling) {
            sb.append(String.format(Locale.ROOT, "| %d | %d | %.1f | %.1f | %.1f | %d | %d |%n", p.devices(),
                    p.models(), p.coldMs(), p.steadyMedianMs(), p.steadyMaxMs(), p.instances(), p.unplaced()));
        }
        sb.append("\n![decision time](planner-decision-time.png)\n\n");

        sb.append("## Validation against the recovery benchmark\n\n");
        sb.append(String.format(Locale.ROOT, "| | simulated, median of %d seeds (min .. max) | measured | simulated / "
                + "measured |%n|---|---:|---:|---:|%n", v.seedDecisionSeconds().size()));
        sb.append(String.format(Locale.ROOT, "| time to decision | %.2f s (%s) | %.2f s | %.2f |%n",
                v.simDecisionSeconds(), range(v.seedDecisionSeconds(), "%.2f"), v.measuredDecisionSeconds(),
                v.decisionRatio()));
        sb.append(String.format(Locale.ROOT, "| time to p99 recovery | %.1f s (%s) | %.1f s | %.2f |%n",
                v.simRecoverySeconds(), range(v.seedRecoverySeconds(), "%.1f"), v.measuredRecoverySeconds(),
                v.recoveryRatio()));
        sb.append("\nMeasured: ").append(v.measuredSource()).append(". Simulated devices: ").append(v.speed())
                .append(". The replay runs the coordinator and the job as the measured run did, as shipped (the "
                + "default coordinator.rate-window, coordinator.forecast.*, coordinator.plan.warm-before-route and "
                + "warm-check-interval, queue-aware routing), and the models as its job ran them (")
                .append(v.batching()).append(", no scheduling block, no request deadlines). The plot shows the first "
                + "seed.\n\n![validation](validation-recovery-p99.png)\n\n");

        sb.append("## Targets\n\n| scenario | target | measured | goal | pass | description |\n|---|---|---:|---|---|---|\n");
        for (Map<String, Object> t : targets) {
            Object m = t.get("measured");
            Object pass = t.get("pass");
            sb.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s |%n", t.get("scenario"), t.get("target"),
                    m == null ? "-" : String.format(Locale.ROOT, "%.3f", ((Number) m).doubleValue()), t.get("goal"),
                    pass == null ? "n/a" : (Boolean) pass ? "yes" : "**no**", t.get("description")));
        }
        return sb.toString();
    }

    /** "min .. max" of the finite values, and how many never happened (NaN). */
    private static String range(List<Double> values, String format) {
        java.util.DoubleSummaryStatistics st = values.stream().filter(Double::isFinite)
                .mapToDouble(Double::doubleValue).summaryStatistics();
        long never = values.stream().filter(x -> !Double.isFinite(x)).count();
        String r = st.getCount() == 0 ? "-" : String.format(Locale.ROOT, format + " .. " + format, st.getMin(),
                st.getMax());
        return never == 0 ? r : r + ", " + never + " never";
    }
}
