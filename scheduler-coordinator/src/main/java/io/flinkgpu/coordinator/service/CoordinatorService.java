package io.flinkgpu.coordinator.service;

import io.flinkgpu.contract.control.PlanSigner;
import io.flinkgpu.contract.security.Secrets;
import io.flinkgpu.coordinator.Coordinator;
import io.flinkgpu.coordinator.CoordinatorMetrics;
import io.flinkgpu.coordinator.CoordinatorOptions;
import io.flinkgpu.coordinator.CycleSchedule;
import io.flinkgpu.coordinator.admin.AdminServer;
import io.flinkgpu.coordinator.admin.AdminSettings;
import io.flinkgpu.coordinator.realize.AdaptiveSchedulerRescaler;
import io.flinkgpu.coordinator.realize.KafkaPlanRealizer;
import io.flinkgpu.coordinator.realize.PlanRealizer;
import io.flinkgpu.coordinator.realize.Rescaler;
import io.flinkgpu.coordinator.realize.Rescalers;
import io.flinkgpu.coordinator.state.RocksDbStateStore;
import io.flinkgpu.coordinator.state.StateStore;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.ReadableConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The running coordinator as {@code coordinator run} starts it, reusable in-process (the local
 * default runs one next to its job): RocksDB state in {@code coordinator.state.dir}, the REST
 * collector, the Kafka realizer, the configured rescaler, the admin API and /metrics (unless
 * {@code coordinator.admin.port} is -1) and a loop that runs a cycle every
 * {@code coordinator.interval} (every {@code coordinator.plan.warm-check-interval} while a new
 * instance's route waits for its load: {@link CycleSchedule}). {@link #close} stops the loop and releases everything.
 */
public final class CoordinatorService implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(CoordinatorService.class);

    private final StateStore store;
    private final PlanRealizer realizer;
    private final Coordinator coordinator;
    private final AdminServer admin;
    private final ScheduledExecutorService loop;
    private volatile Coordinator.CycleResult lastCycle;
    private volatile RuntimeException lastFailure;

    private final CycleSchedule schedule;

    private CoordinatorService(StateStore store, PlanRealizer realizer, Coordinator coordinator, AdminServer admin,
            ScheduledExecutorService loop, CycleSchedule schedule) {
        this.schedule = schedule;
        this.store = store;
        this.realizer = realizer;
        this.coordinator = coordinator;
        this.admin = admin;
        this.loop = loop;
    }

    /** Opens the state, re-publishes the last plan, starts the admin API and the loop (its first cycle at once). */
    public static CoordinatorService start(ReadableConfig config) throws Exception {
        return start(config, Duration.ZERO);
    }

    /** As {@link #start(ReadableConfig)}, with the first cycle after {@code initialDelay}. */
    public static CoordinatorService start(ReadableConfig config, Duration initialDelay) throws Exception {
        Duration timeout = config.get(CoordinatorOptions.REST_TIMEOUT);
        // tokens and keystore first: a bad one fails before any state is opened
        AdminSettings adminSettings = config.get(CoordinatorOptions.ADMIN_PORT) >= 0
                ? AdminSettings.fromConfig(config) : null;
        StateStore store = RocksDbStateStore.open(Path.of(config.get(CoordinatorOptions.STATE_DIR)));
        PlanRealizer realizer = null;
        AdminServer admin = null;
        try {
            Optional<PlanSigner> signer = CoordinatorOptions.planSigner(config);
            realizer = new KafkaPlanRealizer(config.get(CoordinatorOptions.BOOTSTRAP_SERVERS),
                    config.get(CoordinatorOptions.CONTROL_TOPIC), timeout.multipliedBy(2),
                    CoordinatorOptions.kafkaClientProperties(config)).signedBy(signer.orElse(null));
            LOG.info("Plans are published {}", signer.map(p -> "signed under key id " + p.keyId()).orElse("unsigned"));
            if (signer.isPresent()) {
                Secrets.warnIfLiteral(CoordinatorOptions.SIGNING_KEY.key(), config.get(CoordinatorOptions.SIGNING_KEY));
            }
            Optional<Rescaler> rescaler = Rescalers.create(CoordinatorOptions.rescalerSettings(config));
            Coordinator coordinator = new Coordinator(config, CoordinatorMain.collector(config), realizer, store,
                    new CoordinatorMetrics(), Clock.systemUTC(), rescaler.orElse(null));
            coordinator.resume();
            if (adminSettings != null) {
                admin = new AdminServer(adminSettings, coordinator,
                        rescaler.orElseGet(() -> new AdaptiveSchedulerRescaler(config.get(CoordinatorOptions.REST_URL),
                                timeout)));
            }
            ScheduledExecutorService loop = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "coordinator-loop");
                t.setDaemon(true);
                return t;
            });
            CoordinatorService service = new CoordinatorService(store, realizer, coordinator, admin, loop,
                    CycleSchedule.fromConfig(config));
            service.scheduleCycle(initialDelay);
            return service;
        } catch (Exception | Error e) {
            if (admin != null) {
                admin.close();
            }
            if (realizer != null) {
                realizer.close();
            }
            store.close();
            throw e;
        }
    }

    /** Runs the next cycle after {@code delay}, unless the service is closing. */
    private void scheduleCycle(Duration delay) {
        try {
            loop.schedule(this::cycle, delay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closing) {
            // closed meanwhile: no more cycles
        }
    }

    private void cycle() {
        try {
            lastCycle = coordinator.runOnce(false);
            lastFailure = null;
        } catch (RuntimeException e) {
            lastFailure = e;
            coordinator.metrics().cycleFailed();
            LOG.warn("Coordinator cycle failed", e);
        } finally {
            // sooner while a new instance waits for its load to be reported (coordinator.plan.warm-check-interval)
            scheduleCycle(schedule.delayAfter(coordinator.metrics().routesWarming()));
        }
    }

    public Coordinator coordinator() {
        return coordinator;
    }

    public StateStore store() {
        return store;
    }

    /** The admin API's port, or -1 where it is off. */
    public int adminPort() {
        return admin == null ? -1 : admin.port();
    }

    /** {@code https} where the admin API has TLS ({@code coordinator.admin.tls.keystore}), else {@code http}. */
    public String adminScheme() {
        return admin == null ? "http" : admin.scheme();
    }

    /** What the loop's latest cycle did, or null before the first (or after a failed one: {@link #lastFailure}). */
    public Coordinator.CycleResult lastCycle() {
        return lastCycle;
    }

    /** The exception the latest cycle threw, or null. */
    public RuntimeException lastFailure() {
        return lastFailure;
    }

    /** Stops the loop (waiting for a running cycle), then the admin API, the realizer and the state. */
    @Override
    public void close() throws Exception {
        loop.shutdownNow();
        loop.awaitTermination(10, TimeUnit.SECONDS);
        try {
            if (admin != null) {
                admin.close();
            }
        } finally {
            try {
                realizer.close();
            } finally {
                store.close();
            }
        }
    }
}
