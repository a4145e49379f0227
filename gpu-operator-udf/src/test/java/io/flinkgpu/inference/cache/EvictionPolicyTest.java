package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.ModelConfig;
import io.flinkgpu.inference.model.ModelId;
import io.flinkgpu.inference.model.ModelRepository;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class EvictionPolicyTest {
    static final ModelConfig CONFIG = TestRepository.resolve(ModelRepository.open(TestRepository.TEST_MODELS), "echo-fp32")
            .config();
    static final long SECOND = 1_000_000_000L;

    private final AtomicLong now = new AtomicLong(100 * SECOND);
    private final EvictionPolicy policy = new EvictionPolicy(ModelCacheSettings.DEFAULTS.withMaxModels(2)
            .withEvictionTimeout(Duration.ofSeconds(10)).withBackgroundEviction(false), now::get, "test", () -> {});

    private static CacheEntry entry(String name) {
        return new CacheEntry(new ModelRepository.ResolvedModel(new ModelId(name, "1"), CONFIG, Path.of("unused")));
    }

    private CacheEntry ready(String name) {
        CacheEntry e = entry(name);
        e.state = CacheEntry.State.READY;
        policy.touch(e);
        return e;
    }

    @Test
    void theVictimIsTheLeastRecentlyUsedModelNoOneHoldsUnpinnedFirst() {
        CacheEntry a = ready("a");
        CacheEntry b = ready("b");
        CacheEntry c = ready("c");
        CacheEntry loading = entry("loading");
        List<CacheEntry> all = List.of(loading, c, b, a);

        assertThat(policy.victim(all, null)).isSameAs(a);
        assertThat(policy.victim(all, a)).as("not the one loading").isSameAs(b);
        a.refs = 1;
        assertThat(policy.victim(all, null)).as("a is held").isSameAs(b);
        policy.pin(b.id);
        assertThat(policy.victim(all, null)).as("b is pinned").isSameAs(c);
        policy.touch(c);
        policy.pin(c.id);
        assertThat(policy.victim(all, null)).as("only pinned ones left: the least recently used").isSameAs(b);
        policy.unpin(b.id);
        assertThat(policy.pinned()).containsExactly(c.id);
    }

    @Test
    void idleModelsTimeOutOldestFirstExceptPinnedAndHeldOnes() {
        CacheEntry a = ready("a");
        now.addAndGet(SECOND);
        CacheEntry b = ready("b");
        CacheEntry c = ready("c");
        CacheEntry d = ready("d");
        c.refs = 1;
        policy.pin(d.id);
        List<CacheEntry> all = List.of(d, c, b, a);

        assertThat(policy.timedOut(all, now.get() + 9 * SECOND)).containsExactly(a);
        assertThat(policy.timedOut(all, now.get() + 10 * SECOND)).containsExactly(a, b);
        assertThat(policy.evictsIdle()).isTrue();
    }

    @Test
    void slotsAreCappedAtMaxModelsPerDevice() {
        assertThat(policy.hasSlot(1)).isTrue();
        assertThat(policy.hasSlot(2)).isFalse();
        assertThat(policy.maxModels()).isEqualTo(2);
    }

    @Test
    void aZeroTimeoutTurnsIdleEvictionOff() {
        EvictionPolicy off = new EvictionPolicy(ModelCacheSettings.DEFAULTS.withEvictionTimeout(Duration.ZERO),
                now::get, "test", () -> {});
        assertThat(off.evictsIdle()).isFalse();
        off.close();
    }
}
