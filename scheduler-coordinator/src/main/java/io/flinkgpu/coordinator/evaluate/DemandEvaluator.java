package io.flinkgpu.coordinator.evaluate;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.state.LatencySample;
import io.flinkgpu.coordinator.state.ModelInfo;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Evaluate step: turns two consecutive snapshots into demand.
 *
 * <ul>
 *   <li>rate: the growth of {@code requestsIn} between the snapshots (a counter that went down
 *       means a restart: the subtask is left out of that rate; so is a model a subtask reports for
 *       the first time, whose counter may have run since before the previous snapshot);
 *   <li>batch size: where the operator reports its batch cap ({@code batchCap}), the batch one
 *       instance holding the model's whole traffic would fill and run within half the model's SLO
 *       (the largest b with {@code b / rate + alpha + beta * b} within it, {@code rate} the model's
 *       total rate), at most the cap, at least the measured mean; without a reported cap the
 *       measured mean. Either way capped at the largest batch whose predicted run time
 *       {@code alpha + beta * b} fits in half the SLO. The measured mean
 *       alone depends on the placement: a model spread over more replicas has fewer requests per
 *       replica, the batcher's SLO-aware sizing cuts smaller batches there, and a price per request
 *       at those batches would rise with every replica the planner adds for it (and call for more);
 *       the batch at the total rate does not change with the number of replicas, and a model with
 *       little traffic is still priced at its small batches;
 *   <li>latency model: the operator's fits, weighted by batches; where some subtasks' fits have an
 *       intercept, only those (a subtask that has cut a single batch size only reports no
 *       intercept and its whole time per sample as the slope, which would price every request at
 *       a batch of one); where none has, the latest fit with an intercept in the model's history;
 *   <li>device time: {@code rate / b * (alpha + beta * b)}, from that latency model; until the
 *       operator has fitted one, the measured mean batch time divided by the mean batch size;
 *   <li>memory: the catalog's, else the default;
 *   <li>per device: the busiest and the mean busy time of its subtasks, and the requests per second
 *       they took in (per model and in all), which the parallelism planner sizes slots by.
 * </ul>
 *
 * Without a previous snapshot, the last rate in the latency history stands in. Plain Java.
 */
public final class DemandEvaluator {
    private final long defaultMemoryBytes;
    private final long defaultSloMillis;

    private final DemandForecast forecast;
    private final long rateWindowMillis;

    public DemandEvaluator(long defaultMemoryBytes, long defaultSloMillis) {
        this(defaultMemoryBytes, defaultSloMillis, DemandForecast.off());
    }

    /** With a forecast step ({@link #forecast}); a horizon of 0 turns it off. Rates over one cycle. */
    public DemandEvaluator(long defaultMemoryBytes, long defaultSloMillis, DemandForecast forecast) {
        this(defaultMemoryBytes, defaultSloMillis, 0, forecast);
    }

    /**
     * @param rateWindowMillis rates are measured against the newest collection at least this old
     *     (the control loop picks it, {@link #rateWindowMillis}); 0: the previous collection
     */
    public DemandEvaluator(long defaultMemoryBytes, long defaultSloMillis, long rateWindowMillis,
            DemandForecast forecast) {
        if (rateWindowMillis < 0) {
            throw new IllegalArgumentException("rate window >= 0");
        }
        this.defaultMemoryBytes = defaultMemoryBytes;
        this.defaultSloMillis = defaultSloMillis;
        this.rateWindowMillis = rateWindowMillis;
        this.forecast = forecast;
    }

    /** How far back the control loop measures rates ({@code coordinator.rate-window}). */
    public long rateWindowMillis() {
        return rateWindowMillis;
    }

    /**
     * The demand to plan for: {@code measured} with significant rising trends raised to their
     * forecast ({@link DemandForecast}); {@code learn} updates the trend (false for dry runs).
     */
    public Demand forecast(Demand measured, boolean learn) {
        return forecast.apply(measured, learn);
    }

