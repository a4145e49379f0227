package io.flinkgpu.coordinator.plan;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.List;
import org.junit.jupiter.api.Test;

class DrfAllocatorTest {
    private final DrfAllocator drf = new DrfAllocator();

    /** Ghodsi et al. 2011, section 4: 9 CPUs and 18 GB; A's tasks <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>. */
    @Test
    void reproducesTheWorkedExampleOfTheDrfPaper() {
        // memory in GB on the DEVICE_MEMORY axis, CPUs on the CPU axis
        DrfAllocation a = drf.allocate(new ResourceVector(18, 0, 9), List.of(
                new DrfClaimant("A", 1, new ResourceVector(4, 0, 1), Integer.MAX_VALUE),
                new DrfClaimant("B", 1, new ResourceVector(1, 0, 3), Integer.MAX_VALUE)));
        assertThat(a.tasks("A")).isEqualTo(3);
        assertThat(a.tasks("B")).isEqualTo(2);
        assertThat(a.dominantShare("A")).isCloseTo(2.0 / 3, within(1e-9));
        assertThat(a.dominantShare("B")).isCloseTo(2.0 / 3, within(1e-9));
        assertThat(a.used()).isEqualTo(new ResourceVector(14, 0, 9));
        assertThat(a.reason("A")).contains("dominant resource device memory").contains("CPU exhausted");
    }

    @Test
    void weightsScaleTheDominantShares() {
        // one resource, 12 units; weight 2 gets twice the share of weight 1
        DrfAllocation a = drf.allocate(new ResourceVector(12, 0, 0), List.of(
                new DrfClaimant("heavy", 2, new ResourceVector(1, 0, 0), Integer.MAX_VALUE),
                new DrfClaimant("light", 1, new ResourceVector(1, 0, 0), Integer.MAX_VALUE)));
        assertThat(a.tasks("heavy")).isEqualTo(8);
        assertThat(a.tasks("light")).isEqualTo(4);
    }

    @Test
    void spareCapacityGoesToWhoeverCanStillUseIt() {
        // "small" wants only 1 task; the rest of the capacity is not left idle
        DrfAllocation a = drf.allocate(new ResourceVector(10, 10, 10), List.of(
                new DrfClaimant("small", 1, new ResourceVector(1, 1, 1), 1),
                new DrfClaimant("big", 1, new ResourceVector(1, 1, 1), Integer.MAX_VALUE)));
        assertThat(a.tasks("small")).isEqualTo(1);
        assertThat(a.tasks("big")).isEqualTo(9);
        assertThat(a.reason("small")).contains("has all 1 it asked for");
    }

    @Test
    void aClaimantNeedingAResourceThatDoesNotExistGetsNothingAndSaysWhy() {
        DrfAllocation a = drf.allocate(new ResourceVector(10, 0, 4), List.of(
                new DrfClaimant("gpu-only", 1, new ResourceVector(1, 0.5, 0), 3),
                new DrfClaimant("cpu", 1, new ResourceVector(1, 0, 1), 3)));
        assertThat(a.tasks("gpu-only")).isZero();
        assertThat(a.reason("gpu-only")).contains("device time, of which there is none");
        assertThat(a.tasks("cpu")).isEqualTo(3);
    }

    @Test
    void indivisibleTasksStillGetTheirGuaranteedShare() {
        // capacity 10, tasks of 6 and 1, equal weights: plain progressive filling gives (1, 4), which
        // leaves "small" below the 5 tasks that fit in its half; the guarantee phase gives it 5 first
        DrfAllocation a = drf.allocate(new ResourceVector(10, 0, 0), List.of(
                new DrfClaimant("large", 1, new ResourceVector(6, 0, 0), Integer.MAX_VALUE),
                new DrfClaimant("small", 1, new ResourceVector(1, 0, 0), Integer.MAX_VALUE)));
        assertThat(a.guaranteed()).containsEntry("small", 5).containsEntry("large", 0);
        assertThat(a.tasks("small")).isEqualTo(10);
        assertThat(a.tasks("large")).isZero();
        assertThat(a.reason("large")).contains("next instance does not fit: device memory exhausted");
    }
}
