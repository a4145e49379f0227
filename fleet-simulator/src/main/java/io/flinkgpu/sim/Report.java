package io.flinkgpu.sim;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** The PNG plots of a simulation run (XChart, as the benchmarks' plots). */
final class Report {
    private Report() {}

    static XYChart chart(String title, String x, String y) {
        XYChart c = new XYChartBuilder().width(900).height(520).title(title).xAxisTitle(x).yAxisTitle(y).build();
        c.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        c.getStyler().setMarkerSize(7);
        return c;
    }

    /** One line per policy of a metric against offered load. */
    static String perPolicy(Path dir, String file, String title, String y, Map<String, List<SimResult>> byPolicy,
            ToDoubleFunction<SimResult> f, Double reference, String referenceName) throws IOException {
        XYChart c = chart(title, "offered load (device-s/s per GPU at the reference batch)", y);
        double maxX = 0;
        for (Map.Entry<String, List<SimResult>> e : byPolicy.entrySet()) {
            List<Double> xs = new ArrayList<>();
            List<Double> ys = new ArrayList<>();
            for (SimResult r : e.getValue()) {
                xs.add(r.load());
                ys.add(f.applyAsDouble(r));
                maxX = Math.max(maxX, r.load());
            }
            XYSeries s = c.addSeries(e.getKey(), xs, ys);
            s.setMarker(SeriesMarkers.CIRCLE);
        }
        if (reference != null && maxX > 0) {
            XYSeries s = c.addSeries(referenceName, new double[] {0, maxX}, new double[] {reference, reference});
            s.setMarker(SeriesMarkers.NONE);
        }
        BitmapEncoder.saveBitmap(c, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }

    static String scaling(Path dir, List<PlannerScaling.Point> points) throws IOException {
        XYChart c = chart("PlacementPlanner.plan wall time vs fleet size (1,000 models)", "devices", "ms per plan");
        c.getStyler().setXAxisLogarithmic(true);
        c.getStyler().setYAxisLogarithmic(true);
        List<Double> x = new ArrayList<>();
        List<Double> cold = new ArrayList<>();
        List<Double> steady = new ArrayList<>();
        for (PlannerScaling.Point p : points) {
            x.add((double) p.devices());
            cold.add(Math.max(0.01, p.coldMs()));
            steady.add(Math.max(0.01, p.steadyMedianMs()));
        }
        c.addSeries("cold start (empty placement)", x, cold).setMarker(SeriesMarkers.CIRCLE);
        c.addSeries("steady cycle (median)", x, steady).setMarker(SeriesMarkers.DIAMOND);
        c.addSeries("1 s", new double[] {x.get(0), x.get(x.size() - 1)}, new double[] {1000, 1000})
                .setMarker(SeriesMarkers.NONE);
        String file = "planner-decision-time.png";
        BitmapEncoder.saveBitmap(c, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }

    static String validation(Path dir, RecoveryValidation.Outcome o) throws IOException {
        XYChart c = chart("Recovery benchmark: p99 per 1-s window, measured and replayed", "t from the step (s)",
                "p99 ms");
        List<Double> mx = new ArrayList<>();
        List<Double> my = new ArrayList<>();
        o.measuredWindowP99Ms().forEach((t, v) -> {
            mx.add((double) t);
            my.add(v);
        });
        if (!mx.isEmpty()) {
            c.addSeries("measured p99", mx, my).setMarker(SeriesMarkers.NONE);
        }
        List<Double> x = new ArrayList<>();
        List<Double> y = new ArrayList<>();
        o.windowP99Ms().forEach((t, v) -> {
            x.add(t - RecoveryValidation.BEFORE);
            y.add(v);
        });
        if (!x.isEmpty()) {
            c.addSeries("simulated p99 (first seed)", x, y).setMarker(SeriesMarkers.NONE);
            c.addSeries("SLO", new double[] {x.get(0), x.get(x.size() - 1)},
                    new double[] {RecoveryValidation.SLO_MS, RecoveryValidation.SLO_MS}).setMarker(SeriesMarkers.NONE);
        }
        String file = "validation-recovery-p99.png";
        BitmapEncoder.saveBitmap(c, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }
}
