package io.flinkgpu.coordinator;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A metric source for loop tests: {@code subtasks} inference subtasks on {@code devices}
 * simulated GPUs (subtask i on sim:(i mod devices)), each model served at a settable rate per
 * subtask with a fixed latency model; counters advance with a settable clock. A model is reported
 * loaded ({@code loaded} gauge) on the subtasks that serve it and on those set by {@link #loaded}.
 */
public final class FakeCluster implements MetricSource {
    public static final long GIB = 1L << 30;

    private final int subtasks;
    private final int devices;
    private long nowMillis = 1_000_000;
    private final Map<String, double[]> ratePerSubtask = new TreeMap<>();
    private final Map<String, double[]> counters = new TreeMap<>();
    private final Map<String, double[]> latencyModel = new TreeMap<>();
    private boolean down;
    private String jobId = "job";
    private final Map<String, Map<String, Double>> tenantFractions = new TreeMap<>();
    private double busyMsPerSecond = 500;
    private double utilization = 0.5;
    private final Map<String, java.util.Set<Integer>> loadedOn = new TreeMap<>();

    public FakeCluster(int subtasks, int devices) {
        this.subtasks = subtasks;
        this.devices = devices;
    }

    /** {@code rates[i]}: requests/s of {@code model} on subtask i; alpha/beta in microseconds. */
    public FakeCluster serve(String model, double alphaUs, double betaUs, double... rates) {
        ratePerSubtask.put(model, rates.clone());
        counters.putIfAbsent(model, new double[subtasks]);
        latencyModel.put(model, new double[] {alphaUs, betaUs});
        return this;
    }

    /**
     * Reports {@code model} loaded on these subtasks from now on (its {@code loaded} gauge), as after
     * a LOAD ahead of traffic; a subtask that serves the model at a rate above 0 reports it loaded anyway.
     */
    public FakeCluster loaded(String model, int... subtaskIndexes) {
        for (int s : subtaskIndexes) {
            loadedOn.computeIfAbsent(model, k -> new java.util.TreeSet<>()).add(s);
        }
        return this;
    }

    public void advance(long millis) {
        for (Map.Entry<String, double[]> e : ratePerSubtask.entrySet()) {
            double[] c = counters.get(e.getKey());
            for (int i = 0; i < subtasks; i++) {
                c[i] += e.getValue()[i] * millis / 1000.0;
            }
        }
        nowMillis += millis;
    }

    /** {@code n} requests of {@code model} answered by subtask {@code subtask} now (sparse traffic: no rate). */
    public FakeCluster requests(String model, int subtask, double n) {
        counters.get(model)[subtask] += n;
        return this;
    }

    /**
     * The job restarted (a failover): every counter starts again from 0; {@code jobId}: the job's id
     * from now on (a resubmitted job has a new one).
     */
    public FakeCluster restartJob(String newJobId) {
        counters.values().forEach(c -> java.util.Arrays.fill(c, 0));
        this.jobId = newJobId;
        return this;
    }

    /** Splits {@code model}'s requests among tenants by these fractions (reported as per-tenant counters). */
    public FakeCluster tenants(String model, Map<String, Double> fractions) {
        tenantFractions.put(model, fractions);
        return this;
    }

    /** Flink's busy time of every subtask and the devices' utilisation from now on. */
    public FakeCluster load(double busyMs, double deviceUtilization) {
        this.busyMsPerSecond = busyMs;
        this.utilization = deviceUtilization;
        return this;
    }

    public void down(boolean isDown) {
        down = isDown;
    }

    public Clock clock() {
        return new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return Instant.ofEpochMilli(nowMillis);
            }
        };
    }

    @Override
    public MetricSnapshot collect() throws CollectException {
        if (down) {
            throw new CollectException("REST unreachable (test)");
        }
        List<SubtaskSample> out = new ArrayList<>();
        for (int i = 0; i < subtasks; i++) {
            List<ModelSample> models = new ArrayList<>();
            for (String m : ratePerSubtask.keySet()) {
                double[] lm = latencyModel.get(m);
                double count = counters.get(m)[i];
                Map<String, Double> tenants = new TreeMap<>();
                tenantFractions.getOrDefault(m, Map.of()).forEach((t, f) -> tenants.put(t, count * f));
                boolean loaded = ratePerSubtask.get(m)[i] > 0 || loadedOn.getOrDefault(m, java.util.Set.of()).contains(i);
                models.add(ModelSample.builder(m, "1").counts(count, count, count / 4).queuedSamples(0)
                        .batchSizeMean(4).inferenceLatencyUsMean(lm[0] + 4 * lm[1]).queueLatencyUsP99(1000)
                        .latencyModel(lm[0], lm[1]).tenantRequestsIn(tenants).loaded(loaded ? 1 : 0).build());
            }
            out.add(new SubtaskSample(i, "sim:" + (i % devices), 0, 8.0 * GIB, utilization, busyMsPerSecond, 0, 0,
                    models));
        }
        return new MetricSnapshot(nowMillis, jobId, "vertex", subtasks, out);
    }
}
