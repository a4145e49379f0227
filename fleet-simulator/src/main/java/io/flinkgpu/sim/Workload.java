package io.flinkgpu.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * A trace: the model catalogue (Zipf popularity, architectures, sizes, SLOs) and each model's
 * arrival process (Poisson or Gamma renewal with a coefficient of variation, as in AlpaServe,
 * OSDI'23), modulated by a diurnal rate curve {@code 1 - A cos(2 pi (t - phase) / P)} whose mean
 * is 1. Every random choice comes from the seed: the same spec gives the same trace.
 *
 * <p>Rates are set from the offered load: {@code load} x devices device-seconds per second at the
 * reference speed (the first device kind, batches of {@link #REFERENCE_BATCH_REQUESTS} requests),
 * shared among models by popularity.
 */
public final class Workload {
    /** Requests per batch at which a request's device cost is counted for the offered load. */
    public static final int REFERENCE_BATCH_REQUESTS = 8;

    /**
     * @param models catalogue size
     * @param zipf popularity exponent (model i gets a share proportional to 1 / (i + 1)^zipf)
     * @param arrival "poisson" or "gamma"
     * @param cv coefficient of variation of inter-arrival times (gamma; 1 = Poisson)
     * @param diurnalAmplitude A in 0..0.95
     * @param diurnalPeriodSeconds P
     * @param phaseSpread each model's phase is uniform in +- this fraction of P
     * @param load offered device load per device at the reference speed (0.5 = half the fleet busy)
     * @param archMix relative frequency of each {@link Arch} in the catalogue (by ordinal)
     * @param bigRecommendationShare share of DLRM models declared with production-size embeddings
     * @param bigRecommendationBytes their declared memory
     */
    public record Spec(int models, double zipf, String arrival, double cv, double diurnalAmplitude,
            double diurnalPeriodSeconds, double phaseSpread, double load, double[] archMix,
            double bigRecommendationShare, long bigRecommendationBytes, long seed) {
        public Spec {
            if (models < 1 || zipf < 0 || cv <= 0 || diurnalAmplitude < 0 || diurnalAmplitude > 0.95
                    || diurnalPeriodSeconds <= 0 || load < 0 || archMix.length != Arch.values().length) {
                throw new IllegalArgumentException("invalid workload spec");
            }
            if (!arrival.equals("poisson") && !arrival.equals("gamma")) {
                throw new IllegalArgumentException("arrival must be poisson or gamma: " + arrival);
            }
        }

        public Spec withLoad(double l) {
            return new Spec(models, zipf, arrival, cv, diurnalAmplitude, diurnalPeriodSeconds, phaseSpread, l, archMix,
                    bigRecommendationShare, bigRecommendationBytes, seed);
        }

        public Spec withSeed(long s) {
            return new Spec(models, zipf, arrival, cv, diurnalAmplitude, diurnalPeriodSeconds, phaseSpread, load,
                    archMix, bigRecommendationShare, bigRecommendationBytes, s);
        }

        public Spec withModels(int m) {
            return new Spec(m, zipf, arrival, cv, diurnalAmplitude, diurnalPeriodSeconds, phaseSpread, load, archMix,
                    bigRecommendationShare, bigRecommendationBytes, seed);
        }

        public double effectiveCv() {
            return arrival.equals("poisson") ? 1.0 : cv;
        }
    }

    /** A load step: from {@code atSeconds} on, the model's rate is multiplied by {@code factor}. */
    public record Step(int model, double atSeconds, double factor) {
        public Step {
            if (atSeconds < 0 || factor <= 0) {
                throw new IllegalArgumentException("a step needs a time >= 0 and a positive factor");
            }
        }
    }

    private final Spec spec;
    private final List<SimModel> models;
    private final Step step;

    private Workload(Spec spec, List<SimModel> models, Step step) {
        this.spec = spec;
        this.models = models;
        this.step = step;
        if (step != null && spec.diurnalAmplitude() > 0) {
            throw new IllegalArgumentException("a load step is only supported without a diurnal curve");
        }
    }

    /** A hand-made catalogue (rates as given), optionally with a load step; no diurnal curve then. */
    public static Workload of(Spec spec, List<SimModel> models, Step step) {
        return new Workload(spec, List.copyOf(models), step);
    }

    public Spec spec() {
        return spec;
    }

    public List<SimModel> models() {
        return models;
    }

    /** Builds the catalogue for a fleet of {@code devices} devices whose reference kind has these speeds. */
    public static Workload build(Spec spec, int devices, Calibration calibration, String referenceKind) {
        SplittableRandom rnd = new SplittableRandom(spec.seed());
        double mixTotal = 0;
        for (double w : spec.archMix()) {
            mixTotal += w;
        }
        List<Arch> archs = new ArrayList<>();
        List<Boolean> latency = new ArrayList<>();
        List<Long> memory = new ArrayList<>();
        double[] popularity = new double[spec.models()];
        double popTotal = 0;
        for (int i = 0; i < spec.models(); i++) {
            double u = rnd.nextDouble() * mixTotal;
            Arch a = Arch.values()[Arch.values().length - 1];
            for (Arch c : Arch.values()) {
                u -= spec.archMix()[c.ordinal()];
                if (u < 0) {
                    a = c;
                    break;
                }
            }
            archs.add(a);
            latency.add(rnd.nextDouble() < 0.5);
            long mem = a.memoryBytes();
            if (a == Arch.DLRM && rnd.nextDouble() < spec.bigRecommendationShare()) {
                mem = spec.bigRecommendationBytes();
            }
            memory.add(mem);
            popularity[i] = 1.0 / Math.pow(i + 1, spec.zipf());
            popTotal += popularity[i];
        }
        // rate R such that sum_i R p_i c_i = load x devices
        double weightedCost = 0;
        double[] cost = new double[spec.models()];
        for (int i = 0; i < spec.models(); i++) {
            cost[i] = requestCostSeconds(archs.get(i), calibration, referenceKind);
            weightedCost += popularity[i] / popTotal * cost[i];
        }
        double totalRate = spec.load() * devices / weightedCost;
        List<SimModel> out = new ArrayList<>();
        for (int i = 0; i < spec.models(); i++) {
            Arch a = archs.get(i);
            boolean lb = latency.get(i);
            double slo = lb ? 50 : 200;
            int perRequest = a.samplesPerRequest();
            int maxBatch = perRequest * (lb ? 16 : 64);
            double delay = lb ? 2 : 10;
            double phase = (rnd.nextDouble() * 2 - 1) * spec.phaseSpread() * spec.diurnalPeriodSeconds();
            out.add(new SimModel(i, String.format(Locale.ROOT, "m%04d-%s%s", i, a.label(), lb ? "-lat" : "-thr"), a,
                    perRequest, memory.get(i), slo, lb, totalRate * popularity[i] / popTotal, phase, maxBatch, delay));
        }
        return new Workload(spec, List.copyOf(out), null);
    }

    /** Device seconds one request of {@code a} costs at the reference batch. */
    static double requestCostSeconds(Arch a, Calibration calibration, String kind) {
        int samples = a.samplesPerRequest() * REFERENCE_BATCH_REQUESTS;
        return calibration.speed(a, kind).latencyNanos(samples, 0) / 1e9 / REFERENCE_BATCH_REQUESTS;
    }

    /** The rate factor at time t for a model with this phase. */
    double factor(double tSeconds, double phase, int model) {
        if (step != null) {
            return step.model() == model && tSeconds >= step.atSeconds() ? step.factor() : 1;
        }
        return 1 - spec.diurnalAmplitude() * Math.cos(2 * Math.PI * (tSeconds - phase) / spec.diurnalPeriodSeconds());
    }

    /** Integral of the factor from 0 to t. */
    double integral(double t, double phase, int model) {
        if (step != null) {
            return step.model() == model && t > step.atSeconds()
                    ? step.atSeconds() + step.factor() * (t - step.atSeconds()) : t;
        }
        double p = spec.diurnalPeriodSeconds();
        double w = 2 * Math.PI / p;
        return t - spec.diurnalAmplitude() / w * (Math.sin(w * (t - phase)) - Math.sin(-w * phase));
    }

    /** One model's arrival times, in order, from its own random stream. */
    public final class Arrivals {
        private final SimModel model;
        private final SplittableRandom rnd;
        private double operational; // integral of the rate up to the last arrival
        private double last;

        Arrivals(SimModel model) {
            this.model = model;
            this.rnd = new SplittableRandom(spec.seed() * 1_000_003L + model.index() * 7919L + 17);
        }

        /** The next arrival in seconds. */
        public double next() {
            double gap = spec.arrival().equals("poisson") ? -Math.log(1 - rnd.nextDouble()) : gamma(rnd, spec.cv());
            if (model.meanRate() <= 0) {
                return Double.POSITIVE_INFINITY;
            }
            operational += gap / model.meanRate();
            // invert integral(t) = operational (monotone: the factor is at least 1 - A > 0), Newton from the last arrival
            double t = last;
            for (int i = 0; i < 50; i++) {
                double f = integral(t, model.phaseSeconds(), model.index()) - operational;
                double step = f / factor(t, model.phaseSeconds(), model.index());
                t -= step;
                if (Math.abs(step) < 1e-9) {
                    break;
                }
            }
            last = Math.max(last, t);
            return last;
        }
    }

    public Arrivals arrivals(SimModel m) {
        return new Arrivals(m);
    }

    /** A Gamma variate of mean 1 and coefficient of variation cv (shape 1 / cv^2), Marsaglia and Tsang. */
    static double gamma(SplittableRandom rnd, double cv) {
        double shape = 1 / (cv * cv);
        double scale = cv * cv;
        double boost = 1;
        if (shape < 1) {
            boost = Math.pow(1 - rnd.nextDouble(), 1 / shape);
            shape += 1;
        }
        double d = shape - 1.0 / 3;
        double c = 1 / Math.sqrt(9 * d);
        while (true) {
            double x;
            double v;
            do {
                x = normal(rnd);
                v = 1 + c * x;
            } while (v <= 0);
            v = v * v * v;
            double u = 1 - rnd.nextDouble();
            if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) {
                return d * v * scale * boost;
            }
        }
    }

    private static double normal(SplittableRandom rnd) {
        double u1 = 1 - rnd.nextDouble();
        double u2 = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
    }
}
