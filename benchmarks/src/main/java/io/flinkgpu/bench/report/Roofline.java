package io.flinkgpu.bench.report;

import io.flinkgpu.bench.load.PointResult;
import io.flinkgpu.bench.sut.Ceiling;
import java.util.ArrayList;
import java.util.List;

/**
 * The roofline of a scenario: what the job could serve if the pipeline's cost per request (the
 * passthrough's, Flink and Kafka without inference) and inference's (raw ONNX Runtime's at the
 * batch size the job ran at) simply added up on the machine:
 * {@code R = 1 / (1 / passthrough + 1 / ceiling(b))}.
 */
public final class Roofline {
    private Roofline() {}

    /**
     * {@code 1 / (1/passthrough + 1/ceiling)} (requests/s), or NaN when either is not a positive
     * rate.
     */
    public static double bound(double passthrough, double ceiling) {
        if (!(passthrough > 0) || !(ceiling > 0) || Double.isInfinite(passthrough) || Double.isInfinite(ceiling)) {
            return Double.NaN;
        }
        return 1 / (1 / passthrough + 1 / ceiling);
    }

    /**
     * Raw ONNX Runtime samples/s at a (fractional) batch size: linear between the measured batch
     * sizes, clamped at the smallest and largest; batch NaN (no batch reported) is batch 1; NaN
     * when no raw point was measured.
     */
    public static double ceilingAt(List<Ceiling.Point> ceiling, double batch) {
        List<Ceiling.Point> raw = new ArrayList<>();
        for (Ceiling.Point p : ceiling) {
            if (p.path().equals("raw")) {
                raw.add(p);
            }
        }
        if (raw.isEmpty()) {
            return Double.NaN;
        }
        double b = Double.isNaN(batch) ? 1 : batch;
        raw.sort((x, y) -> Integer.compare(x.batch(), y.batch()));
        if (b <= raw.get(0).batch()) {
            return raw.get(0).samplesPerSecond();
        }
        for (int i = 1; i < raw.size(); i++) {
            Ceiling.Point lo = raw.get(i - 1);
            Ceiling.Point hi = raw.get(i);
            if (b <= hi.batch()) {
                double f = (b - lo.batch()) / (hi.batch() - lo.batch());
                return lo.samplesPerSecond() + f * (hi.samplesPerSecond() - lo.samplesPerSecond());
            }
        }
        return raw.get(raw.size() - 1).samplesPerSecond();
    }

    /**
     * The lowest offered rate above {@code goodput} at which an open-loop point failed: the upper
     * end of the bracket the sweep put goodput in ({@code goodput <= true capacity < this}).
     * Infinity when no rate above goodput failed: the sweep stopped at its cap or point budget
     * still passing, so goodput is only a lower bound.
     */
    public static double firstFailAbove(List<PointResult> points, double goodput) {
        double fail = Double.POSITIVE_INFINITY;
        for (PointResult p : points) {
            if (p.mode().equals("open") && !p.pass() && p.offered() > goodput) {
                fail = Math.min(fail, p.offered());
            }
        }
        return fail;
    }

    /**
     * The range {@code goodput / R} can take within both sweeps' resolution: the job's capacity
     * lies in {@code [job, jobFail)} and the passthrough's in {@code [passthrough, passthroughFail)},
     * so the share lies between {@code job / R(passthroughFail)} and {@code jobFail / R(passthrough)}.
     * An infinite {@code passthroughFail} (the passthrough never failed) puts R's upper end at the
     * ceiling itself; an infinite {@code jobFail} leaves the share unbounded above. NaN at both ends
     * where R is not defined.
     */
    public static double[] shareRange(double job, double jobFail, double passthrough, double passthroughFail,
            double ceiling) {
        double low = bound(passthrough, ceiling);
        if (Double.isNaN(low)) {
            return new double[] {Double.NaN, Double.NaN};
        }
        double high = Double.isInfinite(passthroughFail) ? ceiling : bound(passthroughFail, ceiling);
        return new double[] {job / high, jobFail / low};
    }
}
