package io.flinkgpu.sim;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * Runs the fleet simulations and writes results JSON, summary.json (targets), PNG plots and
 * report.md into one folder (by default {@code docs/simulation}).
 */
@Command(name = "fleet-simulator", mixinStandardHelpOptions = true,
        description = "Trace-driven fleet simulation: the library's batcher and cache policies and the coordinator's "
                + "planner against static, no-eviction, LRU-count and LRU-memory baselines.")
public final class SimulationMain implements Callable<Integer> {
    @Option(names = "--out", description = "output folder (default: ${DEFAULT-VALUE})", defaultValue = "docs/simulation")
    Path out;

    @Option(names = "--repo", description = "repository root, for calibration and validation inputs (default: .)",
            defaultValue = ".")
    Path repo;

    @Option(names = "--seed", defaultValue = "1", description = "trace seed (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(names = "--devices", defaultValue = "16", description = "GPUs of the fleet traces (default: ${DEFAULT-VALUE})")
    int devices;

    @Option(names = "--dedicated-models", defaultValue = "12",
            description = "models of the trace static can serve one per GPU (default: ${DEFAULT-VALUE})")
    int dedicatedModels;

    @Option(names = "--long-tail-models", defaultValue = "200",
            description = "models of the long-tail trace (default: ${DEFAULT-VALUE})")
    int longTailModels;

    @Option(names = "--horizon", defaultValue = "120", description = "simulated seconds per run (default: ${DEFAULT-VALUE})")
    double horizon;

    @Option(names = "--warmup", defaultValue = "20", description = "seconds not counted (default: ${DEFAULT-VALUE})")
    double warmup;

    @Option(names = "--loads", split = ",", defaultValue = "0.3,0.5,0.6,0.7,0.85",
            description = "offered loads of the dedicated trace (default: ${DEFAULT-VALUE})")
    List<Double> loads;

    @Option(names = "--long-tail-loads", split = ",", defaultValue = "0.3,0.45,0.6",
            description = "offered loads of the long-tail trace (default: ${DEFAULT-VALUE})")
    List<Double> longTailLoads;

    @Option(names = "--scaling-devices", split = ",", defaultValue = "8,16,32,64,128,256,512",
            description = "fleet sizes of the planner cost curve (default: ${DEFAULT-VALUE})")
    List<Integer> scalingDevices;

    @Option(names = "--scaling-models", defaultValue = "1000", description = "models of the cost curve (default: ${DEFAULT-VALUE})")
    int scalingModels;

    @Option(names = "--long-tail-planner-max-models", defaultValue = "32",
            description = "the long-tail trace also runs the planner with this coordinator.device.max-models (and "
                    + "max_models_per_device); 0: not (default: ${DEFAULT-VALUE})")
    int longTailPlannerMaxModels;

    @Option(names = "--warm-before-route", arity = "1", defaultValue = "true",
            description = "the planner's coordinator.plan.warm-before-route: a new replica is routed once its load is "
                    + "reported (false: routes change with the plan, as before the option) (default: ${DEFAULT-VALUE})")
    boolean warmBeforeRoute;

    @Option(names = "--warm-check-interval", defaultValue = "1",
            description = "the coordinator's coordinator.plan.warm-check-interval in seconds: the next cycle's delay "
                    + "while a route waits for its load (default: ${DEFAULT-VALUE})")
    double warmCheckInterval;

    @Option(names = "--warm-check-series", arity = "1", defaultValue = "true",
            description = "with --warm-before-route, the dedicated trace also runs the planner with the warm check at "
                    + "the cycle interval (no earlier cycle while a route waits), the series "
                    + "planner-no-warm-check (default: ${DEFAULT-VALUE})")
    boolean warmCheckSeries;

    @Option(names = "--dedicated-route-at-once", arity = "1", defaultValue = "true",
            description = "with --warm-before-route, the dedicated trace also runs the planner with it off, the series "
                    + "planner-route-at-once (default: ${DEFAULT-VALUE})")
    boolean dedicatedRouteAtOnce;

    @Option(names = "--colocation-series", arity = "1", defaultValue = "true",
            description = "also run the planner with coordinator.plan.slo-colocation on (models whose batches would "
                    + "make each other miss their SLOs kept apart; off in the coordinator by default): the series "
                    + "planner-slo-colocation on the dedicated trace and, with --long-tail-planner-max-models, "
                    + "planner-max-models-N-slo-colocation on the long-tail trace (default: ${DEFAULT-VALUE})")
    boolean colocationSeries;

    @Option(names = "--round-robin-series", arity = "1", defaultValue = "true",
            description = "also run, on the dedicated trace, the series planner-round-robin: the planner with the "
                    + "job's inference.routing.queue-aware off (requests by the plan's weighted round robin alone, "
                    + "as across TaskManagers) (default: ${DEFAULT-VALUE})")
    boolean roundRobinSeries;

    @Option(names = "--forecast-horizon", defaultValue = "0",
            description = "the planner's coordinator.forecast.horizon in seconds (the coordinator's default is 15); 0, "
                    + "the default here, turns the forecast off: on these traces, whose diurnal curve is compressed "
                    + "to the run's horizon, it cost the dedicated planner its operating point (docs/SIMULATION.md) "
                    + "(default: ${DEFAULT-VALUE})")
    double forecastHorizon;

    @Option(names = "--validation-seeds", defaultValue = "21",
            description = "seeds of the recovery benchmark's replay, from --seed; its times are their medians "
                    + "(default: ${DEFAULT-VALUE})")
    int validationSeeds;

    @Option(names = "--threads", defaultValue = "2", description = "runs in parallel (default: ${DEFAULT-VALUE})")
    int threads;

    public static void main(String[] args) {
        System.exit(new CommandLine(new SimulationMain()).execute(args));
    }

    /** The trace where static can give every model its own GPUs. */
    Workload.Spec dedicatedSpec(double load) {
        return new Workload.Spec(dedicatedModels, 1.0, "gamma", 2.0, 0.6, horizon, 0.25, load,
                new double[] {1, 1, 1, 1, 3}, 0.3, 12L << 30, seed);
    }

    /** Many more models than GPUs, Zipf-popular, with production-size recommendation models. */
    Workload.Spec longTailSpec(double load) {
        return new Workload.Spec(longTailModels, 1.0, "gamma", 4.0, 0.6, horizon, 0.25, load,
                new double[] {1, 1, 1, 1, 3}, 0.3, 12L << 30, seed + 1);
    }

    @Override
    public Integer call() throws Exception {
        Files.createDirectories(out);
        Instant started = Instant.now();
        Calibration cal = Calibration.load(repo);
        FleetConfig base = FleetConfig.of(devices, "a100", horizon, warmup);
        FleetConfig fleet = base.withWarmRouting(warmBeforeRoute, base.warmTimeoutSeconds())
                .withForecast(forecastHorizon).withWarmCheck(warmCheckInterval);
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, threads));
        Map<String, Object> results = new LinkedHashMap<>();
        results.put("generated_by", "io.flinkgpu.sim.SimulationMain (never edited by hand)");
        results.put("command", command());
        results.put("started", started.toString());
        results.put("calibration", cal.entries().stream().map(e -> Map.of("arch", e.arch().label(), "device_kind",
                e.deviceKind(), "alpha_ms", e.alphaMs(), "beta_ms", e.betaMs(), "source", e.source())).toList());
        Map<String, Object> fleetOut = new java.util.TreeMap<>(Map.of("devices", devices, "device_kind", "a100",
                "device_memory_bytes", fleet.deviceMemoryBytes(), "load_time", fleet.loadTime().toString(), "cycle_s",
                fleet.cycleSeconds(), "max_models_per_device_planner", fleet.maxModelsPerDevice(), "planner",
                fleet.planner(), "horizon_s", horizon, "warmup_s", warmup));
        fleetOut.put("warm_before_route", fleet.warmBeforeRoute());
        fleetOut.put("warm_timeout_s", fleet.warmTimeoutSeconds());
        fleetOut.put("warm_check_s", fleet.warmCheckSeconds());
        fleetOut.put("forecast_horizon_s", fleet.forecastHorizonSeconds());
        results.put("fleet", fleetOut);

