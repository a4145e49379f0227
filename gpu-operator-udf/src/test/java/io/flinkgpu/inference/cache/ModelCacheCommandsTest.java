package io.flinkgpu.inference.cache;

import static io.flinkgpu.inference.cache.TestRepository.echoRequest;
import static io.flinkgpu.inference.cache.TestRepository.resolve;
import static org.assertj.core.api.Assertions.assertThat;

import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.device.Device;
import io.flinkgpu.inference.device.DeviceKind;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** LOAD/UNLOAD commands (pinning) and memory measured on a model's first load. */
class ModelCacheCommandsTest {
    static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final List<ModelCache> caches = new ArrayList<>();
    private final ModelCacheSettings settings = ModelCacheSettings.DEFAULTS.withBackgroundEviction(false)
            .withWarmupWorkers(0).withRoomWait(Duration.ZERO);

    @AfterEach
    void close() {
        caches.forEach(ModelCache::close);
    }

    private ModelCache cache(Device device, ModelCacheSettings s) {
        ModelCache c = new ModelCache(device, s, now::get, ModelCache.Listener.NONE);
        caches.add(c);
        return c;
    }

    private static void use(ModelCache cache, ModelRepository r, String name) throws Exception {
        try (ModelLease lease = cache.acquire(resolve(r, name))) {
            assertThat(lease.model().run(List.of(echoRequest(name, 1))).get(0).get(0).asFloats())
                    .containsExactly(1, 2, 3);
        }
    }

    private static List<String> names(List<ModelId> ids) {
        return ids.stream().map(ModelId::name).toList();
    }

