package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Over random sequences of acquire / release / use / idle eviction / retire / pin (LOAD) / unload
 * on real sessions, the device's memory and the model limit are never exceeded, a held model is
 * never evicted, and idle eviction never takes a pinned model.
 */
class ModelCacheProperties {
    static final long MIB = 1L << 20;
    static final long CAPACITY = 10 * MIB;
    static final int MAX_MODELS = 3;
    static final long[] SIZES = {MIB, 2 * MIB, 3 * MIB, 4 * MIB, 5 * MIB};
    static final Duration TIMEOUT = Duration.ofSeconds(300);

    static Path root;
    static ModelRepository repository;

    @BeforeContainer
    static void repository() throws IOException {
        root = Files.createTempDirectory("cache-properties");
        TestRepository repo = new TestRepository(root);
        for (int i = 0; i < SIZES.length; i++) {
            repo.echo("m" + i, SIZES[i], "1");
        }
        repository = repo.open();
    }

    @AfterContainer
    static void deleteRepository() throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
                Files.delete(p);
            }
        }
    }

    enum Kind {
        ACQUIRE,
        RELEASE,
        USE,
        IDLE,
        RETIRE,
        PIN,
        UNLOAD
    }

    record Action(Kind kind, int model, int seconds) {}

    @Provide
    Arbitrary<List<Action>> actions() {
        Arbitrary<Action> action = Combinators.combine(
                Arbitraries.of(Kind.class),
                Arbitraries.integers().between(0, SIZES.length - 1),
                Arbitraries.integers().between(0, 400)).as(Action::new);
        return action.list().ofMinSize(1).ofMaxSize(40);
    }

    @Property(tries = 200)
    void limitsHoldAndHeldModelsStay(@ForAll("actions") List<Action> actions) throws Exception {
        AtomicLong now = new AtomicLong();
        SimulatedDevice device = new SimulatedDevice("sim:0", CAPACITY, SpeedModel.CPU_SPEED);
        ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withMaxModels(MAX_MODELS).withEvictionTimeout(TIMEOUT)
                .withBackgroundEviction(false).withWarmupWorkers(0).withRoomWait(Duration.ZERO)
                .withHostMemoryBytes(4096);
        List<ModelLease> held = new ArrayList<>();
        java.util.Set<ModelId> pinnedLoaded = new java.util.HashSet<>();
        try (ModelCache cache = new ModelCache(device, settings, now::get, ModelCache.Listener.NONE)) {
            for (Action a : actions) {
                ModelRepository.ResolvedModel m = TestRepository.resolve(repository, "m" + a.model());
                switch (a.kind()) {
                    case ACQUIRE:
                        tryAcquire(cache, m).ifPresent(held::add);
                        break;
                    case RELEASE:
                        if (!held.isEmpty()) {
                            held.remove(a.seconds() % held.size()).close();
                        }
                        break;
                    case USE:
                        tryAcquire(cache, m).ifPresent(ModelLease::close);
                        break;
                    case IDLE:
                        now.addAndGet(Duration.ofSeconds(a.seconds()).toNanos());
                        cache.evictIdle();
                        break;
                    case RETIRE:
                        cache.retire(m.id());
                        break;
                    case PIN:
                        try {
                            cache.pin(m);
                        } catch (ModelCache.ModelLoadException e) {
                            assertThat(e).hasMessageContaining("no room");
                        }
                        break;
                    case UNLOAD:
                        cache.unload(m.id());
                        assertThat(cache.pinnedModels()).doesNotContain(m.id());
                        break;
                    default:
                        throw new AssertionError(a);
                }
                long used = device.totalMemoryBytes() - device.freeMemoryBytes();
                assertThat(used).isLessThanOrEqualTo(CAPACITY);
                assertThat(cache.reservedBytes()).isLessThanOrEqualTo(used);
                assertThat(cache.loadedCount()).isLessThanOrEqualTo(MAX_MODELS);
                assertThat(cache.hostBytes()).isLessThanOrEqualTo(4096);
                if (a.kind() == Kind.IDLE) { // idle eviction never takes a pinned model
                    assertThat(pinnedLoaded).allSatisfy(id -> assertThat(cache.isLoaded(id)).as("pinned %s", id).isTrue());
                }
                pinnedLoaded.clear();
                for (ModelId id : cache.pinnedModels()) {
                    if (cache.isLoaded(id)) {
                        pinnedLoaded.add(id);
                    }
                }
                for (ModelLease lease : held) {
                    assertThat(cache.isLoaded(lease.id())).as("held %s must stay loaded", lease.id()).isTrue();
                    assertThat(cache.references(lease.id())).isPositive();
                }
            }
            held.forEach(ModelLease::close);
            assertThat(cache.residentModels()).allSatisfy(id -> assertThat(cache.references(id)).isZero());
        }
        assertThat(device.freeMemoryBytes()).as("closing the cache frees everything").isEqualTo(CAPACITY);
    }

    /** A refusal is allowed only when every resident model is held (nothing could be evicted). */
    private static java.util.Optional<ModelLease> tryAcquire(ModelCache cache, ModelRepository.ResolvedModel m) {
        try {
            return java.util.Optional.of(cache.acquire(m));
        } catch (ModelCache.ModelLoadException e) {
            assertThat(e).hasMessageContaining("no room");
            assertThat(cache.residentModels()).allSatisfy(id -> assertThat(cache.references(id)).isPositive());
            return java.util.Optional.empty();
        }
    }
}
