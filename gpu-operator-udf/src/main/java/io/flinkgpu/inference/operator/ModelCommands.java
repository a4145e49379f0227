package io.flinkgpu.inference.operator;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import io.flinkgpu.inference.cache.ModelCache;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.ProtocolException;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.metrics.MetricNames;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The inference subtask's side of the coordinator's plans: every subtask receives each plan the
 * control plane's gate ({@link PlanRouter}) applied, and carries out the plan's commands addressed
 * to its own index. Invalid and stale control records are judged and counted at the gate only;
 * here a plan whose epoch is not newer than the one applied (a replay after a restore) is skipped.
 * LOAD pins the model in this subtask's {@link ModelCache}: it is loaded and warmed up at once,
 * ahead of its traffic, and kept through idle eviction; UNLOAD unpins it and unloads it once no
 * batch holds it. Loads run in command order on one thread of their own, never on the mailbox
 * thread; a command that cannot be carried out (unknown model, load failure) is logged and
 * counted, and the subtask keeps serving.
 *
 * <p>The applied epoch and the models pinned by commands are operator state, so a restored
 * subtask loads them again and does not re-apply older plans.
 */
final class ModelCommands implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ModelCommands.class);
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    /** What one subtask snapshots: the plan epoch it applied and the LOADs in force. */
    @JsonIgnoreProperties(ignoreUnknown = true)
    record Applied(int subtask, long epoch, List<SubtaskCommand> loads) {
        Applied {
            loads = loads == null ? List.of() : List.copyOf(loads);
        }
    }

    private final int subtask;
    private final ModelRepository repository;
    private final ModelCache cache;
    private final ExecutorService loader;
    /** LOADs in force, by model and version (mailbox thread only). */
    private final Map<String, SubtaskCommand> loads = new LinkedHashMap<>();
    private Counter applied;
    private Counter failed;
    /** Plans received but not applied: unreadable, or not newer than {@link #epoch}. */
    private long ignored;
    private volatile long epoch;

    ModelCommands(int subtask, ModelRepository repository, ModelCache cache) {
        this.subtask = subtask;
        this.repository = repository;
        this.cache = cache;
        this.loader = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "model-commands-" + subtask);
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Metrics under {@code gpu_inference.control}, beside the gate's: the epoch whose commands this
     * subtask applied, commands applied and failed, models pinned.
     */
    void registerMetrics(MetricGroup operatorGroup) {
        MetricGroup control = operatorGroup.addGroup(MetricNames.GROUP).addGroup(MetricNames.CONTROL);
        applied = control.counter(MetricNames.COMMANDS_APPLIED);
        failed = control.counter(MetricNames.COMMANDS_FAILED);
        control.gauge(MetricNames.PLAN_EPOCH, () -> epoch);
        control.gauge(MetricNames.MODELS_PINNED, () -> cache.pinnedModels().size());
    }

    /** Restores from union state (every subtask's entry): the newest epoch, and this subtask's LOADs, applied again. */
    void restore(Iterable<String> state) {
        long newest = 0;
        for (String json : state) {
            Applied a;
            try {
                a = JSON.readValue(json, Applied.class);
            } catch (JsonProcessingException e) {
                LOG.warn("Ignoring unreadable control state of subtask {}: {}", subtask, e.getMessage());
                continue;
            }
            newest = Math.max(newest, a.epoch());
            if (a.subtask() == subtask) {
                for (SubtaskCommand load : a.loads()) {
                    loads.put(key(load), load);
                }
            }
        }
        epoch = newest;
        if (!loads.isEmpty()) {
            LOG.info("Subtask {} restored plan epoch {}; loading {} pinned models again", subtask, newest,
                    loads.size());
            for (SubtaskCommand load : loads.values()) {
                loader.execute(() -> load(load, false));
            }
        }
    }

    List<String> snapshot() {
        try {
            return List.of(JSON.writeValueAsString(new Applied(subtask, epoch, new ArrayList<>(loads.values()))));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot encode control state", e);
        }
    }

    /** One plan applied by the gate (its JSON), on the mailbox thread. Never throws. */
    void offer(byte[] record) {
        ControlMessage plan;
        try {
            plan = ControlMessageCodec.decode(record);
        } catch (InvalidControlMessageException e) {
            ignored++; // only a record that bypassed the gate gets here
            LOG.warn("Subtask {} ignores an unreadable plan: {}", subtask, e.getMessage());
            return;
        }
        if (plan.epoch() <= epoch) {
            ignored++;
            LOG.info("Subtask {} skips plan epoch {}: already applied epoch {}", subtask, plan.epoch(), epoch);
            return;
        }
        epoch = plan.epoch();
        for (SubtaskCommand c : plan.commands()) {
            if (c.subtask() != subtask) {
                continue;
            }
            switch (c.action()) {
                case LOAD -> {
                    loads.put(key(c), c);
                    loader.execute(() -> load(c, true));
                }
                case UNLOAD -> {
                    loads.entrySet().removeIf(e -> e.getValue().model().equals(c.model())
                            && (c.version() == null || c.version().equals(e.getValue().version())));
                    loader.execute(() -> unload(c));
                }
            }
        }
    }

    /** Carries out a LOAD; {@code counted}: a command from a record, not one restored from state. */
    private void load(SubtaskCommand c, boolean counted) {
        try {
            ModelRepository.ResolvedModel model = repository.resolve(c.model(), c.version());
            cache.pin(model);
            if (counted) {
                applied.inc();
            }
            LOG.info("Subtask {} loaded {} on {} (LOAD: {})", subtask, model.id(), cache.device().id(), c.reason());
        } catch (ProtocolException | ModelCache.ModelLoadException | RuntimeException e) {
            failed.inc();
            LOG.warn("Subtask {} could not carry out LOAD {}{}: {}", subtask, c.model(),
                    c.version() == null ? "" : ":" + c.version(), e.getMessage());
        }
    }

    private void unload(SubtaskCommand c) {
        List<ModelId> targets = new ArrayList<>();
        for (ModelId id : cache.pinnedModels()) {
            if (id.name().equals(c.model()) && (c.version() == null || c.version().equals(id.version()))) {
                targets.add(id);
            }
        }
        if (c.version() != null) {
            targets.add(new ModelId(c.model(), c.version()));
        } else {
            for (ModelId id : cache.residentModels()) {
                if (id.name().equals(c.model())) {
                    targets.add(id);
                }
            }
        }
        for (ModelId id : targets) {
            cache.unload(id);
        }
        applied.inc();
        LOG.info("Subtask {} unloaded {} from {} (UNLOAD: {})", subtask, targets, cache.device().id(), c.reason());
    }

    private static String key(SubtaskCommand c) {
        return c.model() + ":" + (c.version() == null ? "" : c.version());
    }

    long epoch() {
        return epoch;
    }

    long appliedCount() {
        return applied.getCount();
    }

    long failedCount() {
        return failed.getCount();
    }

    long ignoredCount() {
        return ignored;
    }

    @Override
    public void close() throws InterruptedException {
        loader.shutdownNow();
        loader.awaitTermination(10, TimeUnit.SECONDS);
    }
}
