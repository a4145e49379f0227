package io.flinkgpu.inference.cache;

import static org.assertj.core.api.Assertions.assertThat;

import io.flinkgpu.inference.model.ModelId;
import org.junit.jupiter.api.Test;

class HostTierTest {
    static final ModelId A = new ModelId("a", "1");
    static final ModelId B = new ModelId("b", "1");
    static final ModelId C = new ModelId("c", "1");

    @Test
    void keepsCopiesWithinTheBudgetDroppingTheOldestFirst() {
        HostTier tier = new HostTier(10);
        tier.keep(A, new byte[4]);
        tier.keep(B, new byte[4]);
        assertThat(tier.models()).containsExactly(A, B);
        assertThat(tier.bytes()).isEqualTo(8);

        tier.keep(C, new byte[4]);
        assertThat(tier.models()).as("a, kept first, makes room").containsExactly(B, C);
        assertThat(tier.bytes()).isEqualTo(8);
    }

    @Test
    void aCopyKeptAgainReplacesTheOldOneAndBecomesTheNewest() {
        HostTier tier = new HostTier(10);
        tier.keep(A, new byte[4]);
        tier.keep(B, new byte[4]);
        tier.keep(A, new byte[2]);
        assertThat(tier.models()).containsExactly(B, A);
        assertThat(tier.bytes()).isEqualTo(6);
    }

    @Test
    void takeRemovesTheCopyAndNothingLargerThanTheBudgetOrNullIsKept() {
        HostTier tier = new HostTier(10);
        byte[] bytes = new byte[3];
        tier.keep(A, bytes);
        tier.keep(B, new byte[11]);
        tier.keep(C, null);
        assertThat(tier.models()).containsExactly(A);

        assertThat(tier.take(A)).isSameAs(bytes);
        assertThat(tier.take(A)).isNull();
        assertThat(tier.bytes()).isZero();
    }

    @Test
    void clearDropsEverything() {
        HostTier tier = new HostTier(10);
        tier.keep(A, new byte[3]);
        tier.clear();
        assertThat(tier.models()).isEmpty();
        assertThat(tier.bytes()).isZero();
    }
}
