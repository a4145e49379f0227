package io.flinkgpu.job;

import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ControlPlanState;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.inference.control.RoutingTable;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.Partitioner;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes each request to an inference subtask from the scheduler coordinator's plan: the plan
 * arrives on the control topic as a broadcast stream and is kept in broadcast state (so it is in
 * every checkpoint and savepoint); requests of a model the plan routes go to its subtasks by
 * smooth weighted round robin on the plan's weights; anything else (no plan yet, a model the plan
 * does not cover) keeps the default hash routing of {@link ModelPartitioner}. Control records
 * pass {@link ControlPlanState}: invalid ones and older epochs are logged, counted and ignored,
 * never failing the job. Emits (target subtask, request) for {@link TargetPartitioner}.
 */
public final class PlanRouter extends BroadcastProcessFunction<InferenceRequest, byte[], Tuple2<Integer, InferenceRequest>> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(PlanRouter.class);

    /** The current plan's JSON under {@link #PLAN_KEY}. */
    public static final MapStateDescriptor<String, byte[]> PLAN_STATE =
            new MapStateDescriptor<>("coordinator-plan", Types.STRING, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
    static final String PLAN_KEY = "plan";

    private final int inferenceParallelism;
    private transient RoutingTable table;
    /** The state value {@link #table} was built from: a new value (by reference) means a new plan. */
    private transient byte[] tableSource;
    private transient Counter applied;
    private transient Counter stale;
    private transient Counter invalid;
    private transient volatile long epoch;

    public PlanRouter(int inferenceParallelism) {
        this.inferenceParallelism = inferenceParallelism;
    }

    @Override
    public void open(OpenContext openContext) {
        MetricGroup control = getRuntimeContext().getMetricGroup().addGroup("control");
        applied = control.counter("plansApplied");
        stale = control.counter("plansIgnoredStale");
        invalid = control.counter("recordsInvalid");
        control.gauge("planEpoch", () -> epoch);
        table = new RoutingTable(null, inferenceParallelism);
        tableSource = null;
    }

    @Override
    public void processElement(InferenceRequest request, ReadOnlyContext ctx,
            Collector<Tuple2<Integer, InferenceRequest>> out) throws Exception {
        int target = RoutingTable.NO_ROUTE;
        try {
            byte[] source = ctx.getBroadcastState(PLAN_STATE).get(PLAN_KEY);
            if (source != tableSource) { // decode once per plan, not per request
                ControlMessage plan = decode(source);
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
        ControlPlanState gate = new ControlPlanState(current(ctx.getBroadcastState(PLAN_STATE)));
        switch (gate.offer(record)) {
            case APPLIED -> {
                ctx.getBroadcastState(PLAN_STATE).put(PLAN_KEY, ControlMessageCodec.encode(gate.current()));
                applied.inc();
                epoch = gate.currentEpoch();
            }
            case STALE -> stale.inc();
            case INVALID -> invalid.inc();
        }
    }

    private static ControlMessage current(ReadOnlyBroadcastState<String, byte[]> state) throws Exception {
        return decode(state.get(PLAN_KEY));
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
