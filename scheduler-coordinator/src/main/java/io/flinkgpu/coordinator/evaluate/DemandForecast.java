package io.flinkgpu.coordinator.evaluate;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * Forecast step: per model, a least-squares line through the measured device-seconds per second
 * of the last {@code window} (at the collections' own times) predicts the demand {@code horizon}
 * ahead, and where the line rises significantly the demand the planner sees is raised to that
 * forecast, so that a replica starts loading before a predictable ramp reaches it.
 *
 * <p>The test: the slope's t statistic (slope over its standard error, from the residuals of the
 * fit) must exceed {@code significance}, with at least {@value #MIN_SAMPLES} collections spanning at
 * least a quarter of the window. The standard error shrinks as the window fills, so a steady noisy
 * load, whose fitted slope wanders around zero within its error, is left as measured, and so are
 * the first cycles after a start, when a few noisy collections would fit any slope. The forecast
 * plans for the slope's lower confidence bound (slope - significance x its standard error), not the
 * fitted slope: the larger of the measurement and that line's value now, plus the bound x horizon.
 * The coordinator tests the slope every cycle, so on a steady load some fit passes the test by
 * chance now and then; such a slope barely clears it, its bound is near 0, and the forecast barely
 * moves, while a real ramp's t is many times the significance and its bound is close to its slope.
 *
 * <p>Only ever raises. The planner's scale-in stabilisation window takes the planned (raised) rate
 * into its peak too, so a replica added for a forecast is not given back in the next cycle when the
 * measurement alone would not have asked for it. A device that serves a raised model gets a
 * forecast rate too ({@link DeviceLoad#forecastRatePerSecond}): its measured requests per second,
 * each raised model's scaled by as much as the model's demand, which the parallelism planner sizes
 * slots by. State lives in memory; a restarted coordinator has a forecast again once its window
 * holds enough collections.
 */
public final class DemandForecast {
    /** Collections a line needs before it can raise anything. */
    static final int MIN_SAMPLES = 6;

    private final double horizonSeconds;
    private final double windowSeconds;
    private final double significance;
    private final double measurementSeconds;
    private final Map<String, ArrayDeque<double[]>> models = new HashMap<>();

    /**
     * The line through a model's window: slope per second, its t statistic, how many collections, and
     * the window's centroid (mean value, and how long before the newest point its mean time lies), which
     * the line passes through.
     */
    record Trend(double slope, double t, int samples, double mean, double centroidAgeSeconds) {
        /** No slope: the level {@code level} over {@code samples} collections. */
        static Trend flat(double level, int samples) {
            return new Trend(0, 0, samples, level, 0);
        }

        /** The line's value at the newest point. */
        double levelNow() {
            return mean + slope * centroidAgeSeconds;
        }

        /**
         * The slope's lower confidence bound at {@code significance} standard errors, slope - significance x
         * se = slope x (1 - significance / t), where the slope is significant; 0 otherwise. A slope that
         * just passes the test is mostly noise, and extrapolated over a horizon longer than the window it
         * would add a replica on noise alone; its bound grows from 0 as the evidence does.
         */
        double confidentSlope(double significance) {
            if (!(slope > 0) || !(t > significance)) {
                return 0;
            }
            return Double.isInfinite(t) ? slope : slope * (1 - significance / t);
        }

        /** The line with the confident slope through the window's centroid, at the newest point. */
        double confidentLevelNow(double significance) {
            return mean + confidentSlope(significance) * centroidAgeSeconds;
        }
    }

    /**
     * @param horizonSeconds how far ahead to plan; 0 turns the step off
     * @param windowSeconds how far back the line is fitted (> 0)
     * @param significance the t statistic the slope must exceed (>= 0)
     */
    public DemandForecast(double horizonSeconds, double windowSeconds, double significance) {
        this(horizonSeconds, windowSeconds, significance, 0);
    }

    /**
     * @param measurementSeconds how long a span each measurement is a mean over (the control loop's
     *     rate window): measurements closer than that share counts, so their errors are correlated and
     *     the fit's own standard error is too small; it is widened by sqrt(span / spacing) and a line
     *     needs points over at least two spans ({@link #fit(ArrayDeque, double)}). 0: independent
     */
    public DemandForecast(double horizonSeconds, double windowSeconds, double significance,
            double measurementSeconds) {
        if (horizonSeconds < 0 || !(windowSeconds > 0) || !(significance >= 0) || !(measurementSeconds >= 0)) {
            throw new IllegalArgumentException(
                    "forecast: horizon >= 0, window > 0, significance >= 0, measurement span >= 0");
        }
        this.horizonSeconds = horizonSeconds;
        this.windowSeconds = windowSeconds;
        this.significance = significance;
        this.measurementSeconds = measurementSeconds;
    }

    /** Turned off: the demand passes unchanged. */
    public static DemandForecast off() {
        return new DemandForecast(0, 60, 3);
    }

    public boolean enabled() {
        return horizonSeconds > 0;
    }

    /**
     * The demand to plan for: {@code measured}, with each model whose rise is significant raised to
     * its forecast. {@code learn}: add this collection to the models' windows (false for dry runs).
     */
    public Demand apply(Demand measured, boolean learn) {
        if (!enabled()) {
            return measured;
        }
        Map<String, ModelDemand> out = new LinkedHashMap<>();
        Map<String, Double> raised = new HashMap<>();
        for (ModelDemand m : measured.models().values()) {
            double x = m.deviceSecondsPerSecond();
            // learning adds to the model's window in place; a dry run fits a copy and leaves it as it was
            ArrayDeque<double[]> window = learn ? models.computeIfAbsent(m.model(), k -> new ArrayDeque<>())
                    : new ArrayDeque<>(models.getOrDefault(m.model(), new ArrayDeque<>()));
            add(window, measured.atMillis() / 1000.0, x);
            Trend trend = fit(window, measurementSeconds);
            double slope = trend.confidentSlope(significance);
            double forecast = Math.max(x, trend.confidentLevelNow(significance)) + slope * horizonSeconds;
            if (trend.samples() >= MIN_SAMPLES && span(window) >= windowSeconds / 4 && slope > 0 && forecast > x) {
                double scale = x > 0 ? forecast / x : 1;
                raised.put(m.model(), scale);
                out.put(m.model(), new ModelDemand(m.model(), m.version(), m.ratePerSecond() * scale, m.batchSize(),
                        forecast, m.memoryBytes(), m.alphaMicros(), m.betaMicros(), m.servedOn(),
                        m.reason() + String.format(Locale.ROOT, "; forecast %.3f device-s/s in %.0f s (trend %+.4f "
                                + "per s over %d collections in %.0f s, t = %.1f > %.1f; planned at its lower bound "
                                + "%+.4f per s)", forecast, horizonSeconds, trend.slope(), trend.samples(), span(window),
                                trend.t(), significance, slope),
                        m.tenantRates()));
            } else {
                out.put(m.model(), m);
            }
        }
        return new Demand(measured.atMillis(), measured.parallelism(), out, devices(measured.devices(), raised));
    }

    private void add(ArrayDeque<double[]> window, double atSeconds, double x) {
        while (!window.isEmpty() && window.peekLast()[0] >= atSeconds) {
            window.pollLast(); // a collection at the same time (or a clock that went back) replaces the newer ones
        }
        window.addLast(new double[] {atSeconds, x});
        while (window.peekFirst()[0] < atSeconds - windowSeconds) {
            window.pollFirst();
        }
    }

    private static double span(ArrayDeque<double[]> window) {
        return window.isEmpty() ? 0 : window.peekLast()[0] - window.peekFirst()[0];
    }

    /** Ordinary least squares through the window, with the slope's t statistic (independent measurements). */
    static Trend fit(ArrayDeque<double[]> window) {
        return fit(window, 0);
    }

    /**
     * Ordinary least squares through the window, with the slope's t statistic (0 where undefined).
     * Where each measurement is a mean over {@code measurementSeconds} and they are closer than that,
     * the standard error is widened by sqrt(measurementSeconds / mean spacing) (overlapping means
     * count each request several times), and a window shorter than two such spans gets t = 0.
     */
    static Trend fit(ArrayDeque<double[]> window, double measurementSeconds) {
        int n = window.size();
        if (n < 3) {
            return Trend.flat(n == 0 ? 0 : window.peekLast()[1], n);
        }
        double t0 = window.peekLast()[0];
        double st = 0;
        double sx = 0;
        for (double[] p : window) {
            st += p[0] - t0;
            sx += p[1];
        }
        double mt = st / n;
        double mx = sx / n;
        double stt = 0;
        double stx = 0;
        for (double[] p : window) {
            double dt = p[0] - t0 - mt;
            stt += dt * dt;
            stx += dt * (p[1] - mx);
        }
        if (!(stt > 0)) {
            return Trend.flat(mx, n);
        }
        double age = -mt; // the centroid's time before t0
        double slope = stx / stt;
        double intercept = mx - slope * mt; // the line's value at t0, the newest collection
        double ssr = 0;
        for (double[] p : window) {
            double r = p[1] - (intercept + slope * (p[0] - t0));
            ssr += r * r;
        }
        double se = Math.sqrt(ssr / (n - 2) / stt);
        double span = window.peekLast()[0] - window.peekFirst()[0];
        if (measurementSeconds > 0) {
            if (span < 2 * measurementSeconds) {
                return new Trend(slope, 0, n, mx, age);
            }
            se *= Math.sqrt(Math.max(1, measurementSeconds / (span / (n - 1))));
        }
        double t = se > 0 ? slope / se : slope > 0 ? Double.POSITIVE_INFINITY : slope < 0 ? Double.NEGATIVE_INFINITY : 0;
        return new Trend(slope, t, n, mx, age);
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

    /** The line through {@code model}'s window, device-seconds per second per second (for tests). */
    Trend trend(String model) {
        ArrayDeque<double[]> w = models.get(model);
        return w == null ? Trend.flat(0, 0) : fit(w);
    }
}
