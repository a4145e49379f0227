package io.flinkgpu.inference.operator;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.contract.control.PlanVerifier;
import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.contract.placement.SlotLayout;
import io.flinkgpu.inference.control.QueueBoard;
import io.flinkgpu.inference.control.RoutingTable;
import io.flinkgpu.inference.protocol.InferenceRequest;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The control plane's one gate, and the router: every control record (the coordinator's plans,
 * broadcast to each parallel instance) passes {@link ControlPlanState} here and nowhere else;
 * invalid ones and older epochs are logged, counted and ignored, never failing the job. The plan
 * in force is broadcast state (so it is in every checkpoint and savepoint). Requests of a model the
 * plan routes go to its inference subtasks by smooth weighted round robin on the plan's weights
 * ({@link RoutingTable}); anything else (no plan yet, a model the plan does not cover) keeps the
 * default hash routing of {@link ModelPartitioner}. With queue-aware routing (on by default,
 * {@code inference.routing.queue-aware}) a routed model's request goes instead to the target with
 * the fewest outstanding requests, read from the stage's {@link QueueBoard}
 * in this JVM; a model with a target the board does not show keeps the round robin. Emits (target subtask or {@link #HASH_ROUTE},
 * request) for {@link TargetPartitioner}.
 *
 * <p>Routing follows the running parallelism however it changed: the plan's targets are read
 * against the parallelism the plan states (the coordinator's view of the running job; the
 * parallelism the job was built with for a plan that states none), and the partitioner, which
 * Flink gives the actual number of inference subtasks, hashes by model both where no plan routes
 * and where a target does not exist (a plan made before a scale-in). After a rescale by the
 * adaptive scheduler, hash routing spreads over the new subtasks at once, and plan routing as
 * soon as a plan for the new parallelism arrives.
 *
 * <p>With slot weights ({@code inference.device.slot-weights}) a plan's target "subtask s" stands
 * for a device: the one {@link SlotLayout} gives s at the plan's parallelism. The router then hands
 * the partitioner the plan's parallelism along with the target, and where the running parallelism
 * differs, the partitioner sends the request to the subtask of that same device that has s's rank
 * among the device's subtasks (modulo their number), so a model placed on device d is served on
 * device d before and after a rescale. Without weights (or with equal ones) that is the target
 * itself, as it always was.
 *
 * <p>With verify keys ({@link ControlPlaneSettings}), the gate applies only plans signed under
 * one of them: unsigned records (where signatures are required) and records signed under an
 * unknown key id or with a signature that does not match are logged, counted
 * ({@code plansRefusedUnsigned}, {@code plansRefusedBadSignature}) and ignored, so they never
 * reach the routing table, the broadcast state or the inference subtasks.
 *
 * <p>Each plan this gate applies is also emitted once, by instance 0, on {@link #APPLIED_PLANS}
 * (its canonical JSON): the inference subtasks take their LOAD/UNLOAD commands from there, so a
 * control record is decoded and judged once. {@link GpuInference#apply} wires both.
 */
public final class PlanRouter extends BroadcastProcessFunction<InferenceRequest, byte[], Tuple2<Integer, InferenceRequest>> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(PlanRouter.class);

    /** The current plan's JSON under {@link #PLAN_KEY}. */
    public static final MapStateDescriptor<String, byte[]> PLAN_STATE =
            new MapStateDescriptor<>("coordinator-plan", Types.STRING, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    static final String PLAN_KEY = "plan";
    /** The target of a request the plan does not route: the partitioner hashes its model. */
    public static final int HASH_ROUTE = RoutingTable.NO_ROUTE;

    /** Plans applied by the gate, once each (from instance 0), as canonical JSON. */
    public static final OutputTag<byte[]> APPLIED_PLANS =
            new OutputTag<>("applied-plans", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);

    private final int inferenceParallelism;
    private final ControlPlaneSettings controlPlane;
    /** The stage's queue board name (null: no queue-aware routing). */
    private final String queueBoard;
    /** This JVM's board of the stage (null: none). */
    private transient QueueBoard board;
    /** Where a routed request lands, as the job's partitioning sends it: what {@link #board} counts. */
    private transient TargetPartitioner partitioner;
    private transient Target key;
    /** The slot weights (empty: none, targets go as they are). */
    private final java.util.List<Double> slotWeights;
    /** The parallelism the current table's targets are read against. */
    private transient int tableParallelism;
    /** The verifier of {@link #controlPlane}, keys resolved at open (null: trusted mode). */
    private transient PlanVerifier verifier;
    private transient RoutingTable table;
    /** The state value {@link #table} was built from: a new value (by reference) means a new plan. */
    private transient byte[] tableSource;
    /** The plan {@link #tableSource} decodes to (null: none), so the gate need not decode it again. */
    private transient ControlMessage tablePlan;
    private transient Counter applied;
    private transient Counter stale;
    private transient Counter invalid;
    private transient Counter refusedUnsigned;
    private transient Counter refusedBadSignature;
    private transient volatile long epoch;

    /** A router in trusted mode (no signatures checked). */
    public PlanRouter(int inferenceParallelism) {
        this(inferenceParallelism, ControlPlaneSettings.trusted());
    }

    public PlanRouter(int inferenceParallelism, ControlPlaneSettings controlPlane) {
        this(inferenceParallelism, controlPlane, java.util.List.of());
    }

    /**
     * A router whose targets stand for the devices {@link SlotLayout} gives them under
     * {@code slotWeights} (empty: no weights); use the same weights in its {@link TargetPartitioner}.
     */
    public PlanRouter(int inferenceParallelism, ControlPlaneSettings controlPlane, java.util.List<Double> slotWeights) {
        this(inferenceParallelism, controlPlane, slotWeights, null);
    }

    /**
     * As {@link #PlanRouter(int, ControlPlaneSettings, java.util.List)}, routing queue-aware where
     * {@code queueBoard} names the stage's {@link QueueBoard} (the inference subtasks publish on the
     * board of the same name; null: the plan's weighted round robin only).
     */
    public PlanRouter(int inferenceParallelism, ControlPlaneSettings controlPlane, java.util.List<Double> slotWeights,
            String queueBoard) {
        this.queueBoard = queueBoard;
        this.inferenceParallelism = inferenceParallelism;
        this.controlPlane = java.util.Objects.requireNonNull(controlPlane, "control plane settings");
        this.slotWeights = java.util.List.copyOf(slotWeights);
        if (!this.slotWeights.isEmpty()) {
            SlotLayout.of(this.slotWeights); // validates
        }
    }

    @Override
    public void open(OpenContext openContext) {
        MetricGroup control = getRuntimeContext().getMetricGroup().addGroup(MetricNames.GROUP)
                .addGroup(MetricNames.CONTROL);
        applied = control.counter(MetricNames.PLANS_APPLIED);
        stale = control.counter(MetricNames.PLANS_IGNORED_STALE);
        invalid = control.counter(MetricNames.RECORDS_INVALID);
        refusedUnsigned = control.counter(MetricNames.PLANS_REFUSED_UNSIGNED);
        refusedBadSignature = control.counter(MetricNames.PLANS_REFUSED_BAD_SIGNATURE);
        verifier = controlPlane.verifier();
        if (verifier != null) {
            LOG.info("Control records are verified: {}", verifier);
        }
        control.gauge(MetricNames.PLAN_EPOCH, () -> epoch);
        table = routingTable(null);
        tableSource = null;
        tablePlan = null;
        if (queueBoard != null) {
            board = QueueBoard.acquire(boardKey(getRuntimeContext().getJobInfo().getJobId().toString(), queueBoard),
                    getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
            partitioner = new TargetPartitioner(slotWeights);
            key = new Target();
        }
    }

    @Override
    public void close() throws Exception {
        if (board != null) {
            board.release();
            board = null;
        }
        super.close();
    }

    /** The key of a stage's {@link QueueBoard}: one per job and stage, so two jobs in one JVM never share one. */
    static String boardKey(String jobId, String stage) {
        return jobId + "/" + stage;
    }

    @Override
    public void processElement(InferenceRequest request, ReadOnlyContext ctx,
            Collector<Tuple2<Integer, InferenceRequest>> out) throws Exception {
        int target = RoutingTable.NO_ROUTE;
        InferenceRequest shadow = null;
        try {
            byte[] source = ctx.getBroadcastState(PLAN_STATE).get(PLAN_KEY);
            if (source != tableSource) { // decode once per plan, not per request
                ControlMessage plan = decode(source);
                tablePlan = plan;
                table = routingTable(plan);
                tableSource = source;
                epoch = plan == null ? 0 : plan.epoch();
            }
            if (isShadow(request)) {
                request = request.withParameters(request.parameters().withOrigin(null)); // only the router makes shadows
            }
            // Queue-aware where the inference subtasks in this JVM run at the parallelism the plan was
            // made for (its targets are then their subtasks); else the plan's weights alone.
            int running = board == null ? 0 : board.parallelism();
            target = running > 0 && running == tableParallelism
                    ? table.select(request.modelName(), board::outstanding)
                    : table.select(request.modelName());
            InferenceRequest served = splitVersion(request);
            shadow = shadowOf(request, served);
            request = served;
        } catch (RuntimeException e) {
            // A routing fault must not fail the task: the request is routed by hash instead.
            LOG.warn("Routing request {} by the plan failed; routing it by model hash", request.id(), e);
        }
        int to = target == RoutingTable.NO_ROUTE ? HASH_ROUTE
                : slotWeights.isEmpty() ? target : withPlanParallelism(target, tableParallelism);
        emit(Tuple2.of(to, request), out);
        if (shadow != null) {
            // To the same subtask, after the served request: the subtask compares the two answers.
            emit(Tuple2.of(to, shadow), out);
        }
    }

    /** Emits a routed request and counts it on its way to the subtask the partitioning gives it. */
    private void emit(Tuple2<Integer, InferenceRequest> routed, Collector<Tuple2<Integer, InferenceRequest>> out) {
        out.collect(routed);
        int running = board == null ? 0 : board.parallelism();
        if (running > 0) {
            board.sent(partitioner.partition(key.getKey(routed), running));
        }
    }

    /**
     * The origin that marks a shadow copy (a request the router copied to a rollout's shadow
     * version, answered and compared, never returned). Requests arriving at the router never carry it.
     */
    public static final String SHADOW_ORIGIN = "\u0000shadow";

    /** Whether {@code request} is a shadow copy made by the router. */
    public static boolean isShadow(InferenceRequest request) {
        return SHADOW_ORIGIN.equals(request.parameters().origin());
    }

    /**
     * A request that pins no version, of a model whose rollout the plan splits between versions,
     * pinned to the version its id falls on; any other request as it is.
     */
    private InferenceRequest splitVersion(InferenceRequest request) {
        if (tablePlan == null || tablePlan.versionSplits().isEmpty()
                || (request.modelVersion() != null && !request.modelVersion().isEmpty())) {
            return request;
        }
        return tablePlan.versionSplit(request.modelName())
                .map(split -> request.withVersion(split.choose(request.id())))
                .orElse(request);
    }

    /**
     * The shadow copy of {@code request} (as it arrived; {@code served} is it after the split) when the
     * plan's split of its model has a shadow and this request's id is among the copied share; else null.
     */
    private InferenceRequest shadowOf(InferenceRequest request, InferenceRequest served) {
        if (served == request || tablePlan == null) {
            return null; // pinned by its sender, or no split: no shadow
        }
        return tablePlan.versionSplit(request.modelName())
                .filter(split -> split.shadows(request.id()))
                .map(split -> request.withVersion(split.shadow())
                        .withParameters(request.parameters().withOrigin(SHADOW_ORIGIN)))
                .orElse(null);
    }

    /** The routing table of {@code plan}, read against the parallelism it was made for. */
    private RoutingTable routingTable(ControlMessage plan) {
        tableParallelism = plan != null && plan.parallelism() > 0 ? plan.parallelism() : inferenceParallelism;
        return new RoutingTable(plan, tableParallelism);
    }

    /** Parallelisms up to this travel with a target (15 bits); a larger one is left out (no translation). */
    static final int MAX_ENCODED_PARALLELISM = (1 << 15) - 1;

    /**
     * A routed target as the router emits it with slot weights: the target in the low 16 bits and
     * the parallelism its plan was made for in the 15 above (0: unknown, the target is used as it
     * is). Flink's parallelism is at most 32768, so targets fit.
     */
    static int withPlanParallelism(int target, int planParallelism) {
        int p = planParallelism > 0 && planParallelism <= MAX_ENCODED_PARALLELISM ? planParallelism : 0;
        return (p << 16) | (target & 0xffff);
    }

    /** The target subtask of a routed pair's {@code f0} ({@link #HASH_ROUTE} stays itself). */
    public static int targetOf(int routed) {
        return routed < 0 ? routed : routed & 0xffff;
    }

    /** The parallelism the plan of a routed pair's {@code f0} was made for (0: not stated). */
    public static int planParallelismOf(int routed) {
        return routed < 0 ? 0 : routed >>> 16;
    }

    @Override
    public void processBroadcastElement(byte[] record, Context ctx, Collector<Tuple2<Integer, InferenceRequest>> out)
            throws Exception {
        // Every parallel instance sees the same records in the same order and starts from the same
        // broadcast state, so each reaches the same decision (Flink's rule for broadcast state).
        byte[] source = ctx.getBroadcastState(PLAN_STATE).get(PLAN_KEY);
        ControlPlanState gate = new ControlPlanState(source == tableSource ? tablePlan : decode(source), verifier);
        switch (gate.offer(record)) {
            case APPLIED -> {
                byte[] encoded = ControlMessageCodec.encode(gate.current());
                ctx.getBroadcastState(PLAN_STATE).put(PLAN_KEY, encoded);
                // The table follows the new plan at once: requests need not decode the state again.
                table = routingTable(gate.current());
                tableSource = encoded;
                tablePlan = gate.current();
                applied.inc();
                epoch = gate.currentEpoch();
                if (getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
                    ctx.output(APPLIED_PLANS, encoded);
                }
            }
            case STALE -> stale.inc();
            case INVALID -> invalid.inc();
            case UNSIGNED -> refusedUnsigned.inc();
            case BAD_SIGNATURE -> refusedBadSignature.inc();
        }
    }

    private static ControlMessage decode(byte[] bytes) {
        if (bytes == null) {
            return null;
        }
        try {
            return ControlMessageCodec.decode(bytes);
        } catch (InvalidControlMessageException e) {
            return null; // written by us, so only a corrupted checkpoint gets here: route by hash
        }
    }

    /**
     * The partitioning key of a routed request: its target plus one in the high 32 bits (0 for
     * {@link #HASH_ROUTE}) and its model's hash code in the low 32, so that the partitioner can
     * hash by model where there is no usable target.
     */
    public static final class Target implements KeySelector<Tuple2<Integer, InferenceRequest>, Long> {
        private static final long serialVersionUID = 1L;

        @Override
        public Long getKey(Tuple2<Integer, InferenceRequest> routed) {
            long target = routed.f0 < 0 ? 0 : routed.f0 + 1L;
            return (target << 32) | (routed.f1.modelName().hashCode() & 0xffffffffL);
        }
    }

    /** The request of a routed pair, once it is on its subtask. */
    public static final class Unwrap implements MapFunction<Tuple2<Integer, InferenceRequest>, InferenceRequest> {
        private static final long serialVersionUID = 1L;

        @Override
        public InferenceRequest map(Tuple2<Integer, InferenceRequest> routed) {
            return routed.f1;
        }
    }

    /**
     * Sends a routed request to its target subtask if the running job has it, else (no plan
     * route, or a target beyond the actual parallelism) to its model's hash over the subtasks
     * that run now ({@link ModelPartitioner#hash}, the same subtask as without a control plane).
     * With slot weights and a target from a plan made for another parallelism than the running one,
     * the target is first mapped to the same device's subtask of the same rank under the running
     * parallelism ({@link SlotLayout}), so that it stays on the device the plan meant.
     */
    public static final class TargetPartitioner implements Partitioner<Long> {
        private static final long serialVersionUID = 1L;

        /** The slot weights (empty: none). */
        private final java.util.List<Double> slotWeights;
        /** The layout of the weights, made on first use. */
        private transient SlotLayout layout;
        /** Per parallelism, where its subtasks run, made on first use of that parallelism. */
        private transient java.util.Map<Integer, Layout> layouts;

        /** A partitioner without slot weights: targets go as they are. */
        public TargetPartitioner() {
            this(java.util.List.of());
        }

        /** A partitioner that keeps targets on the devices {@link SlotLayout} gives them under {@code slotWeights}. */
        public TargetPartitioner(java.util.List<Double> slotWeights) {
            this.slotWeights = java.util.List.copyOf(slotWeights);
            if (!this.slotWeights.isEmpty()) {
                SlotLayout.of(this.slotWeights); // validates
            }
        }

        @Override
        public int partition(Long key, int numPartitions) {
            long word = (key >>> 32) - 1;
            if (word >= 0) {
                int target = targetOf((int) word);
                int planParallelism = planParallelismOf((int) word);
                if (!slotWeights.isEmpty() && planParallelism > 0 && planParallelism != numPartitions
                        && target < planParallelism) {
                    int mapped = sameDevice(target, planParallelism, numPartitions);
                    if (mapped >= 0) {
                        return mapped;
                    }
                } else if (target < numPartitions) {
                    return target;
                }
            }
            return Math.floorMod((int) key.longValue(), numPartitions);
        }

        /** The subtask of {@code running} on the device of {@code target} of {@code planned}, of its rank; -1: none. */
        private int sameDevice(int target, int planned, int running) {
            if (layout == null) {
                layout = SlotLayout.of(slotWeights);
                layouts = new java.util.HashMap<>();
            }
            Layout before = layouts.computeIfAbsent(planned, p -> new Layout(layout, p));
            int device = before.device[target];
            int[] now = layouts.computeIfAbsent(running, p -> new Layout(layout, p)).subtasks[device];
            return now.length == 0 ? -1 : now[before.rank[target] % now.length];
        }

        /** One parallelism's layout: each subtask's device and rank on it, and each device's subtasks. */
        private static final class Layout {
            final int[] device;
            final int[] rank;
            final int[][] subtasks;

            Layout(SlotLayout layout, int parallelism) {
                device = layout.assignment(parallelism);
                int[] counts = layout.slotCounts(parallelism);
                rank = new int[device.length];
                subtasks = new int[counts.length][];
                int[] filled = new int[counts.length];
                for (int d = 0; d < counts.length; d++) {
                    subtasks[d] = new int[counts[d]];
                }
                for (int s = 0; s < device.length; s++) {
                    rank[s] = filled[device[s]];
                    subtasks[device[s]][filled[device[s]]++] = s;
                }
            }
        }
    }

    /** The subtask {@code routed} goes to among {@code numPartitions}: what the job's partitioning does. */
    public static int subtask(Tuple2<Integer, InferenceRequest> routed, int numPartitions) {
        return new TargetPartitioner().partition(new Target().getKey(routed), numPartitions);
    }

    /** As {@link #subtask(Tuple2, int)} for a job with slot weights {@code slotWeights}. */
    public static int subtask(Tuple2<Integer, InferenceRequest> routed, int numPartitions, java.util.List<Double> slotWeights) {
        return new TargetPartitioner(slotWeights).partition(new Target().getKey(routed), numPartitions);
    }
}
