package io.flinkgpu.inference.operator.metrics;

import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.qos.LatencyModel;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * The inference operator's metrics, under stable names (see docs/METRICS.md). Operator-wide
 * metrics sit in the {@code gpu_inference} group; per-model ones below it in
 * {@code model=<name>, version=<v>} key-value groups, which the Prometheus reporter turns into
 * labels.
 */
public final class InferenceMetrics {
    public static final String GROUP = MetricNames.GROUP;
    static final int HISTOGRAM_WINDOW = MetricNames.HISTOGRAM_WINDOW;

    private final MetricGroup group;
    private final Counter requestsIn;
    private final Counter responsesOut;
    private final Counter recordFailures;
    private final Counter deadLetters;
    private final Counter isolatedRequests;
    private final Counter isolationRuns;
    private final Counter reservedCoreBatches;
    private final Map<ErrorCode, Counter> errors = new EnumMap<>(ErrorCode.class);
    /** Concurrent: {@link #track} runs on the thread that completed a load, the rest on the mailbox thread. */
    private final Map<ModelId, ModelMetrics> models = new ConcurrentHashMap<>();
    private final ModelGauges gauges;

    /** Live values the gauges read. */
    public interface ModelGauges {
        long queuedSamples(ModelId model);

        /** The batcher's latency model of the model on this subtask's device. */
        default LatencyModel latencyModel(ModelId model) {
            return null;
        }

        /** The current batch size cap (AIMD), or the max batch size. */
        default int batchCap(ModelId model) {
            return 0;
        }

        /** Whether the version is loaded and ready on this subtask's device (the {@code loaded} gauge). */
        default boolean loaded(ModelId model) {
            return false;
        }

        /** Gauges that read these functions (of a batcher and a cache, or of a runtime holding both). */
        static ModelGauges of(java.util.function.ToLongFunction<ModelId> queuedSamples,
                java.util.function.Function<ModelId, LatencyModel> latencyModel,
                java.util.function.ToIntFunction<ModelId> batchCap, java.util.function.Predicate<ModelId> loaded) {
            return new ModelGauges() {
                @Override
                public long queuedSamples(ModelId model) {
                    return queuedSamples.applyAsLong(model);
                }

                @Override
                public LatencyModel latencyModel(ModelId model) {
                    return latencyModel.apply(model);
                }

                @Override
                public int batchCap(ModelId model) {
                    return batchCap.applyAsInt(model);
                }

                @Override
                public boolean loaded(ModelId model) {
                    return loaded.test(model);
                }
            };
        }
    }

    public InferenceMetrics(MetricGroup operatorGroup, LongSupplier queuedRequests, LongSupplier inFlightBatches,
            LongSupplier loadedModels, ModelGauges gauges) {
        this.group = operatorGroup.addGroup(GROUP);
        this.requestsIn = group.counter(MetricNames.REQUESTS_IN);
        this.responsesOut = group.counter(MetricNames.RESPONSES_OUT);
        this.recordFailures = group.counter(MetricNames.RECORD_FAILURES);
        this.deadLetters = group.counter(MetricNames.DEAD_LETTERS);
        this.isolatedRequests = group.counter(MetricNames.ISOLATED_REQUESTS);
        this.isolationRuns = group.counter(MetricNames.ISOLATION_RUNS);
        this.reservedCoreBatches = group.counter(MetricNames.RESERVED_CORE_BATCHES);
        this.gauges = gauges;
        group.gauge(MetricNames.QUEUED_REQUESTS, queuedRequests::getAsLong);
        group.gauge(MetricNames.IN_FLIGHT_BATCHES, inFlightBatches::getAsLong);
        group.gauge(MetricNames.LOADED_MODELS, loadedModels::getAsLong);
    }

    /** Registers the gauge of the batches this subtask executes at once. */
    public void executionThreads(int threads) {
        group.gauge(MetricNames.EXECUTION_THREADS, () -> threads);
    }

    /** Counts a batch started on the core kept for the task while the execution threads were busy. */
    public void reservedCoreBatch() {
        reservedCoreBatches.inc();
    }

    /** Per-model metrics. */
    public final class ModelMetrics {
        final Counter requestsIn;
        final Counter responsesOut;
        final Counter batches;
        final Histogram batchSize;
        final Histogram queueLatencyUs;
        final Histogram inferenceLatencyUs;
        final Histogram serviceLatencyUs;
        final Histogram predictionErrorUs;
        final Map<ErrorCode, Counter> errors = new EnumMap<>(ErrorCode.class);
        final Map<String, Counter> tenants = new java.util.HashMap<>();
        final MetricGroup modelGroup;

