package io.flinkgpu.inference.operator;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.contract.control.PlanVerifier;
import io.flinkgpu.contract.metrics.MetricNames;
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
 * default hash routing of {@link ModelPartitioner}. Emits (target subtask, request) for
 * {@link TargetPartitioner}.
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

    /** Plans applied by the gate, once each (from instance 0), as canonical JSON. */
    public static final OutputTag<byte[]> APPLIED_PLANS =
            new OutputTag<>("applied-plans", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);

    private final int inferenceParallelism;
    private final ControlPlaneSettings controlPlane;
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
        this.inferenceParallelism = inferenceParallelism;
        this.controlPlane = java.util.Objects.requireNonNull(controlPlane, "control plane settings");
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
        table = new RoutingTable(null, inferenceParallelism);
        tableSource = null;
        tablePlan = null;
    }

    @Override
    public void processElement(InferenceRequest request, ReadOnlyContext ctx,
            Collector<Tuple2<Integer, InferenceRequest>> out) throws Exception {
        int target = RoutingTable.NO_ROUTE;
        try {
            byte[] source = ctx.getBroadcastState(PLAN_STATE).get(PLAN_KEY);
            if (source != tableSource) { // decode once per plan, not per request
                ControlMessage plan = decode(source);
                tablePlan = plan;
                table = new RoutingTable(plan, inferenceParallelism);
                tableSource = source;
                epoch = plan == null ? 0 : plan.epoch();
            }
            target = table.select(request.modelName());
        } catch (RuntimeException e) {
            // A routing fault must not fail the task: the request is routed by hash instead.
            LOG.warn("Routing request {} by the plan failed; routing it by model hash", request.id(), e);
        }
        if (target == RoutingTable.NO_ROUTE) {
            target = ModelPartitioner.hash(request.modelName(), inferenceParallelism);
        }
        out.collect(Tuple2.of(target, request));
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
                table = new RoutingTable(gate.current(), inferenceParallelism);
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

    /** The target subtask of a routed request. */
    public static final class Target implements KeySelector<Tuple2<Integer, InferenceRequest>, Integer> {
        private static final long serialVersionUID = 1L;

        @Override
        public Integer getKey(Tuple2<Integer, InferenceRequest> routed) {
            return routed.f0;
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

    /** Sends (target, request) to subtask {@code target}. */
    public static final class TargetPartitioner implements Partitioner<Integer> {
        private static final long serialVersionUID = 1L;

        @Override
        public int partition(Integer target, int numPartitions) {
            return Math.floorMod(target, numPartitions);
        }
    }
}
