package io.flinkgpu.coordinator.state;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.MoveRecord;
import io.flinkgpu.coordinator.plan.Placement;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;

/**
 * {@link StateStore} over an ordered byte key-value map: values are JSON, keys are
 * {@code <kind>/<name>}, logs use zero-padded sequence numbers so a prefix scan returns them in
 * order. The RocksDB and in-memory stores differ only in the map, so they behave the same. Plan
 * epochs are written with a sync: a machine crash must not let a restarted coordinator reuse an
 * epoch the job has already seen (the job would ignore that plan).
 */
public abstract class KeyValueStateStore implements StateStore {
    static final int MAX_LATENCY_SAMPLES = 256;
    static final int MAX_DECISIONS = 10_000;
    static final int MAX_MOVES = 1_000;

    static final ObjectMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private static final String MODEL = "model/";
    private static final String LATENCY = "latency/";
    private static final String DECISION = "decision/";
    private static final String MOVE = "move/";
    private static final String RESCALE = "rescale/";
    static final int MAX_RESCALES = 200;
    private static final String TENANT = "tenant/";
    private static final String ROLLOUT = "rollout/";
    private static final String IDLE = "idle/";
    private static final String PLACEMENT = "placement";
    private static final String EPOCH = "plan-epoch";
    private static final String PLAN = "plan";
    private static final String PAUSED = "paused";

    /** Reads a key, or null. */
    protected abstract byte[] get(String key);

    /**
     * Writes the entries atomically (null value: delete). {@code sync}: durable on disk when this
     * returns (plan epochs); otherwise durable against a crash of the process, not of the machine.
     */
    protected abstract void write(Map<String, byte[]> entries, boolean sync);

    /** All entries whose key starts with {@code prefix}, in key order. */
    protected abstract SortedMap<String, byte[]> scan(String prefix);

