package io.flinkgpu.coordinator.rollout;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Whether version B did worse than version A over a rollout step, on two counts:
 *
 * <ul>
 *   <li>error rate: a one-sided two-proportion z-test. With {@code eA} errors in {@code nA}
 *       answers of A and {@code eB} in {@code nB} of B, {@code pA = eA/nA}, {@code pB = eB/nB},
 *       the pooled {@code p = (eA + eB)/(nA + nB)} and
 *       {@code z = (pB - pA) / sqrt(p (1 - p) (1/nA + 1/nB))}; H0: B's error rate is not above
 *       A's, H1: it is. B is worse when the upper-tail p-value {@code 1 - Phi(z)} is below the
 *       significance. Where no answer of either failed ({@code p} 0) or all did (1) the rates are
 *       equal and B is not worse.
 *   <li>latency: one or more readings of both versions ({@link Latency}), each B's above A's
 *       times {@code 1 + tolerance}; a reading is not compared where either version lacks it or
 *       where the caller skips it with a reason. The rollout engine passes the versions' batch
 *       times at a common batch size (their latency fits) and the p99 of the batches' service
 *       time ({@link RolloutEngine#latencies}).
 * </ul>
 */
public final class VersionComparison {
    private VersionComparison() {}

    /** The verdict, with every number it rests on in {@code reason}. */
    public record Verdict(boolean worse, boolean errorsWorse, boolean latencyWorse, double z, double pValue,
            String reason) {}

    /**
     * One latency reading of both versions in microseconds, NaN where a version lacks it;
     * {@code skipped}: why it is not compared (null: compared where both have it).
     */
    public record Latency(String name, double a, double b, String skipped) {}

    /**
     * @param a, b the versions' names (for the reason)
     * @param p99A, p99B the versions' p99 batch latency in microseconds, NaN where unknown
     */
    public static Verdict compare(String a, String b, double nA, double eA, double nB, double eB, double p99A,
            double p99B, double significance, double tolerance) {
        return compare(a, b, nA, eA, nB, eB, significance, tolerance, List.of(new Latency("p99", p99A, p99B, null)));
    }

    /** As above, with every latency reading in {@code latencies}: B is worse where any of them says so. */
    public static Verdict compare(String a, String b, double nA, double eA, double nB, double eB, double significance,
            double tolerance, List<Latency> latencies) {
        double z = zScore(nA, eA, nB, eB);
        double p = upperTail(z);
        boolean errorsWorse = p < significance;
        List<String> parts = new ArrayList<>();
        parts.add(errorCounts(a, b, nA, eA, nB, eB) + String.format(Locale.ROOT, ": z = %.2f, one-sided p = %.3g %s %s",
                z, p, errorsWorse ? "<" : ">=", fmt(significance)));
        boolean latencyWorse = false;
        for (Latency l : latencies) {
            boolean hasA = Double.isFinite(l.a()) && l.a() > 0;
            if (l.skipped() != null) {
                parts.add(l.name() + " not compared (" + l.skipped() + ")");
            } else if (hasA && Double.isFinite(l.b())) {
                double limit = l.a() * (1 + tolerance);
                boolean worse = l.b() > limit;
                latencyWorse |= worse;
                parts.add(String.format(Locale.ROOT, "%s %s %.0f us %s %s %.0f us x %.2f = %.0f us", l.name(), b,
                        l.b(), worse ? ">" : "<=", a, l.a(), 1 + tolerance, limit));
            } else {
                parts.add(l.name() + " not compared (" + (hasA ? b : a) + " has no batch latency)");
            }
        }
        return new Verdict(errorsWorse || latencyWorse, errorsWorse, latencyWorse, z, p, String.join("; ", parts));
    }

    /** B's and A's errors of their answers, for a reason: {@code errors 2 4/100 (4.00%) vs 1 19/1900 (1.00%)}. */
    static String errorCounts(String a, String b, double nA, double eA, double nB, double eB) {
        return String.format(Locale.ROOT, "errors %s %.0f/%.0f (%.2f%%) vs %s %.0f/%.0f (%.2f%%)", b, eB, nB,
                nB > 0 ? 100 * eB / nB : 0.0, a, eA, nA, nA > 0 ? 100 * eA / nA : 0.0);
    }

    /** The two-proportion z statistic (B minus A, pooled variance); 0 where the pooled rate is 0 or 1. */
    public static double zScore(double nA, double eA, double nB, double eB) {
        if (nA <= 0 || nB <= 0) {
            throw new IllegalArgumentException("both versions need answers: " + nA + ", " + nB);
        }
        double pooled = (eA + eB) / (nA + nB);
        double variance = pooled * (1 - pooled) * (1 / nA + 1 / nB);
        if (!(variance > 0)) {
            return 0;
        }
        return (eB / nB - eA / nA) / Math.sqrt(variance);
    }

    /**
     * The one-sided p-value of "B's error rate is above A's" by Fisher's exact test: with the step's
     * errors of both versions fixed, the chance that B's {@code nB} answers hold {@code eB} or more of
     * them (the hypergeometric upper tail). Exact at small counts, where the z-test is not (one error
     * in B's first answer is no evidence). NaN where the counts exceed what the distribution takes.
     */
    public static double exactUpperTail(double nA, double eA, double nB, double eB) {
        long a = Math.round(nA);
        long errors = Math.round(eA) + Math.round(eB);
        long b = Math.round(nB);
        long population = a + b;
        if (a < 0 || b <= 0 || errors < 0 || errors > population) {
            throw new IllegalArgumentException("answers and errors: " + nA + ", " + eA + ", " + nB + ", " + eB);
        }
        if (population > Integer.MAX_VALUE) {
            return Double.NaN;
        }
        long x = Math.round(eB);
        if (x == 0) {
            return 1;
        }
        return new org.apache.commons.math3.distribution.HypergeometricDistribution(null, (int) population,
                (int) errors, (int) b).upperCumulativeProbability((int) x);
    }

    /** {@code P(Z > z)} for a standard normal Z. */
    public static double upperTail(double z) {
        return 0.5 * erfc(z / Math.sqrt(2));
    }

    /**
     * The complementary error function, Chebyshev approximation (Numerical Recipes' {@code erfcc}),
     * fractional error below 1.2e-7 everywhere, so small tail probabilities keep their digits.
     */
    static double erfc(double x) {
        double t = 1 / (1 + 0.5 * Math.abs(x));
        double y = t * Math.exp(-x * x - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
                + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
                + t * (-0.82215223 + t * 0.17087277)))))))));
        return x >= 0 ? y : 2 - y;
    }

    private static String fmt(double d) {
        return String.format(Locale.ROOT, "%.3g", d);
    }
}
