package io.flinkgpu.inference.cache;

import static io.flinkgpu.inference.cache.TestRepository.echoRequest;
import static io.flinkgpu.inference.cache.TestRepository.resolve;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceKind;
import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.Tensor;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelCacheTest {
    static final long MIB = 1L << 20;

    @TempDir
    java.nio.file.Path dir;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final List<String> events = new CopyOnWriteArrayList<>();
    private final ModelCache.Listener recorder = new ModelCache.Listener() {
        @Override
        public void loaded(ModelId id, long nanos, boolean fromHost) {
            events.add((fromHost ? "swap-in " : "load ") + id);
        }

        @Override
        public void evicted(ModelId id, String reason) {
            events.add("evict " + id);
        }

        @Override
        public void loadFailed(ModelId id, String reason) {
            events.add("fail " + id);
        }
    };
    private final List<ModelCache> caches = new ArrayList<>();
    private TestRepository repo;

    /** No background thread and no warm-up unless a test asks: every decision follows the fake clock. */
    private final ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false)
            .withWarmupWorkers(0).withRoomWait(Duration.ZERO);

    @BeforeEach
    void repository() {
        repo = new TestRepository(dir);
    }

    @AfterEach
    void closeCaches() {
        caches.forEach(ModelCache::close);
    }

    private ModelCache cache(Device device, ModelCacheSettings s) {
        ModelCache c = new ModelCache(device, s, now::get, recorder);
        caches.add(c);
        return c;
    }

    private static Device cpu() {
        return new CpuDevice("cpu:0", 1L << 30, 1);
    }

    private static void use(ModelCache cache, ModelRepository r, String name) throws Exception {
        try (ModelLease lease = cache.acquire(resolve(r, name))) {
            float v = name.hashCode() % 100;
            List<Tensor> out = lease.model().run(List.of(echoRequest(name, v))).get(0);
            assertThat(out.get(0).asFloats()).containsExactly(v, v + 1, v + 2);
        }
    }

    private static List<String> names(List<ModelId> ids) {
        return ids.stream().map(ModelId::name).toList();
    }

    private void advance(Duration d) {
        now.addAndGet(d.toNanos());
    }

    @Test
    void evictsTheLeastRecentlyUsedModelWhenTheModelLimitIsReached() throws Exception {
        for (String m : List.of("a", "b", "c", "d", "e")) {
            repo.echo(m, MIB, "1");
        }
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings.withMaxModels(4));

        for (String m : List.of("a", "b", "c", "d", "a")) {
            use(cache, r, m);
        }
        assertThat(names(cache.residentModels())).containsExactly("b", "c", "d", "a");

        use(cache, r, "e");

        assertThat(names(cache.residentModels())).containsExactly("c", "d", "a", "e");
        assertThat(names(cache.hostModels())).containsExactly("b");
        assertThat(events).containsSubsequence("load b:1", "evict b:1", "load e:1");
        assertThat(cache.stats().evictions()).isEqualTo(1);
    }

    @Test
    void evictsLeastRecentlyUsedModelsUntilTheNewOneFitsInDeviceMemory() throws Exception {
        repo.echo("big", 4 * MIB, "1").echo("mid", 2 * MIB, "1").echo("small", 2 * MIB, "1").echo("new", 3 * MIB, "1");
        ModelRepository r = repo.open();
        SimulatedDevice device = new SimulatedDevice("sim:0", 8 * MIB, SpeedModel.CPU_SPEED);
        ModelCache cache = cache(device, settings);

        use(cache, r, "big");
        use(cache, r, "mid");
        use(cache, r, "small");
        assertThat(device.freeMemoryBytes()).isZero();

        use(cache, r, "new"); // 3 MiB takes two 2 MiB pages: evicting "big" (4 MiB) makes room

        assertThat(names(cache.residentModels())).containsExactly("mid", "small", "new");
        assertThat(device.totalMemoryBytes() - device.freeMemoryBytes()).isEqualTo(8 * MIB);
        assertThat(cache.reservedBytes()).isEqualTo(7 * MIB);
    }

    @Test
    void aModelInUseIsNeverEvicted() throws Exception {
        repo.echo("a", MIB, "1").echo("b", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings.withMaxModels(1));

        try (ModelLease held = cache.acquire(resolve(r, "a"))) {
            assertThatThrownBy(() -> cache.acquire(resolve(r, "b")))
                    .isInstanceOf(ModelCache.ModelLoadException.class)
                    .hasMessageContaining("no room for b:1")
                    .hasMessageContaining("a:1 (1 in use)");
            assertThat(cache.isLoaded(new ModelId("a", "1"))).isTrue();
            assertThat(held.model().run(List.of(echoRequest("a", 1))).get(0).get(0).asFloats()).containsExactly(1, 2, 3);
        }
        assertThat(cache.failure(new ModelId("b", "1"))).as("lack of room passes; not remembered").isEmpty();

        use(cache, r, "b");

        assertThat(names(cache.residentModels())).containsExactly("b");
    }

    @Test
    void idleModelsAreEvictedAfterTheEvictionTimeoutButHeldOnesStay() throws Exception {
        repo.echo("a", MIB, "1").echo("b", MIB, "1").echo("held", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings.withEvictionTimeout(Duration.ofSeconds(300)));

        use(cache, r, "a");
        ModelLease held = cache.acquire(resolve(r, "held"));
        advance(Duration.ofSeconds(200));
        use(cache, r, "b");
        advance(Duration.ofSeconds(99));
        assertThat(cache.evictIdle()).isEmpty();

        advance(Duration.ofSeconds(1)); // a: 300 s idle
        assertThat(names(cache.evictIdle())).containsExactly("a");
        assertThat(names(cache.residentModels())).containsExactly("held", "b");

        advance(Duration.ofSeconds(300));
        assertThat(names(cache.evictIdle())).containsExactly("b");
        assertThat(names(cache.residentModels())).as("held for 600 s, still in use").containsExactly("held");

        held.close();
        advance(Duration.ofSeconds(300));
        assertThat(names(cache.evictIdle())).containsExactly("held");
        assertThat(cache.loadedCount()).isZero();
    }

    @Test
    void anEvictedModelSwapsInFromHostMemoryWithoutTheRepository() throws Exception {
        repo.echo("a", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings.withEvictionTimeout(Duration.ofSeconds(1)));
        use(cache, r, "a");
        advance(Duration.ofSeconds(1));
        cache.evictIdle();
        Files.delete(dir.resolve("a/1/model.onnx")); // only the host copy is left

        use(cache, r, "a");

        assertThat(events).containsExactly("load a:1", "evict a:1", "swap-in a:1");
        assertThat(cache.stats()).isEqualTo(new ModelCache.Stats(1, 1, 1, 0));
        assertThat(cache.hostModels()).isEmpty();
    }

    @Test
    void hostMemoryKeepsOnlyTheMostRecentlyEvictedModelsWithinItsBudget() throws Exception {
        repo.echo("a", MIB, "1").echo("b", MIB, "1").echo("c", MIB, "1");
        ModelRepository r = repo.open();
        long fileSize = Files.size(dir.resolve("a/1/model.onnx"));
        ModelCache cache = cache(cpu(), settings.withMaxModels(1).withHostMemoryBytes(fileSize * 3 / 2));

        use(cache, r, "a");
        use(cache, r, "b");
        use(cache, r, "c");

        assertThat(names(cache.hostModels())).containsExactly("b");
        assertThat(cache.hostBytes()).isEqualTo(fileSize);
    }

    @Test
    void outOfMemoryOnLoadEvictsIdleModelsAndRetriesOnce() throws Exception {
        repo.echo("a", MIB, "1").echo("b", MIB, "1").echo("c", MIB, "1");
        ModelRepository r = repo.open();
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.CPU_SPEED);
        ModelCache cache = cache(device, settings);
        use(cache, r, "a");
        use(cache, r, "b");

        device.injectOutOfMemoryOnLoad(1);
        use(cache, r, "c");

        assertThat(names(cache.residentModels())).containsExactly("b", "c");
        assertThat(events).containsSubsequence("evict a:1", "load c:1");
    }

    @Test
    void outOfMemoryTwiceFailsThatModelWithItsReasonWhileOthersKeepServing() throws Exception {
        repo.echo("a", MIB, "1").echo("c", MIB, "1");
        ModelRepository r = repo.open();
        SimulatedDevice device = new SimulatedDevice("sim:0", 64 * MIB, SpeedModel.CPU_SPEED);
        ModelCache cache = cache(device, settings);
        use(cache, r, "a");

        device.injectOutOfMemoryOnLoad(2);
        assertThatThrownBy(() -> cache.acquire(resolve(r, "c")))
                .isInstanceOf(ModelCache.ModelLoadException.class)
                .hasMessageContaining("out of memory loading c:1 on sim:0 after evicting [a:1]");
        assertThat(device.freeMemoryBytes()).isEqualTo(device.totalMemoryBytes());

        use(cache, r, "a"); // swapped in again, serving
        assertThatThrownBy(() -> cache.acquire(resolve(r, "c")))
                .as("the failure is remembered, not retried at once")
                .hasMessageContaining("out of memory");
        assertThat(cache.failure(new ModelId("c", "1"))).get().asString().contains("out of memory");

        advance(ModelCacheSettings.DEFAULT_LOAD_RETRY_INTERVAL);
        use(cache, r, "c");
        assertThat(names(cache.residentModels())).containsExactly("a", "c");
    }

    @Test
    void aCorruptModelFileFailsThatModelWithAReasonAndOthersKeepServing() throws Exception {
        repo.echo("good", MIB, "1").echo("bad", MIB, "1").corrupt("bad", "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);
        use(cache, r, "good");

        assertThatThrownBy(() -> cache.acquire(resolve(r, "bad")))
                .isInstanceOf(ModelCache.ModelLoadException.class)
                .hasMessageContaining("cannot load bad:1 on cpu:0");

        use(cache, r, "good");
        assertThat(names(cache.residentModels())).containsExactly("good");
        assertThat(cache.reservedBytes()).isEqualTo(MIB);
        assertThat(cache.stats().failedLoads()).isEqualTo(1);
        assertThat(events).contains("fail bad:1");
    }

    @Test
    void aModelThatDoesNotMatchItsConfigFailsToLoad() throws Exception {
        repo.add("liar", "echo-fp32", c -> ((com.fasterxml.jackson.databind.node.ObjectNode) c.get("inputs").get(0))
                .put("datatype", "INT64"), "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);

        assertThatThrownBy(() -> cache.acquire(resolve(r, "liar")))
                .hasMessageContaining("does not match its config")
                .hasMessageContaining("input x is FP32 in the model, INT64 in the config");
        assertThat(cache.reservedBytes()).isZero();
    }

    @Test
    void aModelLargerThanTheDeviceFailsWithoutEvictingAnything() throws Exception {
        repo.echo("a", MIB, "1").echo("huge", 2L << 30, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);
        use(cache, r, "a");

        assertThatThrownBy(() -> cache.acquire(resolve(r, "huge"))).hasMessageContaining("needs 2048 MiB");

        assertThat(names(cache.residentModels())).containsExactly("a");
    }

    @Test
    void aLostDeviceFailsLoadsWithItsReason() throws Exception {
        repo.echo("a", MIB, "1");
        ModelRepository r = repo.open();
        SimulatedDevice device = new SimulatedDevice("sim:3", 64 * MIB, SpeedModel.CPU_SPEED);
        ModelCache cache = cache(device, settings);
        device.injectDeviceLost();

        assertThatThrownBy(() -> cache.acquire(resolve(r, "a"))).hasMessageContaining("sim:3");
        assertThat(device.isHealthy()).isFalse();
    }

    /** Counts the batch sizes run on it, to observe warm-up. */
    static final class CountingDevice implements Device {
        final Device inner = new CpuDevice("cpu:9", 1L << 30, 1);
        final List<Integer> batches = Collections.synchronizedList(new ArrayList<>());

        @Override
        public String id() {
            return inner.id();
        }

        @Override
        public DeviceKind kind() {
            return inner.kind();
        }

        @Override
        public long totalMemoryBytes() {
            return inner.totalMemoryBytes();
        }

        @Override
        public long freeMemoryBytes() {
            return inner.freeMemoryBytes();
        }

        @Override
        public boolean isHealthy() {
            return true;
        }

        @Override
        public OrtSession.SessionOptions newSessionOptions() throws OrtException {
            return inner.newSessionOptions();
        }

        @Override
        public boolean reserve(long bytes) {
            return inner.reserve(bytes);
        }

        @Override
        public void release(long bytes) {
            inner.release(bytes);
        }

        @Override
        public <T> T execute(String model, int samples, Work<T> work) throws OrtException {
            batches.add(samples);
            return work.run();
        }
    }

    @Test
    void warmUpRunsEveryBatchSizeItWillSeeBeforeTheFirstLease() throws Exception {
        repo.add("warm", "two-inputs", c -> ((com.fasterxml.jackson.databind.node.ObjectNode) c.get("dynamic_batching"))
                .putArray("preferred_batch_sizes").add(4), "1");
        ModelRepository r = repo.open();
        CountingDevice device = new CountingDevice();
        ModelCache cache = cache(device, settings.withWarmupWorkers(2).withMaxBatchSize(8));

        try (ModelLease lease = cache.acquire(resolve(r, "warm"))) {
            assertThat(device.batches).containsExactlyInAnyOrder(1, 4, 8);
        }
        use2(cache, r);
        assertThat(device.batches).hasSize(4);
    }

    private static void use2(ModelCache cache, ModelRepository r) throws Exception {
        try (ModelLease lease = cache.acquire(resolve(r, "warm"))) {
            assertThat(lease.model().inputTypes()).containsOnlyKeys("a", "b");
            lease.model().run(List.of(new io.flinkgpu.inference.protocol.InferenceRequest("x", "warm", null,
                    List.of(Tensor.ofFloats("a", new long[] {1, 2}, 1, 2), Tensor.ofLongs("b", new long[] {1, 2}, 3, 4)),
                    null)));
        }
    }

    @Test
    void warmUpBatchSizesComeFromTheConfigOrTheBatchesTheModelWillSee() throws Exception {
        repo.add("default", "echo-fp32", c -> {}, "1")
                .add("preferred", "echo-fp32", c -> ((com.fasterxml.jackson.databind.node.ObjectNode) c.get("dynamic_batching"))
                        .putArray("preferred_batch_sizes").add(2).add(8), "1")
                .add("explicit", "echo-fp32", c -> c.putObject("warmup").putArray("batch_sizes").add(3).add(64), "1");
        ModelRepository r = repo.open();

        assertThat(WarmUp.batchSizes(resolve(r, "default").config(), 32)).containsExactly(1, 16);
        assertThat(WarmUp.batchSizes(resolve(r, "default").config(), 4)).containsExactly(1, 4);
        assertThat(WarmUp.batchSizes(resolve(r, "preferred").config(), 32)).containsExactly(1, 2, 8, 16);
        assertThat(WarmUp.batchSizes(resolve(r, "explicit").config(), 32)).as("capped at max_batch_size 16")
                .containsExactly(3);
    }

    @Test
    void concurrentFirstUsesLoadTheModelOnce() throws Exception {
        repo.echo("a", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);
        ExecutorService pool = Executors.newFixedThreadPool(6);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> runs = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            runs.add(pool.submit(() -> {
                start.await();
                use(cache, r, "a");
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : runs) {
            f.get(30, TimeUnit.SECONDS);
        }
        pool.shutdown();

        assertThat(cache.stats().coldLoads()).isEqualTo(1);
    }

    @Test
    void manyThreadsUsingMoreModelsThanFitAllGetCorrectOutputsWithinTheLimits() throws Exception {
        List<String> models = List.of("m0", "m1", "m2", "m3", "m4", "m5");
        for (String m : models) {
            repo.echo(m, 3 * MIB, "1");
        }
        ModelRepository r = repo.open();
        SimulatedDevice device = new SimulatedDevice("sim:0", 10 * MIB, SpeedModel.CPU_SPEED);
        ModelCache cache = cache(device, settings.withMaxModels(3).withRoomWait(Duration.ofSeconds(30)));
        int threads = 6;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        List<Future<Integer>> runs = new ArrayList<>();
        AtomicLong maxUsed = new AtomicLong();
        for (int t = 0; t < threads; t++) {
            int seed = t;
            runs.add(pool.submit(() -> {
                Random random = new Random(seed);
                int served = 0;
                for (int i = 0; i < 150; i++) {
                    String m = models.get(random.nextInt(models.size()));
                    float v = random.nextInt(1000);
                    try (ModelLease lease = cache.acquire(resolve(r, m))) {
                        maxUsed.accumulateAndGet(device.totalMemoryBytes() - device.freeMemoryBytes(), Math::max);
                        assertThat(cache.loadedCount()).isLessThanOrEqualTo(3);
                        assertThat(lease.model().run(List.of(echoRequest(m, v))).get(0).get(0).asFloats())
                                .containsExactly(v, v + 1, v + 2);
                        served++;
                    }
                }
                return served;
            }));
        }
        int served = 0;
        for (Future<Integer> f : runs) {
            served += f.get(120, TimeUnit.SECONDS);
        }
        pool.shutdown();

        assertThat(served).as("a load waits for a held model rather than failing").isEqualTo(threads * 150);
        assertThat(maxUsed.get()).isLessThanOrEqualTo(10 * MIB);
        assertThat(cache.loadedCount()).isLessThanOrEqualTo(3);
        for (String m : models) {
            assertThat(cache.references(new ModelId(m, "1"))).isZero();
        }
        assertThat(cache.stats().coldLoads()).isEqualTo(models.size());
        assertThat(cache.stats().swapIns()).isPositive();
    }

    @Test
    void aRetiredVersionDrainsThenUnloads() throws Exception {
        repo.echo("a", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);
        ModelId a = new ModelId("a", "1");

        ModelLease lease = cache.acquire(resolve(r, "a"));
        cache.retire(a);
        assertThat(cache.isLoaded(a)).as("still executing").isTrue();
        lease.model().run(List.of(echoRequest("a", 5)));
        lease.close();

        assertThat(cache.isLoaded(a)).isFalse();
        assertThat(cache.reservedBytes()).isZero();
    }

    @Test
    void instanceCountLimitsConcurrentBatchesOnTheSharedSession() throws Exception {
        repo.add("one", "echo-fp32", c -> {
            c.put("instance_count", 1);
            c.putObject("warmup").put("enabled", false);
        }, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(cpu(), settings);
        ModelLease first = cache.acquire(resolve(r, "one"));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        Future<ModelLease> second = pool.submit(() -> cache.acquire(resolve(r, "one")));

        Thread.sleep(200);
        assertThat(second).isNotDone();
        first.close();
        ModelLease got = second.get(10, TimeUnit.SECONDS);
        assertThat(got.model()).isSameAs(first.id().equals(got.id()) ? got.model() : null);
        assertThat(cache.stats().coldLoads()).as("one session shared").isEqualTo(1);
        got.close();
        pool.shutdown();
    }
}
