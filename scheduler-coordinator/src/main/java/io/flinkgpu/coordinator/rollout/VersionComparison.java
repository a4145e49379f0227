package io.flinkgpu.coordinator.rollout;

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
 *   <li>latency: B's p99 batch latency above A's times {@code 1 + tolerance}; not compared where
 *       either version has no percentile (no batch in the operator's window). The rollout engine
 *       passes the p99 of the batches' service time where both versions report it, so that A's
 *       batches queued behind B's on a shared device do not hide B's slowness.
 * </ul>
 */
public final class VersionComparison {
    private VersionComparison() {}

    /** The verdict, with every number it rests on in {@code reason}. */
    public record Verdict(boolean worse, boolean errorsWorse, boolean latencyWorse, double z, double pValue,
            String reason) {}

    /**
     * @param a, b the versions' names (for the reason)
     * @param p99A, p99B the versions' p99 batch latency in microseconds, NaN where unknown
     */
    public static Verdict compare(String a, String b, double nA, double eA, double nB, double eB, double p99A,
            double p99B, double significance, double tolerance) {
        return compare(a, b, nA, eA, nB, eB, p99A, p99B, significance, tolerance, null, "p99");
    }

    /**
     * As above; with {@code latencySkipped} set the p99s are not compared, for that reason;
     * {@code latencyName} names the percentile in the reason ("p99", "service p99").
     */
    public static Verdict compare(String a, String b, double nA, double eA, double nB, double eB, double p99A,
            double p99B, double significance, double tolerance, String latencySkipped, String latencyName) {
        double z = zScore(nA, eA, nB, eB);
        double p = upperTail(z);
        boolean errorsWorse = p < significance;
        String errors = String.format(Locale.ROOT,
                "errors %s %.0f/%.0f (%.2f%%) vs %s %.0f/%.0f (%.2f%%): z = %.2f, one-sided p = %.3g %s %s",
                b, eB, nB, 100 * eB / nB, a, eA, nA, 100 * eA / nA, z, p, errorsWorse ? "<" : ">=", fmt(significance));
        boolean latencyWorse = false;
        String latency;
        if (latencySkipped != null) {
            latency = latencyName + " not compared (" + latencySkipped + ")";
        } else if (Double.isFinite(p99A) && Double.isFinite(p99B) && p99A > 0) {
            double limit = p99A * (1 + tolerance);
            latencyWorse = p99B > limit;
            latency = String.format(Locale.ROOT, "%s %s %.0f us %s %s %.0f us x %.2f = %.0f us", latencyName, b,
                    p99B, latencyWorse ? ">" : "<=", a, p99A, 1 + tolerance, limit);
        } else {
            latency = latencyName + " not compared (" + (Double.isFinite(p99A) && p99A > 0 ? b : a)
                    + " has no batch latency)";
        }
        return new Verdict(errorsWorse || latencyWorse, errorsWorse, latencyWorse, z, p, errors + "; " + latency);
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
