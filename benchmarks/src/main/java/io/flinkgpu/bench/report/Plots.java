package io.flinkgpu.bench.report;

import io.flinkgpu.bench.BenchmarkRunner.ConfigResult;
import io.flinkgpu.bench.BenchmarkRunner.ScenarioResult;
import io.flinkgpu.bench.load.PointResult;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.ToDoubleFunction;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.markers.SeriesMarkers;

/** PNG plots of a scenario: throughput and latency vs offered load, and latency CDFs. */
public final class Plots {
    private Plots() {}

    /** Writes the plots and returns their file names. */
    public static List<String> write(ScenarioResult s, Path dir) throws IOException {
        System.setProperty("java.awt.headless", "true");
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
            XYSeries ideal = throughput.addSeries("offered = answered", new double[] {0, maxOffered},
                    new double[] {0, maxOffered});
            ideal.setMarker(SeriesMarkers.NONE);
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
                XYSeries slo = latency.addSeries("SLO", new double[] {0, maxOffered},
                        new double[] {s.scenario.sloMs(), s.scenario.sloMs()});
                slo.setMarker(SeriesMarkers.NONE);
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
            XYSeries series = cdf.addSeries(r.config.name() + String.format(" @%.0f/s", at.offered()), x, y);
            series.setMarker(SeriesMarkers.NONE);
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

    private static XYChart chart(String title, String x, String y) {
        XYChart chart = new XYChartBuilder().width(960).height(560).title(title).xAxisTitle(x).yAxisTitle(y).build();
        chart.getStyler().setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.InsideNW);
        chart.getStyler().setMarkerSize(6);
        return chart;
    }

    private static void add(XYChart chart, String name, List<PointResult> points, ToDoubleFunction<PointResult> f) {
        List<double[]> xy = new ArrayList<>();
        for (PointResult p : points) {
            double v = f.applyAsDouble(p);
            if (!Double.isNaN(v) && v > 0) {
                xy.add(new double[] {p.offered(), v});
            }
        }
        if (xy.isEmpty()) {
            return;
        }
        double[] x = new double[xy.size()];
        double[] y = new double[xy.size()];
        for (int i = 0; i < x.length; i++) {
            x[i] = xy.get(i)[0];
            y[i] = xy.get(i)[1];
        }
        chart.addSeries(name, x, y);
    }

    private static String save(XYChart chart, Path dir, String file) throws IOException {
        BitmapEncoder.saveBitmap(chart, dir.resolve(file).toString(), BitmapEncoder.BitmapFormat.PNG);
        return file;
    }
}
