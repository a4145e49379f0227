package io.flinkgpu.bench.sweep;

import io.flinkgpu.bench.load.PointResult;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Finds goodput: the highest offered rate at which a point still passes (p99 within the SLO,
 * >= 99% of requests within it, the offered rate answered). Walks up a geometric grid
 * {@code start * factor^k} (shared by every configuration of a scenario, so their curves line up),
 * stops at the first failing point, then bisects (geometrically) between the last passing and the
 * first failing rate {@code refineSteps} times. A failing point is measured once more before it
 * counts as a failure (both measurements are kept and reported): one checkpoint or GC pause in a
 * short point must not end the sweep, but a rate has to fail twice in a row to stop it.
 */
public final class RateSweep {
    /** Runs one point at an offered rate. */
    @FunctionalInterface
    public interface PointRunner {
        PointResult run(double rate) throws Exception;
    }

    public record Plan(double startRate, double factor, int maxPoints, int refineSteps, double maxRate) {
        public Plan {
            if (!(startRate > 0) || !(factor > 1) || maxPoints < 1 || refineSteps < 0) {
                throw new IllegalArgumentException("bad sweep plan");
            }
        }
    }

    public record Outcome(List<PointResult> points, double goodput, PointResult atGoodput) {
        /** Points in order of offered rate. */
        public List<PointResult> sorted() {
            List<PointResult> s = new ArrayList<>(points);
            s.sort(Comparator.comparingDouble(PointResult::offered));
            return s;
        }
    }

    private RateSweep() {}

    public static Outcome run(Plan plan, PointRunner rawRunner) throws Exception {
        List<PointResult> points = new ArrayList<>();
        PointRunner runner = rate -> {
            PointResult first = rawRunner.run(rate);
            if (first.pass()) {
                return first;
            }
            points.add(first);
            return rawRunner.run(rate);
        };
        double lastPass = Double.NaN;
        double firstFail = Double.NaN;
        double rate = plan.startRate();
        int budget = plan.maxPoints();
        while (budget-- > 0 && rate <= plan.maxRate() * (1 + 1e-9)) {
            PointResult p = runner.run(rate);
            points.add(p);
            if (!p.pass()) {
                firstFail = rate;
                break;
            }
            lastPass = rate;
            rate *= plan.factor();
        }
        if (Double.isNaN(lastPass) && !Double.isNaN(firstFail)) {
            // Even the first rate failed: walk down (at most three steps) to find a passing one.
            double r = firstFail;
            for (int i = 0; i < 3 && Double.isNaN(lastPass); i++) {
                r /= plan.factor();
                PointResult p = runner.run(r);
                points.add(p);
                if (p.pass()) {
                    lastPass = r;
                } else {
                    firstFail = r;
                }
            }
        }
        if (!Double.isNaN(lastPass) && !Double.isNaN(firstFail)) {
            double lo = lastPass;
            double hi = firstFail;
            for (int i = 0; i < plan.refineSteps(); i++) {
                double mid = Math.sqrt(lo * hi);
                PointResult p = runner.run(mid);
                points.add(p);
                if (p.pass()) {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
        }
        return outcome(points);
    }

    /** Goodput of a set of points: the highest passing offered rate (0 if none passes). */
    public static Outcome outcome(List<PointResult> points) {
        PointResult best = null;
        for (PointResult p : points) {
            if (p.pass() && p.mode().equals("open") && (best == null || p.offered() > best.offered())) {
                best = p;
            }
        }
        return new Outcome(List.copyOf(points), best == null ? 0 : best.offered(), best);
    }

    /** The grid rate nearest below or at {@code rate}: {@code start * factor^k}. */
    public static double gridFloor(double start, double factor, double rate) {
        if (rate < start) {
            return rate;
        }
        int k = (int) Math.floor(Math.log(rate / start) / Math.log(factor) + 1e-9);
        return start * Math.pow(factor, k);
    }
}
