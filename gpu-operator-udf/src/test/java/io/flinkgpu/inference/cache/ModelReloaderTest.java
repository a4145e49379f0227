package io.flinkgpu.inference.cache;

import static io.flinkgpu.inference.cache.TestRepository.resolve;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.protocol.ErrorCode;
import io.flinkgpu.inference.protocol.ProtocolException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelReloaderTest {
    static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong();
    private final List<String> seenAtLoad = new CopyOnWriteArrayList<>();
    private ModelCache cache;

    @AfterEach
    void close() {
        if (cache != null) {
            cache.close();
        }
    }

    /** A cache that records, whenever a version finishes loading, which version the repository serves by default then. */
    private ModelCache cache(ModelRepository repository) {
        cache = new ModelCache(new CpuDevice("cpu:0", 1L << 30, 1), ModelCacheSettings.DEFAULTS
                .withBackgroundEviction(false).withWarmupWorkers(2), now::get, new ModelCache.Listener() {
                    @Override
                    public void loaded(ModelId id, long nanos, boolean fromHost) {
                        seenAtLoad.add(id + " loaded while default is " + resolve(repository, id.name()).id());
                    }
                });
        return cache;
    }

    private static ErrorCode resolveError(ModelRepository repo, String name, String version) {
        ProtocolException e = catchThrowableOfType(ProtocolException.class, () -> repo.resolve(name, version));
        return e == null ? null : e.code();
    }

    private static ObjectNode latest(ObjectNode config, int n) {
        config.putObject("version_policy").putObject("latest").put("num_versions", n);
        return config;
    }

    @Test
    void aNewVersionIsLoadedAndWarmedUpBeforeTrafficMovesToIt() throws Exception {
        TestRepository files = new TestRepository(dir).add("m", "echo-fp32", c -> {}, "1");
        ModelRepository repo = files.open();
        ModelReloader reloader = new ModelReloader(repo, cache(repo));
        cache.preload(resolve(repo, "m"));
        files.addVersion("m", "echo-fp32", "2");

        ModelReloader.Report report = reloader.reload();

        assertThat(seenAtLoad).containsExactly("m:1 loaded while default is m:1", "m:2 loaded while default is m:1");
        assertThat(resolve(repo, "m").id()).isEqualTo(new ModelId("m", "2"));
        assertThat(cache.isLoaded(new ModelId("m", "2"))).isTrue();
        assertThat(report.published()).containsExactly("m");
        assertThat(report.retired()).as("the default policy keeps serving version 1 to requests that name it").isEmpty();
        assertThat(repo.resolve("m", "1").id().version()).isEqualTo("1");
        assertThat(reloader.reload().changedAnything()).as("nothing changed on disk").isFalse();
    }

    @Test
    void theOldVersionDrainsThenUnloadsWhenThePolicyDropsIt() throws Exception {
        TestRepository files = new TestRepository(dir).add("m", "echo-fp32", c -> latest(c, 1), "1");
        ModelRepository repo = files.open();
        ModelReloader reloader = new ModelReloader(repo, cache(repo));
        ModelId v1 = new ModelId("m", "1");
        ModelLease executing = cache.acquire(resolve(repo, "m"));
        files.addVersion("m", "echo-fp32", "2");

        ModelReloader.Report report = reloader.reload();

        assertThat(report.retired()).containsExactly(v1);
        assertThat(resolveError(repo, "m", "1")).isEqualTo(ErrorCode.UNKNOWN_VERSION);
        assertThat(repo.resolveConfig(v1).name()).as("queued requests pinned to 1 can still be batched").isEqualTo("m");
        assertThat(cache.isLoaded(v1)).as("its batch is still running").isTrue();
        executing.model().run(List.of(TestRepository.echoRequest("m", 1)));
        executing.close();
        assertThat(cache.isLoaded(v1)).isFalse();
        assertThat(cache.residentModels()).containsExactly(new ModelId("m", "2"));
    }

    @Test
    void aCorruptNewVersionIsNotServedAndTheOldOneKeepsServing() throws Exception {
        TestRepository files = new TestRepository(dir).add("m", "echo-fp32", c -> latest(c, 1), "1")
                .add("other", "echo-fp32", c -> {}, "1");
        ModelRepository repo = files.open();
        ModelReloader reloader = new ModelReloader(repo, cache(repo));
        files.addVersion("m", "echo-fp32", "2").corrupt("m", "2");

        ModelReloader.Report report = reloader.reload();

        assertThat(report.failed()).containsOnlyKeys("m");
        assertThat(report.failed().get("m")).contains("cannot load m:2");
        assertThat(resolve(repo, "m").id().version()).isEqualTo("1");
        try (ModelLease lease = cache.acquire(resolve(repo, "m"))) {
            assertThat(lease.model().run(List.of(TestRepository.echoRequest("m", 7))).get(0).get(0).asFloats())
                    .containsExactly(7, 8, 9);
        }

        Files.copy(TestRepository.TEST_MODELS.resolve("echo-fp32/1/model.onnx"), dir.resolve("m/2/model.onnx"),
                java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        now.addAndGet(Duration.ofMinutes(1).toNanos());
        assertThat(reloader.reload().published()).containsExactly("m");
        assertThat(resolve(repo, "m").id().version()).isEqualTo("2");
    }

    @Test
    void newModelsArePublishedAtOnceRemovedOnesStopAndConfigChangesApply() throws Exception {
        TestRepository files = new TestRepository(dir).add("stays", "echo-fp32", c -> {}, "1")
                .add("goes", "echo-fp32", c -> {}, "1");
        ModelRepository repo = files.open();
        ModelReloader reloader = new ModelReloader(repo, cache(repo));
        cache.preload(resolve(repo, "goes"));
        files.add("new", "affine-fp32", c -> {}, "1").add("stays", "echo-fp32", c -> c.put("max_batch_size", 4));
        try (var walk = Files.walk(dir.resolve("goes"))) {
            walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }

        ModelReloader.Report report = reloader.reload();

        assertThat(report.published()).containsExactly("goes", "new", "stays");
        assertThat(report.retired()).containsExactly(new ModelId("goes", "1"));
        assertThat(repo.modelNames()).containsExactly("new", "stays");
        assertThat(resolveError(repo, "goes", null)).isEqualTo(ErrorCode.UNKNOWN_MODEL);
        assertThat(resolve(repo, "stays").config().maxBatchSize()).isEqualTo(4);
        assertThat(cache.isLoaded(new ModelId("new", "1"))).as("loads on first request").isFalse();
        assertThat(cache.isLoaded(new ModelId("goes", "1"))).isFalse();
    }

    @Test
    void versionPoliciesChooseWhichVersionsAreServed() throws Exception {
        TestRepository files = new TestRepository(dir)
                .add("all", "echo-fp32", c -> {}, "1", "2", "3")
                .add("latest2", "echo-fp32", c -> latest(c, 2), "1", "2", "3")
                .add("specific", "echo-fp32", c -> c.putObject("version_policy").putObject("specific")
                        .putArray("versions").add(1).add(3).add(9), "1", "2", "3")
                .add("none", "echo-fp32", c -> c.putObject("version_policy").putObject("specific")
                        .putArray("versions").add(7), "1")
                .add("two-policies", "echo-fp32", c -> {
                    c.putObject("version_policy").putObject("all");
                    ((ObjectNode) c.get("version_policy")).putObject("latest").put("num_versions", 1);
                }, "1");

        ModelRepository repo = files.open();

        Map<String, ModelRepository.ModelEntry> served = repo.served();
        assertThat(served.get("all").versionFiles()).containsOnlyKeys("1", "2", "3");
        assertThat(served.get("latest2").versionFiles()).containsOnlyKeys("2", "3");
        assertThat(served.get("specific").versionFiles()).containsOnlyKeys("1", "3");
        assertThat(served.get("specific").defaultVersion()).isEqualTo("3");
        assertThat(served).doesNotContainKeys("none", "two-policies");
        assertThat(resolveError(repo, "latest2", "1")).isEqualTo(ErrorCode.UNKNOWN_VERSION);
        assertThat(resolveError(repo, "specific", "2")).isEqualTo(ErrorCode.UNKNOWN_VERSION);
    }
}