    private static byte[] json(Object value) {
        try {
            return JSON.writeValueAsBytes(value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static <T> T read(byte[] bytes, Class<T> type) {
        try {
            return JSON.readValue(bytes, type);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static <T> T read(byte[] bytes, TypeReference<T> type) {
        try {
            return JSON.readValue(bytes, type);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void put(String key, byte[] value) {
        Map<String, byte[]> m = new LinkedHashMap<>();
        m.put(key, value);
        write(m, false);
    }

    @Override
    public synchronized Map<String, ModelInfo> models() {
        Map<String, ModelInfo> out = new LinkedHashMap<>();
        scan(MODEL).forEach((k, v) -> out.put(k.substring(MODEL.length()), read(v, ModelInfo.class)));
        return out;
    }

    @Override
    public synchronized void putModel(ModelInfo model) {
        put(MODEL + model.name(), json(model));
    }

    @Override
    public synchronized void removeModel(String name) {
        put(MODEL + name, null);
    }

    @Override
    public synchronized void appendLatency(String model, LatencySample sample) {
        appendBounded(LATENCY + model + "/", List.of(json(sample)), MAX_LATENCY_SAMPLES);
    }

    @Override
    public synchronized List<LatencySample> latencyHistory(String model) {
        List<LatencySample> out = new ArrayList<>();
        scan(LATENCY + model + "/").values().forEach(v -> out.add(read(v, LatencySample.class)));
        return out;
    }

    @Override
    public synchronized Placement placement() {
        byte[] v = get(PLACEMENT);
        return v == null ? Placement.EMPTY : read(v, Placement.class);
    }

    @Override
    public synchronized void putPlacement(Placement placement) {
        put(PLACEMENT, json(placement));
    }

    @Override
    public synchronized List<MoveRecord> moves() {
        List<MoveRecord> out = new ArrayList<>();
        scan(MOVE).values().forEach(v -> out.add(read(v, MoveRecord.class)));
        return out;
    }

    @Override
    public synchronized void appendMoves(List<MoveRecord> moves) {
        appendBounded(MOVE, moves.stream().map(KeyValueStateStore::json).toList(), MAX_MOVES);
    }

    @Override
    public synchronized List<io.flinkgpu.coordinator.plan.RescaleRecord> rescales() {
        List<io.flinkgpu.coordinator.plan.RescaleRecord> out = new ArrayList<>();
        scan(RESCALE).values().forEach(v -> out.add(read(v, io.flinkgpu.coordinator.plan.RescaleRecord.class)));
        return out;
    }

    @Override
    public synchronized void appendRescale(io.flinkgpu.coordinator.plan.RescaleRecord rescale) {
        appendBounded(RESCALE, List.of(json(rescale)), MAX_RESCALES);
    }

    @Override
    public synchronized Map<String, IdleClock> idleClocks() {
        Map<String, IdleClock> out = new LinkedHashMap<>();
        scan(IDLE).forEach((k, v) -> out.put(k.substring(IDLE.length()), read(v, IdleClock.class)));
        return out;
    }

    @Override
    public synchronized void putIdleClocks(Map<String, IdleClock> clocks) {
        Map<String, byte[]> m = new LinkedHashMap<>();
        scan(IDLE).keySet().forEach(k -> m.put(k, null));
        clocks.forEach((model, clock) -> m.put(IDLE + model, json(clock)));
        if (!m.isEmpty()) {
            write(m, false);
        }
    }

    @Override
    public synchronized Map<String, io.flinkgpu.coordinator.rollout.Rollout> rollouts() {
        Map<String, io.flinkgpu.coordinator.rollout.Rollout> out = new LinkedHashMap<>();
        scan(ROLLOUT).forEach((k, v) -> out.put(k.substring(ROLLOUT.length()),
                read(v, io.flinkgpu.coordinator.rollout.Rollout.class)));
        return out;
    }

    @Override
    public synchronized void putRollout(io.flinkgpu.coordinator.rollout.Rollout rollout) {
        put(ROLLOUT + rollout.model(), json(rollout));
    }

    @Override
    public synchronized void removeRollout(String model) {
        put(ROLLOUT + model, null);
    }

    @Override
    public synchronized long lastEpoch() {
        byte[] v = get(EPOCH);
        return v == null ? 0 : Long.parseLong(new String(v, StandardCharsets.UTF_8));
    }

    @Override
    public synchronized Optional<ControlMessage> lastPlan() {
        byte[] v = get(PLAN);
        if (v == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(ControlMessageCodec.decode(v));
        } catch (InvalidControlMessageException e) {
            throw new IllegalStateException("stored plan is unreadable: " + e.getMessage(), e);
        }
    }

    @Override
    public synchronized void recordPlan(ControlMessage plan) {
        long last = lastEpoch();
        if (plan.epoch() <= last) {
            throw new IllegalStateException("plan epoch " + plan.epoch() + " is not newer than the recorded " + last);
        }
        Map<String, byte[]> m = new LinkedHashMap<>();
        m.put(EPOCH, String.valueOf(plan.epoch()).getBytes(StandardCharsets.UTF_8));
        m.put(PLAN, ControlMessageCodec.encode(plan));
        write(m, true);
    }

    @Override
    public synchronized void appendDecisions(List<Decision> decisions) {
        appendBounded(DECISION, decisions.stream().map(KeyValueStateStore::json).toList(), MAX_DECISIONS);
    }

    @Override
    public synchronized List<Decision> recentDecisions(int limit) {
        List<Decision> all = new ArrayList<>();
        scan(DECISION).values().forEach(v -> all.add(read(v, Decision.class)));
        return List.copyOf(all.subList(Math.max(0, all.size() - limit), all.size()));
    }

    @Override
    public synchronized Map<String, Double> tenantWeights() {
        Map<String, Double> out = new LinkedHashMap<>();
        scan(TENANT).forEach((k, v) -> out.put(k.substring(TENANT.length()), read(v, Double.class)));
        return out;
    }

    @Override
    public synchronized void putTenantWeight(String tenant, double weight) {
        put(TENANT + tenant, json(weight));
    }

    @Override
    public synchronized boolean paused() {
        byte[] v = get(PAUSED);
        return v != null && read(v, Boolean.class);
    }

    @Override
    public synchronized void setPaused(boolean paused) {
        put(PAUSED, json(paused));
    }

    /** Appends under {@code prefix + seq} and drops the oldest beyond {@code max}. */
    private void appendBounded(String prefix, List<byte[]> values, int max) {
        if (values.isEmpty()) {
            return;
        }
        SortedMap<String, byte[]> existing = scan(prefix);
        long next = existing.isEmpty() ? 0 : Long.parseLong(existing.lastKey().substring(prefix.length())) + 1;
        Map<String, byte[]> m = new LinkedHashMap<>();
        for (byte[] v : values) {
            m.put(prefix + String.format("%019d", next++), v);
        }
        int overflow = existing.size() + values.size() - max;
        for (String k : existing.keySet()) {
            if (overflow-- <= 0) {
                break;
            }
            m.put(k, null);
        }
        write(m, false);
    }
}
