package io.flinkgpu.inference.operator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.ModelRoute;
import io.flinkgpu.contract.control.PlanSigner;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.contract.control.SubtaskCommand;
import io.flinkgpu.contract.control.SubtaskCommand.Action;
import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.RequestParameters;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.runtime.clusterframework.types.ResourceID;
import org.apache.flink.runtime.executiongraph.ExecutionAttemptID;
import org.apache.flink.runtime.metrics.groups.TaskManagerMetricGroup;
import org.apache.flink.runtime.metrics.groups.TaskMetricGroup;
import org.apache.flink.runtime.metrics.util.TestingMetricRegistry;
import org.apache.flink.runtime.operators.testutils.MockEnvironmentBuilder;
import org.apache.flink.streaming.api.operators.co.CoBroadcastWithNonKeyedOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The gate with verify keys: unsigned and wrongly signed control records are refused and counted
 * in the router's own metrics, a signed plan routes requests, and only that plan reaches the
 * inference subtask (whose LOAD/UNLOAD commands it carries).
 */
class PlanRouterTest {
    static final String MODEL = "affine-fp32";
    static final String KEY = "router-test-key-0123456789";
    static final PlanSigner SIGNER = new PlanSigner("k1", KEY.getBytes(StandardCharsets.UTF_8));

    @TempDir
    Path repo;

    /** One plan router subtask (index 0 of 2) with its metrics registered where the test can read them. */
    static final class RouterHarness extends AbstractStreamOperatorTestHarness<Tuple2<Integer, InferenceRequest>> {
        final Map<String, Metric> metrics;

        private RouterHarness(CoBroadcastWithNonKeyedOperator<InferenceRequest, byte[], Tuple2<Integer, InferenceRequest>> op,
                Map<String, Metric> metrics, TaskMetricGroup group) throws Exception {
            super(op, new MockEnvironmentBuilder().setTaskName("Plan router").setMaxParallelism(128)
                    .setParallelism(2).setSubtaskIndex(0).setMetricGroup(group).build());
            this.metrics = metrics;
        }

        static RouterHarness of(PlanRouter router) throws Exception {
            Map<String, Metric> metrics = new ConcurrentHashMap<>();
            TestingMetricRegistry registry = TestingMetricRegistry.builder().setDelimiter('.')
                    .setRegisterConsumer((metric, name, group) -> metrics.put(group.getMetricIdentifier(name), metric))
                    .build();
            TaskMetricGroup task = TaskManagerMetricGroup.createTaskManagerMetricGroup(registry, "host",
                            ResourceID.generate())
                    .addJob(new JobID(), "job").addTask(ExecutionAttemptID.randomId(), "Plan router");
            return new RouterHarness(new CoBroadcastWithNonKeyedOperator<>(router, List.of(PlanRouter.PLAN_STATE)),
                    metrics, task);
        }

        @SuppressWarnings("unchecked")
        CoBroadcastWithNonKeyedOperator<InferenceRequest, byte[], Tuple2<Integer, InferenceRequest>> op() {
            return (CoBroadcastWithNonKeyedOperator<InferenceRequest, byte[], Tuple2<Integer, InferenceRequest>>)
                    getOperator();
        }

        void control(byte[] record) throws Exception {
            op().processElement2(new StreamRecord<>(record));
        }

        int route(String id) throws Exception {
            int before = extractOutputValues().size();
            op().processElement1(new StreamRecord<>(request(id)));
            List<Tuple2<Integer, InferenceRequest>> out = extractOutputValues();
            assertThat(out).hasSize(before + 1);
            return PlanRouter.subtask(out.get(out.size() - 1), 2);
        }

        /** A control metric of this subtask, as a number. */
        long metric(String name) {
            String suffix = "." + MetricNames.GROUP + "." + MetricNames.CONTROL + "." + name;
            Metric m = metrics.entrySet().stream().filter(e -> e.getKey().endsWith(suffix)).map(Map.Entry::getValue)
                    .findFirst().orElseThrow(() -> new AssertionError("no metric " + suffix + " in " + metrics.keySet()));
            return m instanceof Counter c ? c.getCount() : ((Number) ((Gauge<?>) m).getValue()).longValue();
        }

