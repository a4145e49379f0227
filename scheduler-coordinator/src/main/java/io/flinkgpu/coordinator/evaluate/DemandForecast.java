package io.flinkgpu.coordinator.evaluate;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Forecast step: per model, Holt's linear trend (double exponential smoothing, on the measured
 * device-seconds per second at the collections' own times) predicts the demand {@code horizon}
 * ahead, and where a rising trend is significant the demand the planner sees is raised to that
 * forecast, so that a replica starts loading before a predictable ramp reaches it. Only ever
 * raises: scale-in follows the measured demand through the planner's own hysteresis and
 * stabilisation window, so noise cannot make the forecast reverse a decision.
 *
 * <p>Significant means the predicted rise {@code trend * horizon} exceeds {@code significance}
 * times the smoothed absolute one-step error (the noise the model has seen). On a steady noisy load
 * the trend wanders around zero within that band and nothing changes. A device that serves a raised
 * model gets a forecast rate too ({@link DeviceLoad#forecastRatePerSecond}): its measured requests
 * per second, each raised model's scaled by as much as the model's demand, which the parallelism
 * planner sizes slots by. State lives in memory; a
 * restarted coordinator learns the trend again within a few cycles.
 */
public final class DemandForecast {
    private final double horizonSeconds;
    private final double alpha;
    private final double beta;
    private final double significance;
    private final Map<String, Holt> models = new HashMap<>();

    private static final class Holt {
        double level;
        double trend;
        double error;
        long atMillis;
    }

    /**
     * @param horizonSeconds how far ahead to plan; 0 turns the step off
     * @param alpha level smoothing in (0, 1]
     * @param beta trend smoothing in (0, 1]
     * @param significance how many smoothed errors the predicted rise must exceed
     */
    public DemandForecast(double horizonSeconds, double alpha, double beta, double significance) {
        if (horizonSeconds < 0 || !(alpha > 0 && alpha <= 1) || !(beta > 0 && beta <= 1) || significance < 0) {
            throw new IllegalArgumentException("forecast: horizon >= 0, smoothing factors in (0, 1], significance >= 0");
        }
        this.horizonSeconds = horizonSeconds;
        this.alpha = alpha;
        this.beta = beta;
        this.significance = significance;
    }

    public boolean enabled() {
        return horizonSeconds > 0;
    }

    /**
     * The demand to plan for: {@code measured}, with each model whose rise is significant raised to
     * its forecast. {@code learn}: update the models' state (false for dry runs).
     */
    public Demand apply(Demand measured, boolean learn) {
        if (!enabled()) {
            return measured;
        }
        Map<String, ModelDemand> out = new LinkedHashMap<>();
        Map<String, Double> raised = new HashMap<>();
        for (ModelDemand m : measured.models().values()) {
            double x = m.deviceSecondsPerSecond();
            Holt h = models.get(m.model());
            Holt next = step(h, x, measured.atMillis());
            if (learn) {
                models.put(m.model(), next);
            }
            double rise = next.trend * horizonSeconds;
            double forecast = next.level + rise;
            if (h != null && next.trend > 0 && rise > significance * next.error && forecast > x) {
                double scale = x > 0 ? forecast / x : 1;
                raised.put(m.model(), scale);
                out.put(m.model(), new ModelDemand(m.model(), m.version(), m.ratePerSecond() * scale, m.batchSize(),
                        forecast, m.memoryBytes(), m.alphaMicros(), m.betaMicros(), m.servedOn(),
                        m.reason() + String.format("; forecast %.3f device-s/s in %.0f s (trend %+.4f per s, noise %.3f)",
                                forecast, horizonSeconds, next.trend, next.error), m.tenantRates()));
            } else {
                out.put(m.model(), m);
            }
        }
        return new Demand(measured.atMillis(), measured.parallelism(), out, devices(measured.devices(), raised));
    }

    /**
     * Each device whose requests include a raised model, with its forecast rate: its measured rate of
     * every model, those raised scaled as the model's demand was. The others as they were (no forecast).
     */
    private static Map<String, DeviceLoad> devices(Map<String, DeviceLoad> measured, Map<String, Double> raised) {
        if (raised.isEmpty()) {
            return measured;
        }
        Map<String, DeviceLoad> out = new LinkedHashMap<>();
        measured.forEach((id, d) -> {
            boolean serves = d.modelRates().entrySet().stream()
                    .anyMatch(e -> e.getValue() > 0 && raised.containsKey(e.getKey()));
            if (!serves) {
                out.put(id, d);
                return;
            }
            double forecast = d.modelRates().entrySet().stream()
                    .mapToDouble(e -> e.getValue() * raised.getOrDefault(e.getKey(), 1.0)).sum();
            out.put(id, d.withForecast(forecast));
        });
        return out;
    }

    /** The state after observing {@code x} at {@code atMillis} (a new state; {@code h} is not changed). */
    private Holt step(Holt h, double x, long atMillis) {
        Holt n = new Holt();
        n.atMillis = atMillis;
        if (h == null) {
            n.level = x;
            return n;
        }
        double dt = Math.max(1e-3, (atMillis - h.atMillis) / 1000.0);
        double predicted = h.level + h.trend * dt;
        n.level = alpha * x + (1 - alpha) * predicted;
        n.trend = beta * (n.level - h.level) / dt + (1 - beta) * h.trend;
        n.error = h.error == 0 && h.trend == 0 ? Math.abs(x - predicted) : 0.3 * Math.abs(x - predicted) + 0.7 * h.error;
        return n;
    }

    /** The smoothed trend of {@code model} in device-seconds per second per second (for tests). */
    double trend(String model) {
        Holt h = models.get(model);
        return h == null ? 0 : h.trend;
    }
}