    @Test
    void aLoadCommandLoadsAheadOfTrafficAndKeepsTheModelThroughIdleEviction() throws Exception {
        TestRepository repo = new TestRepository(dir).echo("pinned", MIB, "1").echo("other", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(new CpuDevice("cpu:0", 1L << 30, 1), settings.withEvictionTimeout(Duration.ofSeconds(10)));

        cache.pin(resolve(r, "pinned"));
        assertThat(cache.isLoaded(new ModelId("pinned", "1"))).as("loaded before any request").isTrue();
        assertThat(cache.stats().coldLoads()).isEqualTo(1);
        use(cache, r, "other");

        now.addAndGet(Duration.ofSeconds(60).toNanos());
        assertThat(names(cache.evictIdle())).containsExactly("other");
        assertThat(names(cache.residentModels())).containsExactly("pinned");
        use(cache, r, "pinned");
        assertThat(cache.stats().coldLoads()).as("the first request found it loaded").isEqualTo(2);
    }

    @Test
    void pinnedModelsAreEvictedForRoomOnlyAfterUnpinnedOnes() throws Exception {
        TestRepository repo = new TestRepository(dir);
        for (String m : List.of("p", "a", "b")) {
            repo.echo(m, MIB, "1");
        }
        ModelRepository r = repo.open();
        ModelCache cache = cache(new CpuDevice("cpu:0", 1L << 30, 1), settings.withMaxModels(2));

        cache.pin(resolve(r, "p")); // least recently used of all from here on
        use(cache, r, "a");
        use(cache, r, "b"); // needs a slot: evicts a, not the older but pinned p

        assertThat(names(cache.residentModels())).containsExactlyInAnyOrder("p", "b");
        assertThat(cache.pinnedModels()).containsExactly(new ModelId("p", "1"));
    }

    @Test
    void anUnloadCommandUnpinsAndUnloadsOnceTheLastBatchIsDone() throws Exception {
        TestRepository repo = new TestRepository(dir).echo("m", MIB, "1");
        ModelRepository r = repo.open();
        ModelCache cache = cache(new CpuDevice("cpu:0", 1L << 30, 1), settings);
        ModelId id = new ModelId("m", "1");
        cache.pin(resolve(r, "m"));

        ModelLease batch = cache.acquire(resolve(r, "m"));
        cache.unload(id);
        assertThat(cache.isLoaded(id)).as("a batch still runs on it").isTrue();
        assertThat(cache.pinnedModels()).isEmpty();
        batch.close();
        assertThat(cache.isLoaded(id)).isFalse();

        use(cache, r, "m"); // a straggler request loads it again (from the host tier)
        assertThat(cache.stats().swapIns()).isEqualTo(1);
    }

    @Test
    void withoutDeclaredMemoryTheFirstLoadIsMeasuredAndLaterLoadsAccountTheMeasuredSize() throws Exception {
        TestRepository repo = new TestRepository(dir)
                .add("measured", "echo-fp32", c -> c.putObject("warmup").put("enabled", false), "1")
                .echo("declared", 5 * MIB, "1");
        ModelRepository r = repo.open();
        long fileBytes = Files.size(dir.resolve("measured/1/model.onnx"));
        // the device reports 40 MiB in use before the load and 43 MiB after it: the session took 3 MiB
        ScriptedMemoryDevice device = new ScriptedMemoryDevice(40 * MIB, 43 * MIB);
        ModelCache cache = cache(device, settings.withEvictionTimeout(Duration.ofSeconds(1)));
        ModelId id = new ModelId("measured", "1");

        use(cache, r, "measured");
        assertThat(fileBytes).isLessThan(3 * MIB);
        assertThat(cache.measuredBytes(id)).hasValue(3 * MIB);
        assertThat(cache.reservedBytes()).isEqualTo(3 * MIB);
        assertThat(device.usedBytes()).isEqualTo(3 * MIB);

        use(cache, r, "declared"); // a declared memory_bytes is taken as it is, never measured
        assertThat(cache.measuredBytes(new ModelId("declared", "1"))).isEmpty();
        assertThat(cache.reservedBytes()).isEqualTo(8 * MIB);
        assertThat(device.readings.isEmpty()).as("only the first load was measured").isTrue();

        now.addAndGet(Duration.ofSeconds(5).toNanos());
        cache.evictIdle();
        assertThat(device.usedBytes()).isZero();
        use(cache, r, "measured"); // swap-in: reserves the measured size up front
        assertThat(cache.reservedBytes()).isEqualTo(3 * MIB);
    }

    @Test
    void aMeasurementBelowTheFileSizeAccountsTheFileSize() throws Exception {
        TestRepository repo = new TestRepository(dir)
                .add("m", "echo-fp32", c -> c.putObject("warmup").put("enabled", false), "1");
        ModelRepository r = repo.open();
        long fileBytes = Files.size(dir.resolve("m/1/model.onnx"));
        ModelCache cache = cache(new ScriptedMemoryDevice(40 * MIB, 40 * MIB), settings);

        use(cache, r, "m");

        assertThat(cache.measuredBytes(new ModelId("m", "1"))).hasValue(fileBytes);
    }

    @Test
    void theCpuDeviceMeasuresARealModelFromResidentMemory() throws Exception {
        TestRepository repo = new TestRepository(dir)
                .add("m", "echo-fp32", c -> c.putObject("warmup").put("enabled", false), "1");
        ModelRepository r = repo.open();
        CpuDevice cpu = new CpuDevice("cpu:0", 1L << 30, 1);
        assertThat(cpu.memoryInUseBytes()).as("resident memory of this JVM").isPresent();
        assertThat(cpu.memoryInUseBytes().getAsLong()).isGreaterThan(10 * MIB);
        ModelCache cache = cache(cpu, settings);

        use(cache, r, "m");

        long fileBytes = Files.size(dir.resolve("m/1/model.onnx"));
        assertThat(cache.measuredBytes(new ModelId("m", "1")).getAsLong()).isGreaterThanOrEqualTo(fileBytes);
        assertThat(cache.reservedBytes()).isEqualTo(cache.measuredBytes(new ModelId("m", "1")).getAsLong());
    }

    /** A CPU device that reports scripted memory-in-use readings, one per call. */
    static final class ScriptedMemoryDevice implements Device {
        final CpuDevice cpu = new CpuDevice("scripted:0", 1L << 30, 1);
        final Deque<Long> readings = new ArrayDeque<>();

        ScriptedMemoryDevice(long... readings) {
            for (long r : readings) {
                this.readings.add(r);
            }
        }

        long usedBytes() {
            return cpu.totalMemoryBytes() - cpu.freeMemoryBytes();
        }

        @Override
        public OptionalLong memoryInUseBytes() {
            Long next = readings.poll();
            return next == null ? OptionalLong.empty() : OptionalLong.of(next);
        }

        @Override
        public String id() {
            return cpu.id();
        }

        @Override
        public DeviceKind kind() {
            return DeviceKind.CPU;
        }

        @Override
        public long totalMemoryBytes() {
            return cpu.totalMemoryBytes();
        }

        @Override
        public long freeMemoryBytes() {
            return cpu.freeMemoryBytes();
        }

        @Override
        public boolean isHealthy() {
            return true;
        }

        @Override
        public OrtSession.SessionOptions newSessionOptions() throws OrtException {
            return cpu.newSessionOptions();
        }

        @Override
        public OrtSession createSession(OrtEnvironment env, byte[] model) throws OrtException {
            return cpu.createSession(env, model);
        }

        @Override
        public boolean reserve(long bytes) {
            return cpu.reserve(bytes);
        }

        @Override
        public void release(long bytes) {
            cpu.release(bytes);
        }
    }
}
