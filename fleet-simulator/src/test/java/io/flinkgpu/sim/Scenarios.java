package io.flinkgpu.sim;

import java.nio.file.Path;

/** Small traces for the tests: a few devices, a few models, short horizons. */
final class Scenarios {
    static final Calibration CALIBRATION = Calibration.load(Path.of("..").toAbsolutePath().normalize());

    private Scenarios() {}

    static Workload.Spec spec(int models, double load, long seed) {
        return new Workload.Spec(models, 1.0, "gamma", 2.0, 0.5, 40, 0.15, load,
                new double[] {1, 1, 1, 1, 2}, 0.3, 12L << 30, seed);
    }

    static SimResult run(Policy p, int devices, Workload.Spec spec, double horizon) {
        return run(p, devices, spec, horizon, c -> c);
    }

    static SimResult run(Policy p, int devices, Workload.Spec spec, double horizon,
            java.util.function.UnaryOperator<FleetConfig> fleet) {
        FleetConfig c = fleet.apply(FleetConfig.of(devices, "a100", horizon, Math.min(10, horizon / 4)));
        Workload w = Workload.build(spec, devices, CALIBRATION, "a100");
        return new FleetSimulator(w, c, p, CALIBRATION).run();
    }

    static SimResult run(Policy p, int devices, int models, double load, long seed, double horizon) {
        return run(p, devices, spec(models, load, seed), horizon);
    }
}
