package io.flinkgpu.bench.report;

import io.flinkgpu.bench.run.BenchmarkRunner.ConfigResult;
import io.flinkgpu.bench.run.BenchmarkRunner.ScenarioResult;
import io.flinkgpu.bench.load.PointResult;
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

/**
 * Every PNG plot of the benchmarks, in one style: a scenario's throughput and latency vs offered
 * load and its latency CDFs, and {@link #timeSeries time series} (e.g. p99 per window around a
 * load step). The building blocks ({@link #chart}, {@link #addPoints}, {@link #addLine},
 * {@link #save}) are the same for all of them.
 */
public final class Plots {
    private Plots() {}

    /** One series of a time-series chart: (t, value) pairs. */
    public record Series(String name, List<double[]> points) {}

    /** Writes the plots and returns their file names. */
    public static List<String> write(ScenarioResult s, Path dir) throws IOException {
        List<String> files = new ArrayList<>();
        String name = s.scenario.name();

        XYChart throughput = chart(name + ": throughput vs offered load", "offered load (requests/s)",
                "answered (requests/s)");
        double maxOffered = 0;
        for (ConfigResult r : s.configs.values()) {
            for (PointResult p : r.openPoints()) {
                maxOffered = Math.max(maxOffered, p.offered());
            }
        }
        if (maxOffered > 0) {
            addLine(throughput, "offered = answered", new double[] {0, maxOffered}, new double[] {0, maxOffered});
        }
        for (ConfigResult r : s.configs.values()) {
            add(throughput, r.config.name(), r.openPoints(), PointResult::throughput);
        }
        files.add(save(throughput, dir, name + "-throughput.png"));

        for (String pct : new String[] {"p50", "p99"}) {
            XYChart latency = chart(name + ": " + pct + " latency vs offered load (SLO " + (int) s.scenario.sloMs()
                    + " ms)", "offered load (requests/s)", pct + " latency (ms, log)");
            latency.getStyler().setYAxisLogarithmic(true);
            for (ConfigResult r : s.configs.values()) {
                add(latency, r.config.name(), r.openPoints(), pct.equals("p50") ? PointResult::p50 : PointResult::p99);
            }
            if (maxOffered > 0) {
                addLine(latency, "SLO", new double[] {0, maxOffered},
                        new double[] {s.scenario.sloMs(), s.scenario.sloMs()});
            }
            files.add(save(latency, dir, name + "-latency-" + pct + ".png"));
        }

        XYChart cdf = chart(name + ": latency CDF at each configuration's goodput", "latency (ms, log)",
                "percentile");
        cdf.getStyler().setXAxisLogarithmic(true);
        for (ConfigResult r : s.configs.values()) {
            PointResult at = r.sweep == null ? null : r.sweep.atGoodput();
            if (at == null || at.cdf().isEmpty()) {
                continue;
            }
            double[] x = new double[at.cdf().size()];
            double[] y = new double[x.length];
            for (int i = 0; i < x.length; i++) {
                x[i] = Math.max(0.01, at.cdf().get(i)[1]);
                y[i] = at.cdf().get(i)[0];
            }
            addLine(cdf, r.config.name() + String.format(" @%.0f/s", at.offered()), x, y);
        }
        if (!cdf.getSeriesMap().isEmpty()) {
            files.add(save(cdf, dir, name + "-latency-cdf.png"));
        }
        return files;
    }

    /** The file names {@link #write} produces for a scenario (the CDF only if some configuration has a goodput). */
    public static List<String> files(ScenarioResult s) {
        String name = s.scenario.name();
        List<String> files = new ArrayList<>(List.of(name + "-throughput.png", name + "-latency-p50.png",
                name + "-latency-p99.png"));
        for (ConfigResult r : s.configs.values()) {
            if (r.sweep != null && r.sweep.atGoodput() != null) {
                files.add(name + "-latency-cdf.png");
                break;
            }
        }
        return files;
    }

    /**
     * Writes {@code dir/file}: one value over time per series on a log value axis, horizontal
     * {@code levels} (e.g. the SLO) from {@code from} to {@code to}, and vertical {@code events}
     * (e.g. a load step, a decision) spanning the plotted values and levels. Returns {@code file}.
     */
    public static String timeSeries(Path dir, String file, String title, String x, String y, List<Series> series,
            Map<String, Double> levels, double from, double to, Map<String, Double> events) throws IOException {
        XYChart chart = chart(title, x, y);
        chart.getStyler().setYAxisLogarithmic(true);
        chart.getStyler().setMarkerSize(4);
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (Series s : series) {
            for (double[] p : plottable(s.points())) {
                lo = Math.min(lo, p[1]);
                hi = Math.max(hi, p[1]);
            }
            addPoints(chart, s.name(), s.points());
        }
        for (double level : levels.values()) {
            lo = Math.min(lo, level);
            hi = Math.max(hi, level);
        }
        lo *= 0.8;
        hi *= 1.2;
        for (Map.Entry<String, Double> level : levels.entrySet()) {
            addLine(chart, level.getKey(), new double[] {from, to}, new double[] {level.getValue(), level.getValue()});
        }
        for (Map.Entry<String, Double> event : events.entrySet()) {
            addLine(chart, event.getKey(), new double[] {event.getValue(), event.getValue()}, new double[] {lo, hi});
        }
        return save(chart, dir, file);
    }

    /** A chart in the style of every plot here: 960x560, legend inside at the top left. */
    public static XYChart chart(String title, String x, String y) {
        System.setProperty("java.awt.headless", "true");
        XYChart chart = new XYChartBuilder().width(960).height(560).title(title).xAxisTitle(x).yAxisTitle(y).build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        chart.getStyler().setMarkerSize(6);
        return chart;
    }

    /**
     * Adds a series of the (x, y) points whose y is finite and positive (what a log axis can show);
     * none such: no series.
     */
    public static void addPoints(XYChart chart, String name, List<double[]> xy) {
        List<double[]> shown = plottable(xy);
        if (shown.isEmpty()) {
            return;
        }
        double[] x = new double[shown.size()];
        double[] y = new double[shown.size()];
        for (int i = 0; i < x.length; i++) {
            x[i] = shown.get(i)[0];
            y[i] = shown.get(i)[1];
        }
        chart.addSeries(name, x, y);
    }

    /** Adds a line through the points without markers: a reference (the SLO, an event) or a curve. */
    public static void addLine(XYChart chart, String name, double[] x, double[] y) {
        XYSeries line = chart.addSeries(name, x, y);
        line.setMarker(SeriesMarkers.NONE);
    }

    /** Writes the chart to {@code dir/file} as PNG; returns {@code file}. */
    public static String save(XYChart chart, Path dir, String file) throws IOException {
        BitmapEncoder.saveBitmap(chart, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }

    private static List<double[]> plottable(List<double[]> xy) {
        List<double[]> out = new ArrayList<>();
        for (double[] p : xy) {
            if (Double.isFinite(p[1]) && p[1] > 0) {
                out.add(p);
            }
        }
        return out;
    }

    private static void add(XYChart chart, String name, List<PointResult> points, ToDoubleFunction<PointResult> f) {
        List<double[]> xy = new ArrayList<>();
        for (PointResult p : points) {
            xy.add(new double[] {p.offered(), f.applyAsDouble(p)});
        }
        addPoints(chart, name, xy);
    }
}