    public Demand evaluate(MetricSnapshot previous, MetricSnapshot current, Map<String, ModelInfo> catalog,
            Map<String, List<LatencySample>> history) {
        double seconds = previous == null ? 0 : (current.atMillis() - previous.atMillis()) / 1000.0;
        boolean ratesMeasured = previous != null && seconds > 0;
        Map<String, List<ModelSample>> byModel = new TreeMap<>();
        Map<String, Double> rates = new TreeMap<>();
        Map<String, Set<String>> servedOn = new TreeMap<>();
        Map<String, Map<String, Double>> tenantRates = new TreeMap<>();
        // per subtask, per model: the requests per second it took in (what the parallelism planner sizes by)
        Map<Integer, Map<String, Double>> subtaskRates = new TreeMap<>();
        for (SubtaskSample s : current.subtasks()) {
            SubtaskSample before = previous == null ? null : subtask(previous, s.subtask());
            for (ModelSample m : s.models()) {
                byModel.computeIfAbsent(m.model(), k -> new ArrayList<>()).add(m);
                if (before != null && seconds > 0) {
                    ModelSample b = model(before, m.model(), m.version());
                    if (b == null || !Double.isFinite(b.requestsIn())) {
                        // first reported now: its counter may have counted since long before the previous
                        // collection (Flink's REST shows a metric some time after it is registered), so
                        // its growth over this interval is unknown; it is served here, its rate comes next cycle
                        if (nz(m.requestsIn()) > 0 && s.deviceId() != null) {
                            servedOn.computeIfAbsent(m.model(), k -> new TreeSet<>()).add(s.deviceId());
                        }
                        continue;
                    }
                    double was = nz(b.requestsIn());
                    double delta = nz(m.requestsIn()) - was;
                    for (Map.Entry<String, Double> t : m.tenantRequestsIn().entrySet()) {
                        double tenantWas = nz(b.tenantRequestsIn().getOrDefault(t.getKey(), 0.0));
                        double tenantDelta = nz(t.getValue()) - tenantWas;
                        if (tenantDelta > 0) {
                            tenantRates.computeIfAbsent(m.model(), k -> new TreeMap<>())
                                    .merge(t.getKey(), tenantDelta / seconds, Double::sum);
                        }
                    }
                    if (delta >= 0) {
                        rates.merge(m.model(), delta / seconds, Double::sum);
                        subtaskRates.computeIfAbsent(s.subtask(), k -> new TreeMap<>())
                                .merge(m.model(), delta / seconds, Double::sum);
                        if (delta > 0 && s.deviceId() != null) {
                            servedOn.computeIfAbsent(m.model(), k -> new TreeSet<>()).add(s.deviceId());
                        }
                    }
                }
            }
        }
        Map<String, ModelDemand> models = new TreeMap<>();
        Set<String> names = new TreeSet<>(byModel.keySet());
        catalog.values().stream().filter(ModelInfo::deployed).forEach(i -> names.add(i.name()));
        for (String name : names) {
            ModelInfo info = catalog.get(name);
            if (info != null && !info.deployed()) {
                continue;
            }
            List<ModelSample> samples = byModel.getOrDefault(name, List.of());
            List<LatencySample> past = history.getOrDefault(name, List.of());
            double rate;
            String rateSource;
            if (rates.containsKey(name)) {
                rate = rates.get(name);
                rateSource = String.format(Locale.ROOT, "rate %.1f/s measured over %.1f s", rate, seconds);
            } else if (!past.isEmpty()) {
                rate = past.get(past.size() - 1).ratePerSecond();
                rateSource = String.format(Locale.ROOT, "rate %.1f/s from history", rate);
            } else {
                rate = 0;
                rateSource = "no traffic measured yet";
            }
            List<ModelSample> fitted = samples.stream().filter(DemandEvaluator::hasIntercept).toList();
            List<ModelSample> fits = fitted.isEmpty() ? samples : fitted;
            double alpha = weightedMean(fits, ModelSample::latencyModelAlphaUs);
            double beta = weightedMean(fits, ModelSample::latencyModelBetaUs);
            double measuredBatch = Math.max(1, weightedMean(samples, ModelSample::batchSizeMean));
            double cap = samples.stream().mapToDouble(ModelSample::batchCap).filter(c -> Double.isFinite(c) && c >= 1)
                    .max().orElse(Double.NaN);
            String fitSource = "";
            if (samples.isEmpty() && !past.isEmpty()) {
                LatencySample last = past.get(past.size() - 1);
                alpha = last.alphaMicros();
                beta = last.betaMicros();
                measuredBatch = Math.max(1, last.meanBatchSize());
            }
            if (!(alpha > 0)) {
                for (int i = past.size() - 1; i >= 0; i--) {
                    LatencySample p = past.get(i);
                    if (p.alphaMicros() > 0 && p.betaMicros() > 0) {
                        alpha = p.alphaMicros();
                        beta = p.betaMicros();
                        fitSource = ", fit from history";
                        break;
                    }
                }
            }
            long slo = info != null && info.sloMillis() > 0 ? info.sloMillis() : defaultSloMillis;
            double budgetUs = slo * 1000 / 2.0;
            double batch = measuredBatch;
            String batchSource = "measured";
            if (Double.isFinite(cap)) {
                // the batch one instance with the model's whole traffic fills and runs in half the SLO
                double fill = Math.max(1, Math.floor(fillBatch(rate, alpha, beta, budgetUs)));
                batch = Math.min(cap, Math.max(measuredBatch, fill));
                batchSource = String.format(Locale.ROOT, "filled at the total rate, measured %.1f, cap %.0f",
                        measuredBatch, cap);
            }
            double perRequestUs;
            String how;
            if (alpha > 0 || beta > 0) {
                if (beta > 0) {
                    double sloBatch = Math.max(1, Math.floor((budgetUs - alpha) / beta));
                    batch = Math.min(batch, sloBatch);
                }
                perRequestUs = alpha / batch + beta;
                how = String.format(Locale.ROOT, "latency model %.0f + %.1f b us%s at b = %.1f (%s)", alpha, beta,
                        fitSource, batch, batchSource);
            } else {
                batch = measuredBatch; // the measured time is per measured batch
                double batchUs = weightedMean(samples, ModelSample::inferenceLatencyUsMean);
                perRequestUs = batchUs > 0 ? batchUs / batch : 0;
                how = String.format(Locale.ROOT, "measured %.0f us per batch of %.1f", batchUs, batch);
            }
            double load = rate * perRequestUs / 1e6;
            long memory = info != null && info.memoryBytes() > 0 ? info.memoryBytes() : defaultMemoryBytes;
            String version = info != null && info.version() != null ? info.version()
                    : samples.isEmpty() ? null : samples.get(0).version();
            models.put(name, new ModelDemand(name, version, rate, batch, load, memory, alpha, beta,
                    servedOn.getOrDefault(name, Set.of()), String.format(Locale.ROOT,
                            "%s x %.1f us per request (%s) = %.3f device-s/s", rateSource, perRequestUs, how, load),
                    tenantRates.getOrDefault(name, Map.of())));
        }

        Map<String, List<SubtaskSample>> byDevice = new TreeMap<>();
        for (SubtaskSample s : current.subtasks()) {
            String d = s.deviceId() != null ? s.deviceId() : "subtask-" + s.subtask();
            byDevice.computeIfAbsent(d, k -> new ArrayList<>()).add(s);
        }
        Map<String, DeviceLoad> devices = new TreeMap<>();
        byDevice.forEach((d, subs) -> {
            List<Integer> ids = subs.stream().map(SubtaskSample::subtask).sorted().toList();
            double total = subs.stream().mapToDouble(SubtaskSample::memoryTotalBytes).filter(Double::isFinite).max()
                    .orElse(Double.NaN);
            double used = subs.stream().mapToDouble(SubtaskSample::memoryUsedBytes).filter(Double::isFinite).max()
                    .orElse(0);
            double util = subs.stream().mapToDouble(SubtaskSample::utilization).filter(Double::isFinite).max()
                    .orElse(Double.NaN);
            double busy = subs.stream().mapToDouble(SubtaskSample::busyMsPerSecond).filter(Double::isFinite).max()
                    .orElse(0) / 1000;
            double bp = subs.stream().mapToDouble(SubtaskSample::backPressuredMsPerSecond).filter(Double::isFinite)
                    .max().orElse(0) / 1000;
            double meanBusy = subs.stream().mapToDouble(SubtaskSample::busyMsPerSecond).filter(Double::isFinite)
                    .average().orElse(Double.NaN) / 1000;
            Map<String, Double> modelRates = new TreeMap<>();
            subs.forEach(s -> subtaskRates.getOrDefault(s.subtask(), Map.of())
                    .forEach((model, r) -> modelRates.merge(model, r, Double::sum)));
            double inputRate = ratesMeasured
                    ? modelRates.values().stream().mapToDouble(Double::doubleValue).sum() : Double.NaN;
            devices.put(d, new DeviceLoad(d, ids, Double.isFinite(total) ? (long) total : -1, (long) used, util, busy,
                    bp, meanBusy, inputRate, modelRates, Double.NaN));
        });
        return new Demand(current.atMillis(), current.parallelism(), models, devices);
    }

