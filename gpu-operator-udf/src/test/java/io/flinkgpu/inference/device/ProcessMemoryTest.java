package io.flinkgpu.inference.device;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

class ProcessMemoryTest {
    @Test
    void anonymousResidentMemoryIsResidentLessSharedPages() {
        // size resident shared text lib data dt, in 4 KiB pages
        assertThat(ProcessMemory.parseStatm("900000 30000 7000 1 0 50000 0\n"))
                .isEqualTo(OptionalLong.of(23000 * ProcessMemory.PAGE_BYTES));
        assertThat(ProcessMemory.parseStatm("10 5 9 1 0 5 0")).isEqualTo(OptionalLong.of(0));
        assertThat(ProcessMemory.parseStatm("10 5")).isEmpty();
        assertThat(ProcessMemory.parseStatm("10 x 3")).isEmpty();
    }

    @Test
    void thisProcessHasAnonymousMemoryAndItGrowsWithAnAllocationItTouches() {
        long before = ProcessMemory.anonymousResidentBytes().orElseThrow();
        java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocateDirect(64 << 20);
        for (int i = 0; i < buffer.capacity(); i += 4096) {
            buffer.put(i, (byte) 1); // touch every page
        }
        long after = ProcessMemory.anonymousResidentBytes().orElseThrow();
        assertThat(before).isPositive();
        assertThat(after - before).as("64 MiB touched").isGreaterThanOrEqualTo(48L << 20);
        assertThat(buffer.get(4096)).isEqualTo((byte) 1);
    }
}
