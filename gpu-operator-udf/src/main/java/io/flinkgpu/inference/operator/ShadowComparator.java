package io.flinkgpu.inference.operator;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.ControlMessageCodec;
import io.flinkgpu.contract.control.InvalidControlMessageException;
import io.flinkgpu.contract.control.VersionSplit;
import io.flinkgpu.contract.metrics.MetricNames;
import io.flinkgpu.inference.protocol.InferenceRequest;
import io.flinkgpu.inference.protocol.InferenceResponse;
import io.flinkgpu.inference.protocol.Tensor;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;

/**
 * One inference subtask's side of shadow rollouts: the plan router sends a shadow copy of a
 * request to the same subtask as the request itself, and this compares the two answers once both
 * are there, whichever comes first, and counts them under the shadow version
 * ({@link MetricNames#SHADOW_COMPARED}, {@link MetricNames#SHADOW_DISAGREED}). Shadow answers are
 * never emitted. Answers that wait for their other half are bounded ({@link #MAX_WAITING}, oldest
 * dropped first), so a shadow that never comes (a restart in between) costs nothing lasting.
 * Runs on the mailbox thread only.
 */
final class ShadowComparator {
    static final int MAX_WAITING = 10_000;
    /** Floating-point outputs agree within this absolute-plus-relative tolerance. */
    static final double TOLERANCE = 1e-4;

    private final MetricGroup group;
    private final Map<String, VersionSplit> splits = new HashMap<>();
    private final Map<String, Counter[]> counters = new HashMap<>();
    private final LinkedHashMap<String, InferenceResponse> waiting = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, InferenceResponse> eldest) {
            return size() > MAX_WAITING;
        }
    };

    ShadowComparator(MetricGroup operatorGroup) {
        this.group = operatorGroup;
    }

    /** Follows the version splits of an applied plan (records that are no plan are ignored). */
    void update(byte[] record) {
        ControlMessage plan;
        try {
            plan = ControlMessageCodec.decode(record);
        } catch (InvalidControlMessageException | RuntimeException e) {
            return;
        }
        splits.clear();
        for (VersionSplit s : plan.versionSplits()) {
            if (s.shadow() != null) {
                splits.put(s.model(), s);
            }
        }
    }

    /**
     * Takes the answer to {@code request}: a shadow's is compared (or kept for its served twin) and
     * swallowed; a served one whose id has a shadow twin is kept or compared, and emitted by the caller.
     *
     * @return whether the caller emits the answer
     */
    boolean answered(InferenceRequest request, InferenceResponse response) {
        boolean shadow = PlanRouter.isShadow(request);
        if (!shadow) {
            VersionSplit split = splits.get(request.modelName());
            if (split == null || !split.shadows(request.id())) {
                return true;
            }
        }
        String mine = (shadow ? "S:" : "P:") + request.id();
        String twin = (shadow ? "P:" : "S:") + request.id();
        InferenceResponse other = waiting.remove(twin);
        if (other == null) {
            waiting.put(mine, response);
        } else {
            InferenceResponse shadowAnswer = shadow ? response : other;
            InferenceResponse served = shadow ? other : response;
            String shadowVersion = shadow ? request.modelVersion() : splits.get(request.modelName()).shadow();
            Counter[] c = counters.computeIfAbsent(request.modelName() + "\u0000" + shadowVersion, k -> {
                MetricGroup g = group.addGroup(MetricNames.GROUP).addGroup(MetricNames.MODEL, request.modelName())
                        .addGroup(MetricNames.VERSION, String.valueOf(shadowVersion));
                return new Counter[] {g.counter(MetricNames.SHADOW_COMPARED), g.counter(MetricNames.SHADOW_DISAGREED)};
            });
            c[0].inc();
            if (!agree(served, shadowAnswer)) {
                c[1].inc();
            }
        }
        return !shadow;
    }

    /** {compared, disagreed} for the shadow {@code version} of {@code model} (for tests). */
    long[] counts(String model, String version) {
        Counter[] c = counters.get(model + "\u0000" + version);
        return c == null ? new long[] {0, 0} : new long[] {c[0].getCount(), c[1].getCount()};
    }

    /** Answers waiting for their twin (for tests). */
    int waiting() {
        return waiting.size();
    }

    static boolean agree(InferenceResponse a, InferenceResponse b) {
        if (a.isError() || b.isError()) {
            return a.isError() && b.isError() && a.error().code() == b.error().code();
        }
        List<Tensor> x = a.outputs();
        List<Tensor> y = b.outputs();
        if (x.size() != y.size()) {
            return false;
        }
        for (Tensor tx : x) {
            Tensor ty = y.stream().filter(t -> t.name().equals(tx.name())).findFirst().orElse(null);
            if (ty == null || !Arrays.equals(tx.shape(), ty.shape())) {
                return false;
            }
            if (tx.datatype().isFloatingPoint() && ty.datatype().isFloatingPoint()) {
                float[] fx = tx.asFloats();
                float[] fy = ty.asFloats();
                for (int i = 0; i < fx.length; i++) {
                    if (Math.abs(fx[i] - fy[i]) > TOLERANCE * (1 + Math.abs(fx[i]))) {
                        return false;
                    }
                }
            } else if (tx.datatype() != ty.datatype() || !Arrays.equals(tx.data(), ty.data())) {
                return false;
            }
        }
        return true;
    }
}