        Map<String, Map<String, List<SimResult>>> traces = new LinkedHashMap<>();
        Map<String, List<SimResult>> dedicated = sweep(pool, cal, fleet, loads, this::dedicatedSpec,
                List.of(Policy.values()), null);
        if (warmBeforeRoute && dedicatedRouteAtOnce) {
            dedicated.putAll(sweep(pool, cal, fleet.withWarmRouting(false, fleet.warmTimeoutSeconds()), loads,
                    this::dedicatedSpec, List.of(Policy.PLANNER), ROUTE_AT_ONCE));
        }
        if (warmBeforeRoute && warmCheckSeries) {
            dedicated.putAll(sweep(pool, cal, fleet.withWarmCheck(fleet.cycleSeconds()), loads, this::dedicatedSpec,
                    List.of(Policy.PLANNER), NO_WARM_CHECK));
        }
        if (roundRobinSeries) {
            dedicated.putAll(sweep(pool, cal, fleet, loads, this::dedicatedSpec, List.of(Policy.PLANNER),
                    ROUND_ROBIN));
        }
        if (colocationSeries) {
            dedicated.putAll(sweep(pool, cal, fleet.withPlanner(fleet.planner().withSloColocation(true),
                    fleet.maxModelsPerDevice()), loads, this::dedicatedSpec, List.of(Policy.PLANNER), COLOCATION));
        }
        traces.put("dedicated", dedicated);
        Map<String, List<SimResult>> longTail = sweep(pool, cal, fleet, longTailLoads, this::longTailSpec,
                List.of(Policy.values()), null);
        if (longTailPlannerMaxModels > 0) {
            FleetConfig more = fleet.withPlanner(fleet.planner(), longTailPlannerMaxModels);
            longTail.putAll(sweep(pool, cal, more, longTailLoads, this::longTailSpec, List.of(Policy.PLANNER),
                    variant()));
            if (colocationSeries) {
                longTail.putAll(sweep(pool, cal, more.withPlanner(more.planner().withSloColocation(true),
                        more.maxModelsPerDevice()), longTailLoads, this::longTailSpec, List.of(Policy.PLANNER),
                        variant() + "-slo-colocation"));
            }
        }
        traces.put("long-tail", longTail);
        Map<String, Object> traceOut = new LinkedHashMap<>();
        traces.forEach((name, byPolicy) -> {
            Map<String, Object> t = new LinkedHashMap<>();
            Workload.Spec spec = name.equals("dedicated") ? dedicatedSpec(0) : longTailSpec(0);
            t.put("spec", spec);
            t.put("catalogue", Workload.build(spec.withLoad(1.0), devices, cal, "a100").models());
            t.put("runs", byPolicy);
            traceOut.put(name, t);
        });
        results.put("traces", traceOut);

