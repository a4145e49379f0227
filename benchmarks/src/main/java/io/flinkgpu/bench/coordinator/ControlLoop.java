package io.flinkgpu.bench.coordinator;

import io.flinkgpu.contract.control.ControlMessage;
import io.flinkgpu.contract.control.RouteTarget;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CycleSchedule;
import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.MetricSource;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.evaluate.ModelDemand;
import io.flinkgpu.inference.operator.ModelPartitioner;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * From the start of phase 1 to the end of phase 2: a coordinator cycle (coordinator), or only the
 * same REST collection (static), to see where the stepped model is served. Cycles start as the
 * coordinator service starts them ({@link CycleSchedule}): {@code coordinator.interval} apart, or
 * {@code coordinator.plan.warm-check-interval} after a cycle that left a new instance's route held
 * for its load; the collection-only loop runs every interval.
 * Records each cycle and, after the step, the first plan that gives the stepped model a subtask the
 * plan in force did not (the decision) and when that subtask's request counter follows.
 */
final class ControlLoop implements Runnable {
    private final RecoveryRun run;
    private final Coordinator coordinator;
    private final MetricSource collector;
    private final CycleSchedule schedule;
    private final long start;
    private final long t0;
    private final long end;
    private final String model;
    private final Runnable afterCycle;
    private volatile boolean stop;
    /** The stepped model's subtasks in the plan in force (before any plan: its hash subtask). */
    private Set<Integer> inForce;
    private Set<Integer> decided;
    private double[] atDecision;

    /** {@code coordinator} null: collection only (static placement). Times are System.nanoTime. */
    ControlLoop(RecoveryRun run, Coordinator coordinator, MetricSource collector, CycleSchedule schedule, long start,
            long t0, long end) {
        this(run, coordinator, collector, schedule, start, t0, end, RecoveryBenchmark.STEPPED, () -> {});
    }

    /**
     * As above, watching {@code model} (the "stepped" one of every cycle record); {@code afterCycle}
     * runs on the loop's thread after each cycle's record, e.g. to read the coordinator's rollouts.
     */
    ControlLoop(RecoveryRun run, Coordinator coordinator, MetricSource collector, CycleSchedule schedule, long start,
            long t0, long end, String model, Runnable afterCycle) {
        this.model = model;
        this.afterCycle = afterCycle;
        this.inForce = Set.of(ModelPartitioner.hash(model, RecoveryBenchmark.PARALLELISM));
        this.run = run;
        this.coordinator = coordinator;
        this.collector = collector;
        this.schedule = schedule;
        this.start = start;
        this.t0 = t0;
        this.end = end;
    }

    private boolean sleepUntil(long nanos) {
        long wait = nanos - System.nanoTime();
        if (wait > 0) {
            try {
                TimeUnit.NANOSECONDS.sleep(wait);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /** Ends the loop after the cycle under way. */
    void stop() {
        stop = true;
    }

    @Override
    public void run() {
        long next = start;
        while (!stop && next < end) {
            if (!sleepUntil(next)) {
                return;
            }
            long began = next;
            try {
                cycle();
                afterCycle.run();
            } catch (Exception e) {
                System.out.println("control loop: " + e);
            }
            // from the start of this cycle, as the fleet simulator schedules them
            int warming = coordinator == null ? 0 : coordinator.metrics().routesWarming();
            next = began + schedule.delayAfter(warming).toNanos();
        }
    }

    private void cycle() throws Exception {
        boolean published = false;
        long epoch = 0;
        String skipped = null;
        double rate = Double.NaN;
        double load = Double.NaN;
        double batch = Double.NaN;
        double alpha = Double.NaN;
        double beta = Double.NaN;
        String targets = "";
        String reason = null;
        MetricSnapshot snapshot;
        long began = System.nanoTime();
        if (coordinator != null) {
            Coordinator.CycleResult r = coordinator.runOnce(false);
            long now = System.nanoTime();
            snapshot = coordinator.lastSnapshot();
            published = r.published();
            skipped = r.skipped();
            if (r.demand() != null && r.demand().models().get(model) != null) {
                ModelDemand d = r.demand().models().get(model);
                rate = d.ratePerSecond();
                load = d.deviceSecondsPerSecond();
                batch = d.batchSize();
                alpha = d.alphaMicros();
                beta = d.betaMicros();
            }
            if (r.plan() != null) {
                epoch = r.plan().epoch();
                targets = targets(r.plan());
                reason = published ? r.plan().reason() : null;
            }
            if (published) {
                Set<Integer> subtasks = subtasks(r.plan());
                if (now < t0) {
                    run.plansBeforeStep++;
                    run.preStepEpoch = epoch;
                    run.preStepTargets = targets;
                } else {
                    run.plansAfterStep++;
                    // the first plan after t0 that puts the stepped model on a subtask the plan in force did not
                    // (a replica or a move); a plan that only removes a replica is no such decision
                    Set<Integer> added = new TreeSet<>(subtasks);
                    added.removeAll(inForce);
                    if (decided == null && !subtasks.isEmpty() && !added.isEmpty()) {
                        decided = added;
                        run.decisionSeconds = (now - t0) / 1e9;
                        run.decisionEpoch = epoch;
                        run.decisionReason = r.plan().reason();
                    }
                }
                if (!subtasks.isEmpty()) {
                    inForce = subtasks;
                }
            }
        } else {
            snapshot = collector.collect();
        }
        long now = System.nanoTime();
        double[] in = requestsIn(snapshot);
        if (decided != null && atDecision == null) {
            atDecision = in.clone();
        } else if (decided != null && Double.isNaN(run.routingFollowedSeconds)) {
            // the first later collection in which a subtask that gained the model has counted more of its requests
            for (int s : decided) {
                if (s < in.length && in[s] > atDecision[s]) {
                    run.routingFollowedSeconds = (now - t0) / 1e9;
                }
            }
        }
        run.cycles.add(new RecoveryRun.Cycle((now - t0) / 1e9, (now - began) / 1e6, published, epoch, skipped, rate,
                load, batch, alpha, beta, targets, in, reason));
    }

    private double[] requestsIn(MetricSnapshot snapshot) {
        double[] in = new double[RecoveryBenchmark.PARALLELISM];
        if (snapshot == null) {
            return in;
        }
        for (SubtaskSample s : snapshot.subtasks()) {
            if (s.subtask() < in.length) {
                in[s.subtask()] = s.models().stream().filter(m -> m.model().equals(model))
                        .mapToDouble(ModelSample::requestsIn).filter(Double::isFinite).sum();
            }
        }
        return in;
    }

    private String targets(ControlMessage plan) {
        return plan.route(model).map(r -> r.targets().stream()
                .map(t -> t.subtask() + ":" + String.format(Locale.ROOT, "%.3f", t.weight()))
                .collect(Collectors.joining(","))).orElse("");
    }

    private Set<Integer> subtasks(ControlMessage plan) {
        return plan.route(model).map(r -> r.targets().stream().map(RouteTarget::subtask)
                .collect(Collectors.toCollection(TreeSet::new))).map(s -> (Set<Integer>) s).orElse(Set.of());
    }
}
