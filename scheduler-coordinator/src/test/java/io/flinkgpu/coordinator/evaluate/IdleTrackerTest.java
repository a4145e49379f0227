package io.flinkgpu.coordinator.evaluate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.flinkgpu.coordinator.FakeCluster;
import io.flinkgpu.coordinator.evaluate.IdleTracker.ModelIdleness;
import io.flinkgpu.coordinator.evaluate.IdleTracker.State;
import io.flinkgpu.coordinator.state.InMemoryStateStore;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The idle clocks on a virtual clock: 2 subtasks on 2 devices, scale to zero after 60 s, a collection every 5 s. */
class IdleTrackerTest {
    private static final Duration AFTER = Duration.ofSeconds(60);

    private final FakeCluster cluster = new FakeCluster(2, 2).serve("m", 1000, 100, 10, 0);

    private ModelIdleness observe(IdleTracker tracker, StateStore store) throws Exception {
        return tracker.observe(cluster.collect(), Set.of("m"), store, cluster.clock().millis(), true).models().get("m");
    }

    /** Advances the clock by {@code seconds} in 5-s collections, each observed; returns the states seen. */
    private List<ModelIdleness> run(IdleTracker tracker, StateStore store, int seconds) throws Exception {
        List<ModelIdleness> seen = new ArrayList<>();
        for (int t = 0; t < seconds; t += 5) {
            cluster.advance(5_000);
            seen.add(observe(tracker, store));
        }
        return seen;
    }

    @Test
    void anIdleModelGoesToZeroOnceItsCountersStoodStillForTheWholeTimeAndNotBefore() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        assertThat(observe(tracker, store).state()).isEqualTo(State.IDLE); // first sight: the clock starts, nothing assumed
        assertThat(run(tracker, store, 10)).extracting(ModelIdleness::state).containsOnly(State.ACTIVE);

        cluster.serve("m", 1000, 100, 0, 0); // traffic stops
        List<ModelIdleness> idle = run(tracker, store, 55);
        assertThat(idle).extracting(ModelIdleness::state).containsOnly(State.IDLE);
        assertThat(idle.get(idle.size() - 1).idleMillis()).isEqualTo(55_000);