        List<PlannerScaling.Point> scaling = new ArrayList<>();
        for (int d : scalingDevices) {
            scaling.add(PlannerScaling.measure(d, scalingModels, 8, 0.6, 3, seed));
            System.out.println(scaling.get(scaling.size() - 1));
        }
        results.put("planner_scaling", scaling);

        RecoveryValidation.Outcome validation = RecoveryValidation.run(cal, repo, seed, validationSeeds);
        Map<String, Object> v = RecoveryValidation.describe(validation);
        v.put("window_p99_ms", validation.windowP99Ms());
        v.put("window_failures", validation.windowFailures());
        v.put("plans", validation.plans());
        results.put("validation", v);
        pool.shutdown();

        List<String> plots = new ArrayList<>();
        for (Map.Entry<String, Map<String, List<SimResult>>> t : traces.entrySet()) {
            plots.add(Report.perPolicy(out, t.getKey() + "-utilization.png", t.getKey() + ": GPU utilisation vs load",
                    "busy time / time", t.getValue(), SimResult::utilization, 0.78, "goal 0.78"));
            plots.add(Report.perPolicy(out, t.getKey() + "-attainment.png", t.getKey() + ": SLO attainment vs load",
                    "answered within SLO / arrivals", t.getValue(), SimResult::attainment, 0.99, "goal 0.99"));
            plots.add(Report.perPolicy(out, t.getKey() + "-goodput.png", t.getKey() + ": goodput per GPU vs load",
                    "requests within SLO per s per GPU", t.getValue(), SimResult::goodputPerGpu, null, null));
        }
        plots.add(Report.scaling(out, scaling));
        plots.add(Report.validation(out, validation));
        results.put("plots", plots);
        results.put("finished", Instant.now().toString());

