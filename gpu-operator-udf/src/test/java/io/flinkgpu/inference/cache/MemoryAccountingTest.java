package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.CpuDevice;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MemoryAccountingTest {
    static final long MIB = 1L << 20;

    @TempDir
    Path dir;

    private final CpuDevice device = new CpuDevice("cpu:test", 10 * MIB, 1);
    private final MemoryAccounting accounting = new MemoryAccounting(device);

    private CacheEntry entry(ModelRepository repo, String name) {
        CacheEntry e = new CacheEntry(TestRepository.resolve(repo, name));
        accounting.add(e);
        return e;
    }

    @Test
    void reservesAndReleasesDeviceMemoryWithASlot() {
        ModelRepository repo = new TestRepository(dir).echo("a", 4 * MIB, "1").echo("b", 4 * MIB, "1").open();
        CacheEntry a = entry(repo, "a");
        CacheEntry b = entry(repo, "b");

        assertThat(accounting.reserve(a, 6 * MIB)).isTrue();
        assertThat(accounting.reserve(b, 6 * MIB)).as("4 MiB left").isFalse();
        assertThat(accounting.placedCount()).isEqualTo(1);
        assertThat(accounting.reservedBytes()).isEqualTo(6 * MIB);
        assertThat(device.freeMemoryBytes()).isEqualTo(4 * MIB);

        accounting.release(a);
        assertThat(accounting.reservedBytes()).isZero();
        assertThat(device.freeMemoryBytes()).isEqualTo(10 * MIB);
        assertThat(accounting.reserve(b, 6 * MIB)).isTrue();
    }

    @Test
    void theEstimateIsTheDeclaredMemoryElseTheMeasuredElseTheFileSize() {
        ModelRepository repo = new TestRepository(dir).echo("declared", 3 * MIB, "1")
                .add("undeclared", "echo-fp32", c -> {}, "1").open();
        CacheEntry declared = entry(repo, "declared");
        CacheEntry undeclared = entry(repo, "undeclared");
        ModelConfig config = undeclared.resolved.config();

        assertThat(accounting.estimate(declared.id, declared.resolved.config(), 100)).isEqualTo(3 * MIB);
        assertThat(accounting.estimate(undeclared.id, config, 100)).isEqualTo(100);
        assertThat(accounting.estimate(undeclared.id, config, 0)).isEqualTo(1);
        assertThat(accounting.needsMeasuring(declared)).isFalse();
        assertThat(accounting.needsMeasuring(undeclared)).isTrue();

        accounting.reserve(undeclared, 100);
        assertThat(accounting.adjustToMeasured(undeclared, 2 * MIB)).isTrue();
        assertThat(undeclared.reservedBytes).isEqualTo(2 * MIB);
        assertThat(device.freeMemoryBytes()).isEqualTo(8 * MIB);
        assertThat(accounting.measuredBytes(undeclared.id)).hasValue(2 * MIB);
        assertThat(accounting.estimate(undeclared.id, config, 100)).isEqualTo(2 * MIB);
        assertThat(accounting.needsMeasuring(undeclared)).isFalse();
        assertThat(accounting.adjustToMeasured(undeclared, 2 * MIB)).as("unchanged").isFalse();
    }

    @Test
    void aMeasuredSizeThatDoesNotFitLeavesTheEstimateAccounted() {
        ModelRepository repo = new TestRepository(dir).add("m", "echo-fp32", c -> {}, "1").open();
        CacheEntry m = entry(repo, "m");
        accounting.reserve(m, MIB);

        assertThat(accounting.adjustToMeasured(m, 11 * MIB)).isTrue();
        assertThat(m.reservedBytes).isEqualTo(MIB);
        assertThat(device.freeMemoryBytes()).isEqualTo(9 * MIB);
        assertThat(accounting.measuredBytes(m.id)).as("remembered for the next load").hasValue(11 * MIB);
    }

    @Test
    void leasesAndResidentModelsInUseOrder() {
        ModelRepository repo = new TestRepository(dir).echo("a", MIB, "1").echo("b", MIB, "1").open();
        CacheEntry a = entry(repo, "a");
        CacheEntry b = entry(repo, "b");
        a.state = CacheEntry.State.READY;
        b.state = CacheEntry.State.READY;
        a.useSequence = 2;
        b.useSequence = 1;

        accounting.hold(a);
        accounting.hold(a);
        accounting.letGo(a);
        assertThat(accounting.references(a.id)).isEqualTo(1);
        assertThat(accounting.references(new ModelId("none", "1"))).isZero();
        assertThat(accounting.residentModels()).containsExactly(b.id, a.id);
        assertThat(accounting.isLoaded(a.id)).isTrue();
        assertThat(accounting.isCurrent(a)).isTrue();

        accounting.remove(a.id);
        assertThat(accounting.isCurrent(a)).isFalse();
        assertThat(accounting.isLoaded(a.id)).isFalse();
    }
}