        ModelIdleness zero = run(tracker, store, 5).get(0);
        assertThat(zero.state()).isEqualTo(State.ZERO);
        assertThat(zero.idleMillis()).isEqualTo(60_000);
        assertThat(zero.reason()).contains("no request for 60.0 s").contains("coordinator.plan.scale-to-zero-after = 60.0 s");
        assertThat(run(tracker, store, 120)).extracting(ModelIdleness::state).containsOnly(State.ZERO);
    }

    @Test
    void aRequestBringsAModelAtZeroBackAndItsClockStartsAgain() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        cluster.serve("m", 1000, 100, 0, 0);
        observe(tracker, store);
        assertThat(run(tracker, store, 60)).extracting(ModelIdleness::state).last().isEqualTo(State.ZERO);

        // the job's hash routing sent one request to subtask 1 (sim:1), whose device cache loaded the model
        cluster.requests("m", 1, 1);
        cluster.advance(5_000);
        ModelIdleness back = observe(tracker, store);
        assertThat(back.state()).isEqualTo(State.BACK);
        assertThat(back.servedOn()).containsExactly("sim:1");
        assertThat(back.reason()).startsWith("back from zero: 1 request(s) measured on subtask(s) [1] (sim:1) after 5.0 s");

        // hysteresis: it needs another whole minute without requests to go back to zero
        List<ModelIdleness> after = run(tracker, store, 55);
        assertThat(after).extracting(ModelIdleness::state).containsOnly(State.IDLE);
        assertThat(run(tracker, store, 5).get(0).state()).isEqualTo(State.ZERO);
    }

    @Test
    void sparseTrafficDoesNotFlapBetweenZeroAndOne() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        cluster.serve("m", 1000, 100, 0, 0);
        observe(tracker, store);
        // one request every 40 s (< 60 s) for 20 minutes: never at zero
        List<ModelIdleness> seen = new ArrayList<>();
        for (int period = 0; period < 30; period++) {
            cluster.requests("m", 0, 1);
            seen.addAll(run(tracker, store, 40));
        }
        assertThat(seen).extracting(ModelIdleness::state).doesNotContain(State.ZERO, State.BACK);

        // one request every 100 s: one trip to zero and back per gap, never sooner than 60 s after a return
        List<ModelIdleness> sparse = new ArrayList<>();
        for (int period = 0; period < 12; period++) {
            cluster.requests("m", 0, 1);
            sparse.addAll(run(tracker, store, 100));
        }
        assertThat(sparse.stream().filter(i -> i.state() == State.BACK)).hasSize(11);
        int lastBack = -1;
        int transitions = 0;
        for (int i = 0; i < sparse.size(); i++) {
            State s = sparse.get(i).state();
            State before = i == 0 ? State.IDLE : sparse.get(i - 1).state();
            if (s == State.BACK) {
                lastBack = i;
            }
            if (s == State.ZERO && before != State.ZERO) {
                transitions++;
                assertThat(lastBack < 0 || (i - lastBack) * 5 >= 60).as("zero %d s after a return", (i - lastBack) * 5)
                        .isTrue();
            }
        }
        assertThat(transitions).isEqualTo(12);
    }

    @Test
    void aCoordinatorRestartGoesOnFromTheStoredCountersNeitherAtOnceNorNever(@TempDir Path dir) throws Exception {
        cluster.serve("m", 1000, 100, 0, 0);
        try (StateStore store = RocksDbStateStore.open(dir.resolve("db"))) {
            IdleTracker tracker = new IdleTracker(AFTER);
            observe(tracker, store);
            run(tracker, store, 30); // idle for 30 s
        }
        cluster.advance(20_000); // the coordinator is down for 20 s; no request reaches the job
        try (StateStore store = RocksDbStateStore.open(dir.resolve("db"))) {
            IdleTracker restarted = new IdleTracker(AFTER);
            ModelIdleness first = observe(restarted, store);
            // the counters did not move across the gap: the clock goes on (50 s), not again from 0, nor at once to zero
            assertThat(first.state()).isEqualTo(State.IDLE);
            assertThat(first.idleMillis()).isEqualTo(50_000);
            assertThat(run(restarted, store, 5).get(0).state()).isEqualTo(State.IDLE);
            assertThat(run(restarted, store, 5).get(0).state()).isEqualTo(State.ZERO);
        }
        cluster.advance(30_000);
        try (StateStore store = RocksDbStateStore.open(dir.resolve("db"))) {
            // a model at zero stays at zero across a restart
            assertThat(observe(new IdleTracker(AFTER), store).state()).isEqualTo(State.ZERO);
        }
    }

    @Test
    void requestsWhileTheCoordinatorWasDownCount(@TempDir Path dir) throws Exception {
        cluster.serve("m", 1000, 100, 0, 0);
        try (StateStore store = RocksDbStateStore.open(dir.resolve("db"))) {
            IdleTracker tracker = new IdleTracker(AFTER);
            observe(tracker, store);
            run(tracker, store, 55);
        }
        cluster.requests("m", 1, 3); // answered while the coordinator was down
        cluster.advance(30_000);
        try (StateStore store = RocksDbStateStore.open(dir.resolve("db"))) {
            ModelIdleness first = observe(new IdleTracker(AFTER), store);
            assertThat(first.state()).isEqualTo(State.ACTIVE);
            assertThat(first.reason()).contains("3 request(s)");
        }
    }

    @Test
    void countersThatStartedAgainRestartTheClockAndAnotherJobsRequestsCount() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        cluster.serve("m", 1000, 100, 0, 0).requests("m", 0, 100);
        observe(tracker, store);
        run(tracker, store, 50);
        // a failover: the counters start again from 0; requests before it cannot be ruled out
        cluster.restartJob("job");
        cluster.advance(5_000);
        ModelIdleness reset = observe(tracker, store);
        assertThat(reset.state()).isEqualTo(State.IDLE);
        assertThat(reset.idleMillis()).isZero();
        assertThat(reset.reason()).contains("idle clock restarted").contains("counters of subtask 0 started again");
        List<ModelIdleness> after = run(tracker, store, 60);
        assertThat(after.subList(0, after.size() - 1)).extracting(ModelIdleness::state).containsOnly(State.IDLE);
        assertThat(after.get(after.size() - 1).state()).isEqualTo(State.ZERO);

        // a resubmitted job (new id) whose counters show requests: the model comes back
        cluster.restartJob("job-2").requests("m", 1, 2);
        cluster.advance(5_000);
        ModelIdleness back = observe(tracker, store);
        assertThat(back.state()).isEqualTo(State.BACK);
        assertThat(back.servedOn()).containsExactly("sim:1");
    }

    @Test
    void dryRunsReadTheClocksWithoutWritingThem() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        cluster.serve("m", 1000, 100, 0, 0);
        observe(tracker, store);
        run(tracker, store, 55);
        cluster.advance(10_000);
        assertThat(tracker.observe(cluster.collect(), Set.of("m"), store, cluster.clock().millis(), false).models()
                .get("m").state()).isEqualTo(State.ZERO);
        assertThat(store.idleClocks().get("m").atZero()).isFalse();
    }

    @Test
    void zeroTurnsItOffAndClearsTheClocks() throws Exception {
        StateStore store = new InMemoryStateStore();
        observe(new IdleTracker(AFTER), store);
        assertThat(store.idleClocks()).containsOnlyKeys("m");
        IdleTracker off = new IdleTracker(Duration.ZERO);
        assertThat(off.enabled()).isFalse();
        cluster.advance(3_600_000);
        assertThat(off.observe(cluster.collect(), Set.of("m"), store, cluster.clock().millis(), true).models())
                .isEmpty();
        assertThat(store.idleClocks()).isEmpty();
        assertThatThrownBy(() -> new IdleTracker(Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("coordinator.plan.scale-to-zero-after");
    }

    @Test
    void modelsNoLongerTrackedLoseTheirClocks() throws Exception {
        IdleTracker tracker = new IdleTracker(AFTER);
        StateStore store = new InMemoryStateStore();
        observe(tracker, store);
        tracker.observe(cluster.collect(), Set.of(), store, cluster.clock().millis(), true);
        assertThat(store.idleClocks()).isEmpty();
    }
}