        List<Map<String, Object>> targets = Targets.evaluate(traces, scaling, validation,
                longTailPlannerMaxModels > 0 ? variant() : null,
                new Targets.LongTailSlots(longTailModels, devices, fleet.maxModelsPerDevice()));
        ObjectMapper json = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        json.writeValue(out.resolve("results.json").toFile(), results);
        Map<String, Object> summary = new LinkedHashMap<>();
        summary.put("generated_by", "io.flinkgpu.sim.SimulationMain (never edited by hand)");
        summary.put("generated_at", Instant.now().toString());
        summary.put("result_file", out.resolve("results.json").toString());
        summary.put("reproduce", command());
        summary.put("targets", targets);
        json.writeValue(out.resolve("summary.json").toFile(), summary);
        Files.writeString(out.resolve("report.md"), Markdown.report(results, traces, scaling, validation, targets,
                cal, command()));
        System.out.println("wrote " + out.resolve("results.json") + ", summary.json, report.md and " + plots.size()
                + " plots in " + (Instant.now().getEpochSecond() - started.getEpochSecond()) + " s");
        return 0;
    }

    /** The label of the planner run with coordinator.plan.warm-before-route off. */
    static final String ROUTE_AT_ONCE = "planner-route-at-once";

    /** The label of the planner run whose cycles keep coordinator.interval while a route waits for its load. */
    static final String NO_WARM_CHECK = "planner-no-warm-check";

    /** The label of the planner run with the job's queue-aware routing off. */
    static final String ROUND_ROBIN = "planner-round-robin";

    /** The label of the planner run with coordinator.plan.slo-colocation on. */
    static final String COLOCATION = "planner-slo-colocation";

    /** The label of the planner run with more models per device. */
    String variant() {
        return "planner-max-models-" + longTailPlannerMaxModels;
    }

    private Map<String, List<SimResult>> sweep(ExecutorService pool, Calibration cal, FleetConfig fleet,
            List<Double> ls, java.util.function.DoubleFunction<Workload.Spec> spec, List<Policy> policies, String label)
            throws Exception {
        Map<String, List<Future<SimResult>>> futures = new LinkedHashMap<>();
        for (Policy p : policies) {
            for (double l : ls) {
                Workload w = Workload.build(spec.apply(l), fleet.devices(), cal, "a100");
                String name = label != null ? label : p.label();
                futures.computeIfAbsent(name, k -> new ArrayList<>()).add(pool.submit(() -> {
                    long t0 = System.nanoTime();
                    FleetSimulator sim = new FleetSimulator(w, fleet, p, cal);
                    SimResult r = (ROUND_ROBIN.equals(label) ? sim.withRoundRobinRouting() : sim).run();
                    System.out.printf(Locale.ROOT, "%-24s load %.2f: attainment %.4f util %.3f goodput/GPU %.0f "
                            + "p95 %.1f p99 %.1f swaps/min %.1f arrivals %d (%.1f s)%n", name, l, r.attainment(),
                            r.utilization(), r.goodputPerGpu(), r.p95Ms(), r.p99Ms(), r.swapsPerMinute(), r.arrivals(),
                            (System.nanoTime() - t0) / 1e9);
                    return slim(r, name);
                }));
            }
        }
        Map<String, List<SimResult>> out = new LinkedHashMap<>();
        for (Map.Entry<String, List<Future<SimResult>>> e : futures.entrySet()) {
            List<SimResult> rs = new ArrayList<>();
            for (Future<SimResult> f : e.getValue()) {
                rs.add(f.get());
            }
            out.put(e.getKey(), rs);
        }
        return out;
    }

    /** Without the per-plan log (kept only as a count). */
    private static SimResult slim(SimResult r, String name) {
        Map<String, Object> extra = new LinkedHashMap<>(r.extra());
        Object plans = extra.remove("plans");
        extra.put("plans_logged", plans instanceof List<?> l ? l.size() : 0);
        return new SimResult(name, r.load(), r.devices(), r.models(), r.horizonSeconds(), r.warmupSeconds(),
                r.arrivals(), r.answered(), r.withinSlo(), r.refused(), r.expired(), r.unrouted(), r.noRoom(),
                r.inFlightAtEnd(), r.p50Ms(), r.p95Ms(), r.p99Ms(), r.attainment(), r.attainmentLatencyBound(),
                r.attainmentThroughputBound(), r.utilization(), r.goodputPerGpu(), r.offeredPerSecond(),
                r.swapsPerMinute(), r.loads(), r.evictions(), r.maxModelsOnADevice(), r.cycleWallMs(),
                r.plansPublished(), r.arrivalsHash(), extra);
    }

    String command() {
        return "fleet-simulator/simulate.sh --out=" + out + " --seed=" + seed
                + " --devices=" + devices + " --dedicated-models=" + dedicatedModels + " --long-tail-models="
                + longTailModels + " --horizon=" + fmt(horizon) + " --warmup=" + fmt(warmup) + " --loads="
                + join(loads) + " --long-tail-loads=" + join(longTailLoads) + " --scaling-devices="
                + String.join(",", scalingDevices.stream().map(String::valueOf).toList()) + " --scaling-models="
                + scalingModels + " --long-tail-planner-max-models=" + longTailPlannerMaxModels
                + " --warm-before-route=" + warmBeforeRoute + " --warm-check-interval=" + fmt(warmCheckInterval)
                + " --warm-check-series=" + warmCheckSeries + " --dedicated-route-at-once=" + dedicatedRouteAtOnce
                + " --colocation-series=" + colocationSeries + " --round-robin-series=" + roundRobinSeries
                + " --forecast-horizon=" + fmt(forecastHorizon) + " --validation-seeds=" + validationSeeds;
    }

    private static String join(List<Double> xs) {
        return String.join(",", xs.stream().map(SimulationMain::fmt).toList());
    }

    static String fmt(double d) {
        return d == Math.rint(d) ? String.valueOf((long) d) : String.valueOf(d);
    }
}
