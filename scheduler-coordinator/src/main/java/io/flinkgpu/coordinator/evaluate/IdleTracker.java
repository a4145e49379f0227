package io.flinkgpu.coordinator.evaluate;

import io.flinkgpu.coordinator.collect.MetricSnapshot;
import io.flinkgpu.coordinator.collect.ModelSample;
import io.flinkgpu.coordinator.collect.SubtaskSample;
import io.flinkgpu.coordinator.state.IdleClock;
import io.flinkgpu.coordinator.state.StateStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Scale to zero, measured: each model's idle clock, from the job's own request counters. At every
 * observation the model's {@code requestsIn} on each inference subtask (summed over its versions;
 * a subtask without the model's metrics counts 0) is compared with the values of the last
 * observation, which the {@link StateStore} keeps ({@link IdleClock}):
 *
 * <ul>
 *   <li>grown anywhere: the model had requests; its idle clock starts again now, and a model at
 *       zero comes back ({@link State#BACK}, with the devices whose subtasks answered them);
 *   <li>unchanged on every subtask: no request reached the job in between, however long that was
 *       (a coordinator restart included: the counters, not the coordinator's memory, bridge the
 *       gap); once that has held for {@code coordinator.plan.scale-to-zero-after}, the model goes
 *       to zero ({@link State#ZERO});
 *   <li>not comparable (a counter went down to 0, a subtask missing, another job, a value not
 *       reported): requests cannot be ruled out, so the clock starts again now. A model at zero
 *       stays there: nothing was measured that would bring it back.
 * </ul>
 *
 * A model seen for the first time starts its clock then: idleness is never assumed. The clocks
 * are written back only for real cycles ({@code commit}); dry runs read them. Plain Java.
 */
public final class IdleTracker {
    /** Where a model stands. */
    public enum State {
        /** Requests measured since the last observation. */
        ACTIVE,
        /** No request measured for {@link ModelIdleness#idleMillis}, less than the scale-to-zero time. */
        IDLE,
        /** Idle for the scale-to-zero time: no instance planned. */
        ZERO,
        /** Was at zero, and requests were measured since: plan an instance again. */
        BACK
    }

    /**
     * One model's idleness.
     *
     * @param idleMillis how long its counters have stood still
     * @param servedOn for {@link State#BACK}, the devices whose subtasks answered its requests
     * @param reason how it was derived, in words
     */
    public record ModelIdleness(String model, State state, long idleMillis, Set<String> servedOn, String reason) {
        public ModelIdleness {
            servedOn = servedOn == null ? Set.of() : Set.copyOf(servedOn);
        }
    }

    /** Every observed model's idleness. */
    public record Idleness(Map<String, ModelIdleness> models) {
        public static final Idleness NONE = new Idleness(Map.of());

        public Idleness {
            models = models == null ? Map.of() : Map.copyOf(models);
        }

        /** The models in {@code state}. */
        public Map<String, ModelIdleness> in(State state) {
            Map<String, ModelIdleness> out = new TreeMap<>();
            models.forEach((m, i) -> {
                if (i.state() == state) {
                    out.put(m, i);
                }
            });
            return out;
        }
    }

    private final long afterMillis;

    /** @param after how long a model's counters must stand still before it goes to zero; 0 turns scaling to zero off */
    public IdleTracker(Duration after) {
        if (after == null || after.isNegative()) {
            throw new IllegalArgumentException("coordinator.plan.scale-to-zero-after must be >= 0, got " + after);
        }
        this.afterMillis = after.toMillis();
    }

    /** Scaling to zero off. */
    public static IdleTracker disabled() {
        return new IdleTracker(Duration.ZERO);
    }

    public boolean enabled() {
        return afterMillis > 0;
    }

    public Duration after() {
        return Duration.ofMillis(afterMillis);
    }

    /**
     * @param snapshot this cycle's collection
     * @param models the models to track (the others lose their clocks)
     * @param store where the clocks are kept
     * @param commit write the clocks back (false for dry runs)
     */
    public Idleness observe(MetricSnapshot snapshot, Collection<String> models, StateStore store, long now,
            boolean commit) {
        if (!enabled()) {
            if (commit && !store.idleClocks().isEmpty()) {
                store.putIdleClocks(Map.of()); // switched off: a later start measures afresh
            }
            return Idleness.NONE;
        }
        Map<String, IdleClock> stored = store.idleClocks();
        Map<String, IdleClock> next = new LinkedHashMap<>();
        Map<String, ModelIdleness> out = new TreeMap<>();
        for (String model : new TreeSet<>(models)) {
            Observation o = observation(snapshot, model);
            IdleClock before = stored.get(model);
            Step step = step(before, o, snapshot, model, now);
            next.put(model, step.clock);
            out.put(model, step.idleness);
        }
        if (commit) {
            store.putIdleClocks(next);
        }
        return new Idleness(out);
    }

    /** One model's counters in one collection. */
    private record Observation(Map<Integer, Double> requests, Map<Integer, String> deviceOf, List<Integer> unreadable) {}

    private record Step(IdleClock clock, ModelIdleness idleness) {}

    private static Observation observation(MetricSnapshot snapshot, String model) {
        Map<Integer, Double> requests = new TreeMap<>();
        Map<Integer, String> deviceOf = new TreeMap<>();
        List<Integer> unreadable = new ArrayList<>();
        for (SubtaskSample s : snapshot.subtasks()) {
            double sum = 0;
            for (ModelSample m : s.models()) {
                if (m.model().equals(model)) {
                    if (Double.isFinite(m.requestsIn()) && m.requestsIn() >= 0) {
                        sum += m.requestsIn();
                    } else {
                        unreadable.add(s.subtask());
                    }
                }
            }
            requests.put(s.subtask(), sum);
            deviceOf.put(s.subtask(), s.deviceId() != null ? s.deviceId() : "subtask-" + s.subtask());
        }
        return new Observation(requests, deviceOf, unreadable);
    }

    private Step step(IdleClock before, Observation o, MetricSnapshot snapshot, String model, long now) {
        if (before == null) {
            return new Step(new IdleClock(snapshot.jobId(), o.requests(), now, now, -1), new ModelIdleness(model,
                    State.IDLE, 0, Set.of(), "idle clock starts: first collection of its request counters"));
        }
        double grown = 0;
        Set<Integer> grewOn = new TreeSet<>();
        List<String> notComparable = new ArrayList<>();
        o.unreadable().forEach(s -> notComparable.add("requestsIn of subtask " + s + " not reported"));
        if (Objects.equals(before.jobId(), snapshot.jobId())) {
            for (Map.Entry<Integer, Double> e : o.requests().entrySet()) {
                double was = before.requestsBySubtask().getOrDefault(e.getKey(), 0.0);
                double is = e.getValue();
                if (is > was) {
                    grown += is - was;
                    grewOn.add(e.getKey());
                } else if (is < was && is > 0) {
                    grown += is; // the subtask started again since, and has answered these
                    grewOn.add(e.getKey());
                } else if (is < was) {
                    notComparable.add("the counters of subtask " + e.getKey() + " started again");
                }
            }
            before.requestsBySubtask().keySet().stream().filter(s -> !o.requests().containsKey(s))
                    .forEach(s -> notComparable.add("subtask " + s + " was not collected"));
        } else {
            for (Map.Entry<Integer, Double> e : o.requests().entrySet()) {
                if (e.getValue() > 0) {
                    grown += e.getValue(); // all of them since that job started
                    grewOn.add(e.getKey());
                }
            }
            notComparable.add("the counters are another job's (" + snapshot.jobId() + ", was " + before.jobId() + ")");
        }

        if (!grewOn.isEmpty()) {
            Set<String> devices = new TreeSet<>();
            grewOn.forEach(s -> devices.add(o.deviceOf().get(s)));
            IdleClock clock = new IdleClock(snapshot.jobId(), o.requests(), now, now, -1);
            if (before.atZero()) {
                return new Step(clock, new ModelIdleness(model, State.BACK, 0, devices, String.format(Locale.ROOT,
                        "back from zero: %.0f request(s) measured on subtask(s) %s (%s) after %.1f s at zero", grown,
                        grewOn, String.join(", ", devices), (now - before.zeroSinceMillis()) / 1000.0)));
            }
            return new Step(clock, new ModelIdleness(model, State.ACTIVE, 0, devices, String.format(Locale.ROOT,
                    "%.0f request(s) measured since the last collection", grown)));
        }
        if (!notComparable.isEmpty()) {
            IdleClock clock = new IdleClock(snapshot.jobId(), o.requests(), now, now, before.zeroSinceMillis());
            String why = String.join("; ", notComparable);
            return new Step(clock, before.atZero()
                    ? new ModelIdleness(model, State.ZERO, now - before.zeroSinceMillis(), Set.of(),
                            "stays at zero (no request measured; idle clock restarted: " + why + ")")
                    : new ModelIdleness(model, State.IDLE, 0, Set.of(),
                            "idle clock restarted: requests cannot be ruled out (" + why + ")"));
        }
        long idle = now - before.idleSinceMillis();
        if (before.atZero()) {
            IdleClock clock = new IdleClock(snapshot.jobId(), o.requests(), now, before.idleSinceMillis(),
                    before.zeroSinceMillis());
            return new Step(clock, new ModelIdleness(model, State.ZERO, idle, Set.of(), String.format(Locale.ROOT,
                    "at zero for %.1f s: no request measured", (now - before.zeroSinceMillis()) / 1000.0)));
        }
        if (idle >= afterMillis) {
            IdleClock clock = new IdleClock(snapshot.jobId(), o.requests(), now, before.idleSinceMillis(), now);
            return new Step(clock, new ModelIdleness(model, State.ZERO, idle, Set.of(), String.format(Locale.ROOT,
                    "no request for %.1f s (requestsIn unchanged on every subtask at every collection since) >= "
                            + "coordinator.plan.scale-to-zero-after = %.1f s", idle / 1000.0, afterMillis / 1000.0)));
        }
        IdleClock clock = new IdleClock(snapshot.jobId(), o.requests(), now, before.idleSinceMillis(), -1);
        return new Step(clock, new ModelIdleness(model, State.IDLE, idle, Set.of(), String.format(Locale.ROOT,
                "no request for %.1f s (scale to zero after %.1f s)", idle / 1000.0, afterMillis / 1000.0)));
    }
}