    private static SubtaskSample subtask(MetricSnapshot s, int index) {
        return s.subtasks().stream().filter(x -> x.subtask() == index).findFirst().orElse(null);
    }

    private static ModelSample model(SubtaskSample s, String model, String version) {
        return s.models().stream().filter(m -> m.model().equals(model) && m.version().equals(version)).findFirst()
                .orElse(null);
    }

    /**
     * The largest batch b that one instance at {@code rate} requests/s fills and runs within
     * {@code budgetUs}: b / rate + alpha + beta b <= budget (b / rate: the wait of its oldest request).
     */
    static double fillBatch(double rate, double alphaUs, double betaUs, double budgetUs) {
        if (!(rate > 0)) {
            return 0;
        }
        double a = Double.isFinite(alphaUs) && alphaUs > 0 ? alphaUs : 0;
        double b = Double.isFinite(betaUs) && betaUs > 0 ? betaUs : 0;
        return Math.max(0, (budgetUs - a) / (1e6 / rate + b));
    }

    /** Whether the operator's fit on this subtask has both an intercept and a slope. */
    private static boolean hasIntercept(ModelSample m) {
        return m.latencyModelAlphaUs() > 0 && m.latencyModelBetaUs() > 0 && Double.isFinite(m.batches())
                && m.batches() > 0;
    }

    private static double nz(double d) {
        return Double.isFinite(d) ? d : 0;
    }

    /** Mean over subtasks, weighted by batches executed (a subtask that ran nothing says nothing). */
    private static double weightedMean(List<ModelSample> samples, java.util.function.ToDoubleFunction<ModelSample> f) {
        double sum = 0;
        double weight = 0;
        for (ModelSample m : samples) {
            double v = f.applyAsDouble(m);
            double w = Double.isFinite(m.batches()) && m.batches() > 0 ? m.batches() : 0;
            if (Double.isFinite(v) && v > 0 && w > 0) {
                sum += v * w;
                weight += w;
            }
        }
        return weight == 0 ? 0 : sum / weight;
    }
}