        ModelMetrics(ModelId id) {
            modelGroup = group.addGroup(MetricNames.MODEL, id.name()).addGroup(MetricNames.VERSION, id.version());
            requestsIn = modelGroup.counter(MetricNames.REQUESTS_IN);
            responsesOut = modelGroup.counter(MetricNames.RESPONSES_OUT);
            batches = modelGroup.counter(MetricNames.BATCHES);
            batchSize = modelGroup.histogram(MetricNames.BATCH_SIZE, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
            queueLatencyUs = modelGroup.histogram(MetricNames.QUEUE_LATENCY_US, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
            inferenceLatencyUs =
                    modelGroup.histogram(MetricNames.INFERENCE_LATENCY_US, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
            serviceLatencyUs =
                    modelGroup.histogram(MetricNames.SERVICE_LATENCY_US, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
            predictionErrorUs =
                    modelGroup.histogram(MetricNames.LATENCY_PREDICTION_ERROR_US, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
            modelGroup.gauge(MetricNames.QUEUED_SAMPLES, () -> gauges.queuedSamples(id));
            modelGroup.gauge(MetricNames.BATCH_CAP, () -> gauges.batchCap(id));
            modelGroup.gauge(MetricNames.LATENCY_MODEL_ALPHA_US, () -> {
                LatencyModel m = gauges.latencyModel(id);
                return m == null ? 0.0 : m.published().alphaNanos() / 1000;
            });
            modelGroup.gauge(MetricNames.LATENCY_MODEL_BETA_US, () -> {
                LatencyModel m = gauges.latencyModel(id);
                return m == null ? 0.0 : m.published().betaNanos() / 1000;
            });
            modelGroup.gauge(MetricNames.LOADED, () -> gauges.loaded(id) ? 1 : 0);
        }
    }

    private ModelMetrics model(ModelId id) {
        return models.computeIfAbsent(id, ModelMetrics::new);
    }

    /**
     * Registers the version's metrics now if it has none yet: called when a load completes, so
     * that its {@code loaded} gauge is there before its first request (a LOAD ahead of traffic).
     * Safe from any thread.
     */
    public void track(ModelId id) {
        if (id != null) {
            model(id);
        }
    }

    public void requestIn(ModelId id) {
        requestsIn.inc();
        if (id != null) {
            model(id).requestsIn.inc();
        }
    }

    /** Tenants counted by name per model at most; the rest count as {@link #OTHER_TENANTS}. */
    public static final int MAX_TENANTS_PER_MODEL = 32;
    public static final String OTHER_TENANTS = "_other";

    /**
     * A request of {@code tenant} for model {@code id} passed validation: counted per tenant
     * ({@code model.<m>.version.<v>.tenant.<t>.requestsIn}), which is how the coordinator splits a
     * shared model's cost among the tenants that use it.
     */
    public void tenantRequestIn(ModelId id, String tenant) {
        ModelMetrics m = model(id);
        String name = tenant == null || tenant.isBlank() ? "default" : tenant;
        Counter c = m.tenants.get(name);
        if (c == null) {
            if (m.tenants.size() >= MAX_TENANTS_PER_MODEL) {
                name = OTHER_TENANTS;
                c = m.tenants.get(name);
            }
            if (c == null) {
                c = m.modelGroup.addGroup(MetricNames.TENANT, name).counter(MetricNames.REQUESTS_IN);
                m.tenants.put(name, c);
            }
        }
        c.inc();
    }

    /** An exception while handling one record, caught and answered with INTERNAL instead of failing the task. */
    public void recordFailed() {
        recordFailures.inc();
    }

    /** A request refused as bad input (or whose handling threw) went to the refusals side output. */
    public void deadLettered() {
        deadLetters.inc();
    }

    /** A failed batch was split: {@code culprits} requests failed alone, at the cost of {@code extraRuns} runs. */
    public void isolated(int culprits, int extraRuns) {
        isolatedRequests.inc(culprits);
        isolationRuns.inc(extraRuns);
    }

    /** Records an answered request; {@code error} is null for a success. */
    public void responseOut(ModelId id, ErrorCode error) {
        responsesOut.inc();
        if (error != null) {
            errors.computeIfAbsent(error, c -> group.addGroup(MetricNames.ERROR, c.name()).counter(MetricNames.ERRORS)).inc();
        }
        if (id != null) {
            ModelMetrics m = model(id);
            m.responsesOut.inc();
            if (error != null) {
                m.errors.computeIfAbsent(error, c -> m.modelGroup.addGroup(MetricNames.ERROR, c.name()).counter(MetricNames.ERRORS)).inc();
            }
        }
    }

    /**
     * A batch of {@code samples} ran for {@code inferenceMs}, of which {@code serviceMs} on the
     * device for itself (the rest it waited for a device busy with other batches).
     */
    public void batchCompleted(ModelId id, int samples, double inferenceMs, double serviceMs) {
        ModelMetrics m = model(id);
        m.batches.inc();
        m.batchSize.update(samples);
        m.inferenceLatencyUs.update(Math.round(inferenceMs * 1000));
        m.serviceLatencyUs.update(Math.round(serviceMs * 1000));
    }

    /** The latency model predicted {@code predictedNanos} for a batch that took {@code actualNanos}. */
    public void predicted(ModelId id, long predictedNanos, long actualNanos) {
        model(id).predictionErrorUs.update(Math.abs(predictedNanos - actualNanos) / 1000);
    }

    public void queued(ModelId id, double queueMs) {
        model(id).queueLatencyUs.update(Math.round(queueMs * 1000));
    }
}
