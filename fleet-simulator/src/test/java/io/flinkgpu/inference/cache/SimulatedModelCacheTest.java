package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.device.SimulatedDevice;
import io.flinkgpu.inference.device.SpeedModel;
import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import io.flinkgpu.inference.model.TensorSpec;
import io.flinkgpu.inference.protocol.DataType;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class SimulatedModelCacheTest {
    private long now;

    private static ModelRepository.ResolvedModel model(String name, long bytes) {
        ModelConfig c = new ModelConfig(name, "onnxruntime", 8,
                List.of(new TensorSpec("x", DataType.FP32, new long[] {-1, 1}, null)), null, null, null, null, bytes,
                null, null, null, 0.0, null, null, null);
        return new ModelRepository.ResolvedModel(new ModelId(name, "1"), c, Path.of(name));
    }

    private SimulatedModelCache cache(int maxModels, long memory, boolean evict, Duration timeout) {
        SimulatedDevice d = new SimulatedDevice("sim:0", memory, SpeedModel.linear(1, 0));
        return new SimulatedModelCache(d, ModelCacheSettings.DEFAULTS.withMaxModels(maxModels)
                .withEvictionTimeout(timeout), () -> now, evict);
    }

    private void load(SimulatedModelCache c, ModelRepository.ResolvedModel m) {
        assertThat(c.ensure(m, 1)).isEqualTo(SimulatedModelCache.Outcome.LOADING);
        c.loaded(m.id());
        now += 10;
    }

    @Test
    void theSlotLimitEvictsTheLeastRecentlyUsedModel() {
        SimulatedModelCache c = cache(2, 1L << 30, true, Duration.ZERO);
        var a = model("a", 4 << 20);
        var b = model("b", 4 << 20);
        load(c, a);
        load(c, b);
        c.hold(a.id());
        c.release(a.id()); // a used after b
        load(c, model("c", 4 << 20));
        assertThat(c.residentModels()).containsExactlyInAnyOrder(a.id(), new ModelId("c", "1"));
        assertThat(c.evictions()).isEqualTo(1);
    }

    @Test
    void memoryEvictsUnpinnedModelsFirstAndNeverOneInUse() {
        SimulatedModelCache c = cache(10, 20L << 20, true, Duration.ZERO);
        var a = model("a", 8 << 20);
        var b = model("b", 8 << 20);
        load(c, a);
        load(c, b);
        c.pin(a.id());
        load(c, model("c", 8 << 20)); // b (unpinned) goes before the pinned a, though a was used first
        assertThat(c.isLoaded(a.id())).isTrue();
        assertThat(c.isLoaded(b.id())).isFalse();
        var cid = new ModelId("c", "1");
        c.hold(cid); // c executes: it cannot go; the pinned a goes, as no unpinned model can
        load(c, model("d", 8 << 20));
        assertThat(c.isLoaded(cid)).isTrue();
        assertThat(c.isLoaded(a.id())).isFalse();
        c.hold(new ModelId("d", "1")); // both in use: nothing may leave for room
        assertThat(c.ensure(model("e", 8 << 20), 1)).isEqualTo(SimulatedModelCache.Outcome.NO_ROOM);
        assertThat(c.reservedBytes()).isLessThanOrEqualTo(20L << 20);
    }

    @Test
    void withoutEvictionAModelThatDoesNotFitIsRefused() {
        SimulatedModelCache c = cache(10, 20L << 20, false, Duration.ZERO);
        load(c, model("a", 12 << 20));
        assertThat(c.ensure(model("b", 12 << 20), 1)).isEqualTo(SimulatedModelCache.Outcome.NO_ROOM);
        assertThat(c.evictions()).isZero();
        assertThat(c.ensure(model("huge", 40 << 20), 1)).isEqualTo(SimulatedModelCache.Outcome.NO_ROOM);
    }

    @Test
    void idleModelsLeaveAfterTheTimeoutUnlessPinned() {
        SimulatedModelCache c = cache(10, 1L << 30, true, Duration.ofSeconds(1));
        var a = model("a", 1 << 20);
        var b = model("b", 1 << 20);
        load(c, a);
        load(c, b);
        c.pin(b.id());
        now += 2_000_000_000L;
        assertThat(c.evictIdle(now)).containsExactly(a.id());
        assertThat(c.isLoaded(b.id())).isTrue();
        c.unload(b.id());
        assertThat(c.holds(b.id())).isFalse();
    }
}
