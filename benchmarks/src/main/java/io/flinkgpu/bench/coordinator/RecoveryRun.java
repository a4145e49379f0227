package io.flinkgpu.bench.coordinator;

import io.flinkgpu.bench.load.StreamAnswers;
import io.flinkgpu.coordinator.plan.Decision;
import io.flinkgpu.coordinator.plan.MoveRecord;
import java.util.ArrayList;
import java.util.List;

/** Everything one configuration of the recovery benchmark measured. */
final class RecoveryRun {
    /** What one cycle of the control loop saw and did. */
    /**
     * One control-loop cycle; the stepped model's demand as the coordinator priced it: its rate, the
     * batch it priced at, the operator's latency fit it priced with (alpha + beta b, microseconds) and
     * the resulting device-seconds per second.
     */
    record Cycle(double atSecondsFromT0, double collectMillis, boolean published, long epoch, String skipped,
            double steppedRate, double steppedLoad, double steppedBatch, double steppedAlphaUs, double steppedBetaUs,
            String steppedTargets, double[] steppedRequestsIn, String reason) {}

    final String name;
    final boolean coordinator;
    /** The largest batch the job's operator formed for the stepped model. */
    int maxBatch;
    /** The load step, System.nanoTime. */
    long t0Nanos;
    /** t0 on the wall clock (the decisions' clock), milliseconds. */
    long t0WallMillis;
    /** Per model (stepped first): every request sent and its answer. */
    List<StreamAnswers> answers = List.of();
    final List<Cycle> cycles = new ArrayList<>();
    long preStepEpoch;
    String preStepTargets = "";
    double decisionSeconds = Double.NaN;
    long decisionEpoch;
    String decisionReason;
    double routingFollowedSeconds = Double.NaN;
    List<Decision> decisionsAfterStep = List.of();
    List<Decision> decisionsBeforeStep = List.of();
    List<MoveRecord> movesAfterStep = List.of();
    int plansAfterStep;
    int plansBeforeStep;
    double loadAverageStart;
    double loadAverageEnd;

    RecoveryRun(String name, boolean coordinator) {
        this.name = name;
        this.coordinator = coordinator;
    }

    /** Requests sent for model {@code m} (0: stepped, 1: steady); 0 for a model without traffic. */
    long sent(int m) {
        return m < answers.size() ? answers.get(m).sent() : 0;
    }

    long answered() {
        return answers.stream().mapToLong(StreamAnswers::answered).sum();
    }

    long errors() {
        return answers.stream().mapToLong(StreamAnswers::errors).sum();
    }

    long unanswered() {
        return answers.stream().mapToLong(StreamAnswers::outstanding).sum();
    }
}