        List<byte[]> appliedPlans() {
            return getSideOutput(PlanRouter.APPLIED_PLANS) == null ? List.of()
                    : getSideOutput(PlanRouter.APPLIED_PLANS).stream().map(StreamRecord::getValue).toList();
        }
    }

    static InferenceRequest request(String id) {
        return new InferenceRequest(id, MODEL, null, List.of(Tensor.ofFloats("x", new long[] {1, 4}, 1, 2, 3, 4)),
                RequestParameters.DEFAULTS);
    }

    /** A plan routing the model to {@code target} only, with {@code commands}. */
    static ControlMessage plan(long epoch, int target, SubtaskCommand... commands) {
        return ControlMessage.of(epoch, epoch, 2, List.of(new ModelRoute(MODEL, List.of(new RouteTarget(target, 1)),
                "test")), List.of(commands), "test plan " + epoch);
    }

    static SubtaskCommand cmd(Action action) {
        return new SubtaskCommand(0, action, MODEL, null, "test");
    }

    /** The last routed pair's target as the router emitted it. */
    static Tuple2<Integer, InferenceRequest> last(RouterHarness h) {
        List<Tuple2<Integer, InferenceRequest>> out = h.extractOutputValues();
        return out.get(out.size() - 1);
    }

    @Test
    void routingFollowsTheRunningParallelismWhicheverWayItChanged() throws Exception {
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2))) {
            h.open();
            // no plan: hash over the subtasks that run, whatever the job was built with
            h.route("hash");
            Tuple2<Integer, InferenceRequest> hashed = last(h);
            assertThat(hashed.f0).isEqualTo(PlanRouter.HASH_ROUTE);
            for (int n = 1; n <= 5; n++) {
                assertThat(PlanRouter.subtask(hashed, n)).as("%d subtasks", n).isEqualTo(ModelPartitioner.hash(MODEL, n));
            }
            // a plan for 3 subtasks (the coordinator saw a rescale to 3) routes to the new subtask 2,
            // which a router built for 2 would have dropped
            h.control(ControlMessageCodec.encode(ControlMessage.of(1, 1, 3,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(2, 1)), "scaled out")), List.of(), "p=3")));
            h.route("planned");
            Tuple2<Integer, InferenceRequest> planned = last(h);
            assertThat(planned.f0).isEqualTo(2);
            assertThat(PlanRouter.subtask(planned, 3)).isEqualTo(2);
            // scaled in again before the next plan: subtask 2 is gone, the model's hash takes over
            assertThat(PlanRouter.subtask(planned, 2)).isEqualTo(ModelPartitioner.hash(MODEL, 2));
            // a plan that states no parallelism is read against the built one: target 2 of 2 is unusable
            h.control(ControlMessageCodec.encode(ControlMessage.of(2, 2, 0,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(2, 1)), "unstated")), List.of(), "p=0")));
            h.route("unstated");
            assertThat(last(h).f0).isEqualTo(PlanRouter.HASH_ROUTE);
        }
    }

    @Test
    void withSlotWeightsATargetStaysOnItsDeviceWhateverTheRunningParallelism() throws Exception {
        // weights 1:3: at 4 subtasks [1, 0, 1, 1] (device of each), at 3 [1, 0, 1], at 2 [1, 0]
        List<Double> weights = List.of(1.0, 3.0);
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2, ControlPlaneSettings.trusted(), weights))) {
            h.open();
            h.route("hash");
            Tuple2<Integer, InferenceRequest> hashed = last(h);
            assertThat(hashed.f0).isEqualTo(PlanRouter.HASH_ROUTE);
            assertThat(PlanRouter.subtask(hashed, 3, weights)).isEqualTo(ModelPartitioner.hash(MODEL, 3));
            // a plan for 4 subtasks routes the model to subtask 3: device 1, its third subtask there
            h.control(ControlMessageCodec.encode(ControlMessage.of(1, 1, 4,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(3, 1)), "device 1")), List.of(), "p=4")));
            h.route("planned");
            Tuple2<Integer, InferenceRequest> planned = last(h);
            assertThat(PlanRouter.targetOf(planned.f0)).isEqualTo(3);
            assertThat(PlanRouter.planParallelismOf(planned.f0)).isEqualTo(4);
            assertThat(PlanRouter.subtask(planned, 4, weights)).as("as planned").isEqualTo(3);
            // scaled in to 2 before the next plan: device 1 has subtask 0 only (a job without weights would hash)
            assertThat(PlanRouter.subtask(planned, 2, weights)).isEqualTo(0);
            // at 3, device 1 runs subtasks 0 and 2: the target's rank (2) modulo their number picks 0
            assertThat(PlanRouter.subtask(planned, 3, weights)).isEqualTo(0);
            assertThat(io.flinkgpu.contract.placement.SlotLayout.of(weights).deviceOf(0, 3)).isEqualTo(1);
        }
        // without weights the router emits the bare target, as it always did
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2))) {
            h.open();
            h.control(ControlMessageCodec.encode(ControlMessage.of(1, 1, 4,
                    List.of(new ModelRoute(MODEL, List.of(new RouteTarget(3, 1)), "device 1")), List.of(), "p=4")));
            h.route("bare");
            assertThat(last(h).f0).isEqualTo(3);
            assertThat(PlanRouter.subtask(last(h), 2)).isEqualTo(ModelPartitioner.hash(MODEL, 2));
        }
        assertThatThrownBy(() -> new PlanRouter.TargetPartitioner(List.of(1.0, 0.0)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aVersionSplitPinsUnpinnedRequestsByIdInProportionAndLeavesPinnedOnesAlone() throws Exception {
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2))) {
            h.open();
            ControlMessage split = plan(1, 0).withVersionSplits(List.of(new io.flinkgpu.contract.control.VersionSplit(
                    MODEL, List.of(new io.flinkgpu.contract.control.VersionSplit.VersionWeight("1", 0.75),
                            new io.flinkgpu.contract.control.VersionSplit.VersionWeight("2", 0.25)),
                    "rollout 1 -> 2, 25%")));
            h.control(ControlMessageCodec.encode(split));
            int n = 4000;
            Map<String, Integer> counts = new java.util.HashMap<>();
            for (int i = 0; i < n; i++) {
                h.route("req-" + i);
                counts.merge(last(h).f1.modelVersion(), 1, Integer::sum);
            }
            assertThat(counts.keySet()).containsExactlyInAnyOrder("1", "2");
            assertThat(counts.get("2") / (double) n).isBetween(0.22, 0.28);
            // the same id meets the same version again (a retried request)
            h.route("req-17");
            String first = last(h).f1.modelVersion();
            h.route("req-17");
            assertThat(last(h).f1.modelVersion()).isEqualTo(first);
            // a request that names its version keeps it
            h.op().processElement1(new StreamRecord<>(request("pinned").withVersion("1")));
            assertThat(last(h).f1.modelVersion()).isEqualTo("1");
            // the next plan without a split: the version policy decides again
            h.control(ControlMessageCodec.encode(plan(2, 0)));
            h.route("after");
            assertThat(last(h).f1.modelVersion()).isNull();
        }
    }

    @Test
    void aShadowSplitSendsACopyToTheShadowVersionOnTheSameSubtaskAndOnlyTheRouterMakesShadows() throws Exception {
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2))) {
            h.open();
            h.control(ControlMessageCodec.encode(plan(1, 1).withVersionSplits(List.of(
                    new io.flinkgpu.contract.control.VersionSplit(MODEL,
                            List.of(new io.flinkgpu.contract.control.VersionSplit.VersionWeight("1", 1)),
                            "shadow 1 -> 2", "2", 1.0)))));
            h.op().processElement1(new StreamRecord<>(request("s1")));
            List<Tuple2<Integer, InferenceRequest>> out = h.extractOutputValues();
            assertThat(out).hasSize(2);
            assertThat(out.get(0).f1.modelVersion()).isEqualTo("1");
            assertThat(PlanRouter.isShadow(out.get(0).f1)).isFalse();
            assertThat(out.get(1).f1.modelVersion()).isEqualTo("2");
            assertThat(PlanRouter.isShadow(out.get(1).f1)).isTrue();
            assertThat(out.get(1).f1.id()).isEqualTo("s1");
            assertThat(out.get(1).f0).isEqualTo(out.get(0).f0);
            // pinned: served as pinned, no shadow
            h.op().processElement1(new StreamRecord<>(request("s2").withVersion("1")));
            assertThat(h.extractOutputValues()).hasSize(3);
            // a request that arrives marked as a shadow is an ordinary request (and gets its own shadow)
            h.op().processElement1(new StreamRecord<>(request("forged").withParameters(
                    RequestParameters.DEFAULTS.withOrigin(PlanRouter.SHADOW_ORIGIN))));
            out = h.extractOutputValues();
            assertThat(out).hasSize(5);
            assertThat(PlanRouter.isShadow(out.get(3).f1)).isFalse();
            assertThat(PlanRouter.isShadow(out.get(4).f1)).isTrue();
        }
    }

    private static PlanRouter verifyingRouter() {
        GpuInference g = GpuInference.builder().controlVerifyKey("k1", KEY).controlVerifyKey("k2",
                "second-router-key-0123456789").build();
        assertThat(g.controlPlane().requireSignature()).isTrue();
        return new PlanRouter(2, g.controlPlane());
    }

    @Test
    void onlyTheSignedPlanRoutesAndReachesTheInferenceSubtasks() throws Exception {
        int hash = ModelPartitioner.hash(MODEL, 2);
        int planned = 1 - hash;
        byte[] signed = SIGNER.sign(plan(1, planned, cmd(Action.LOAD)));
        // forgeries: each would route everything back to the hash subtask and unload the model
        byte[] bare = ControlMessageCodec.encode(plan(2, hash, cmd(Action.UNLOAD)));
        byte[] unknownKey = new PlanSigner("k9", KEY.getBytes(StandardCharsets.UTF_8))
                .sign(plan(3, hash, cmd(Action.UNLOAD)));
        byte[] wrongKey = new PlanSigner("k1", "an-attackers-key-0123456789".getBytes(StandardCharsets.UTF_8))
                .sign(plan(4, hash, cmd(Action.UNLOAD)));
        String tampered = new String(SIGNER.sign(plan(5, planned)), StandardCharsets.UTF_8).replaceFirst(
                "\"plan\":\"[^\"]*\"", "\"plan\":\"" + Base64.getEncoder().encodeToString(
                        ControlMessageCodec.encode(plan(5, hash, cmd(Action.UNLOAD)))) + "\"");

        try (RouterHarness h = RouterHarness.of(verifyingRouter())) {
            h.open();
            assertThat(h.route("before")).as("no plan yet: hash routing").isEqualTo(hash);
            h.control(bare);
            assertThat(h.route("after bare")).isEqualTo(hash);
            h.control(signed);
            h.control(unknownKey);
            h.control(wrongKey);
            h.control(tampered.getBytes(StandardCharsets.UTF_8));
            h.control("{not json".getBytes(StandardCharsets.UTF_8));
            h.control(signed); // a replay
            for (int i = 0; i < 5; i++) {
                assertThat(h.route("r" + i)).as("routed by the signed plan").isEqualTo(planned);
            }

            assertThat(h.metric(MetricNames.PLANS_APPLIED)).isEqualTo(1);
            assertThat(h.metric(MetricNames.PLANS_REFUSED_UNSIGNED)).isEqualTo(1);
            assertThat(h.metric(MetricNames.PLANS_REFUSED_BAD_SIGNATURE)).isEqualTo(3);
            assertThat(h.metric(MetricNames.RECORDS_INVALID)).isEqualTo(1);
            assertThat(h.metric(MetricNames.PLANS_IGNORED_STALE)).isEqualTo(1);
            assertThat(h.metric(MetricNames.PLAN_EPOCH)).isEqualTo(1);

            // what the inference subtasks receive: the signed plan, once, as its canonical JSON
            List<byte[]> applied = h.appliedPlans();
            assertThat(applied).hasSize(1);
            assertThat(ControlMessageCodec.decode(applied.get(0))).isEqualTo(plan(1, planned, cmd(Action.LOAD)));
            assertThat(ControlMessageCodec.decode(h.op().getOperatorStateBackend()
                    .getBroadcastState(PlanRouter.PLAN_STATE).get(PlanRouter.PLAN_KEY)).epoch()).isEqualTo(1);

            // and an inference subtask fed with it carries out the signed LOAD, and nothing unloads it
            try (var inference = new ModelCommandsOperatorTest.Harness(inference())) {
                inference.open();
                for (byte[] p : applied) {
                    inference.processElement2(new StreamRecord<>(p));
                }
                ModelId id = new ModelId(MODEL, "1");
                long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
                while (!inference.op().cache().isLoaded(id)) {
                    assertThat(System.nanoTime()).as("waiting for the signed LOAD").isLessThan(deadline);
                    Thread.sleep(20);
                }
                assertThat(inference.op().commands().epoch()).isEqualTo(1);
                assertThat(inference.op().cache().pinnedModels()).containsExactly(id);
            }
        }
    }

    private GpuInference inference() throws Exception {
        Path dir = Files.createDirectories(repo.resolve(MODEL).resolve("1"));
        Files.copy(ModelCommandsOperatorTest.TEST_MODELS.resolve(MODEL).resolve("1/model.onnx"),
                dir.resolve("model.onnx"));
        Files.copy(ModelCommandsOperatorTest.TEST_MODELS.resolve(MODEL).resolve("config.json"),
                repo.resolve(MODEL).resolve("config.json"));
        return GpuInference.builder().modelRepository(repo.toString()).maxBatchSize(4)
                .simulatedDevices(1, MemorySize.parse("64m"), "1+0.1*b").build();
    }

    @Test
    void withoutKeysBareAndSignedPlansAreAppliedAsBefore() throws Exception {
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2, GpuInference.builder().build().controlPlane()))) {
            h.open();
            h.control(ControlMessageCodec.encode(plan(1, 0)));
            assertThat(h.route("a")).isEqualTo(0);
            h.control(SIGNER.sign(plan(2, 1)));
            assertThat(h.route("b")).isEqualTo(1);
            assertThat(h.metric(MetricNames.PLANS_APPLIED)).isEqualTo(2);
            assertThat(h.metric(MetricNames.PLANS_REFUSED_UNSIGNED)).isZero();
            assertThat(h.metric(MetricNames.PLANS_REFUSED_BAD_SIGNATURE)).isZero();
            assertThat(h.appliedPlans()).hasSize(2);
        }
    }

    @Test
    void verifyKeysComeFromTheFlinkConfigurationAsSecretReferences(@TempDir Path secrets) throws Exception {
        Path keyFile = Files.writeString(secrets.resolve("k2"), "file-held-key-0123456789\n");
        Configuration config = new Configuration();
        config.setString(GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX + "k1", KEY);
        config.setString(GpuInferenceOptions.CONTROL_VERIFY_KEYS_PREFIX + "k2", "file:" + keyFile);
        ControlPlaneSettings settings = GpuInference.builder().configuration(config).build().controlPlane();
        assertThat(settings.keyIds()).containsExactly("k1", "k2");
        assertThat(settings.requireSignature()).isTrue();
        assertThat(settings.toString()).contains("k1", "k2").doesNotContain(KEY).doesNotContain(keyFile.toString());
        // the file's key verifies a plan signed with it
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2, settings))) {
            h.open();
            h.control(new PlanSigner("k2", "file-held-key-0123456789".getBytes(StandardCharsets.UTF_8))
                    .sign(plan(1, 1)));
            assertThat(h.metric(MetricNames.PLANS_APPLIED)).isEqualTo(1);
        }

        config.set(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE, false);
        assertThat(GpuInference.builder().configuration(config).build().controlPlane().requireSignature()).isFalse();
    }

    @Test
    void unusableControlSettingsFailTheBuildWithoutShowingTheKey() {
        Configuration requireWithoutKeys = new Configuration();
        requireWithoutKeys.set(GpuInferenceOptions.CONTROL_REQUIRE_SIGNATURE, true);
        assertThatThrownBy(() -> GpuInference.builder().configuration(requireWithoutKeys).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("inference.control.require-signature");
        assertThatThrownBy(() -> GpuInference.builder().controlVerifyKey("k1", "too-short").build())
                .hasMessageContaining("k1").hasMessageContaining("16 bytes").hasMessageNotContaining("too-short");
        assertThatThrownBy(() -> GpuInference.builder()
                        .controlVerifyKey("k1", "env:FLINKGPU_TEST_VARIABLE_THAT_IS_NOT_SET").build())
                .hasMessageContaining("inference.control.verify-keys.k1")
                .hasMessageContaining("is not set");
        assertThatThrownBy(() -> GpuInference.builder().controlVerifyKey("bad id", KEY).build())
                .hasMessageContaining("key id").hasMessageNotContaining(KEY);
    }

    @Test
    void queueAwareRoutingSendsToTheReplicaWithFewerOutstandingAndCountsWhatItSent() throws Exception {
        ControlMessage both = ControlMessage.of(1, 1, 2, List.of(new ModelRoute(MODEL,
                List.of(new RouteTarget(0, 1), new RouteTarget(1, 1)), "two replicas")), List.of(), "p=2");
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2, ControlPlaneSettings.trusted(), List.of(), "stage"))) {
            h.open();
            io.flinkgpu.inference.control.QueueBoard board = io.flinkgpu.inference.control.QueueBoard.acquire(
                    PlanRouter.boardKey(h.getEnvironment().getJobID().toString(), "stage"), 128);
            try {
                h.control(ControlMessageCodec.encode(both));
                // no inference subtask on the board yet: the round robin alternates
                assertThat(h.route("a")).isNotEqualTo(h.route("b"));
                io.flinkgpu.inference.control.QueueBoard.Slot zero = board.join(0, 2);
                board.join(1, 2);
                zero.publish(10); // subtask 0 holds ten requests
                for (int i = 0; i < 10; i++) {
                    assertThat(h.route("r" + i)).as("request %d", i).isEqualTo(1);
                }
                assertThat(board.outstanding(1)).as("the ten on their way to subtask 1").isEqualTo(10);
                assertThat(board.outstanding(0)).isEqualTo(10);
                // a plan made for another parallelism than the subtasks run at: the weights alone
                h.control(ControlMessageCodec.encode(ControlMessage.of(2, 2, 3, List.of(new ModelRoute(MODEL,
                        List.of(new RouteTarget(0, 1), new RouteTarget(1, 1)), "p=3")), List.of(), "p=3")));
                assertThat(h.route("c")).isNotEqualTo(h.route("d"));
            } finally {
                board.release();
            }
        }
        // without a board name the router reads and counts nothing
        try (RouterHarness h = RouterHarness.of(new PlanRouter(2))) {
            h.open();
            io.flinkgpu.inference.control.QueueBoard board = io.flinkgpu.inference.control.QueueBoard.acquire(
                    PlanRouter.boardKey(h.getEnvironment().getJobID().toString(), "stage"), 128);
            try {
                board.join(0, 2).publish(10);
                board.join(1, 2);
                h.control(ControlMessageCodec.encode(both));
                assertThat(h.route("e")).isNotEqualTo(h.route("f"));
                assertThat(board.outstanding(1)).isZero();
            } finally {
                board.release();
            }
        }
    }
}
