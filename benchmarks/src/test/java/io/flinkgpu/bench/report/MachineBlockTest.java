package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The machine block tells apart hosts that share a model name by their clock and vector instruction sets. */
class MachineBlockTest {
    @Test
    void theFirstProcessorsModelClockAndVectorSetsAreRecorded() {
        List<String> cpuinfo = List.of(
                "processor\t: 0",
                "vendor_id\t: AuthenticAMD",
                "model name\t: AMD EPYC",
                "cpu MHz\t\t: 2445.404",
                "flags\t\t: fpu sse4_2 avx2 fma sha_ni avx avx512f avx512_vnni",
                "",
                "processor\t: 1",
                "model name\t: another",
                "cpu MHz\t\t: 1000.000",
                "flags\t\t: fpu amx_tile");
        Map<String, Object> cpu = Report.cpuInfo(cpuinfo);
        assertThat(cpu).containsEntry("cpu", "AMD EPYC").containsEntry("cpu_mhz", 2445.404);
        // in the documented order, only the vector sets, only the first processor's
        assertThat(cpu.get("cpu_vector_flags")).isEqualTo(List.of("sse4_2", "avx", "avx2", "fma", "avx512f",
                "avx512_vnni"));
        assertThat(Report.cpuLine(cpu)).isEqualTo("AMD EPYC, 2445 MHz, sse4_2 avx avx2 fma avx512f avx512_vnni");
    }

    @Test
    void whatTheKernelDoesNotSayIsLeftOut() {
        Map<String, Object> cpu = Report.cpuInfo(List.of("processor\t: 0", "cpu MHz\t\t: n/a"));
        assertThat(cpu).containsEntry("cpu", "unknown").containsEntry("cpu_mhz", null);
        assertThat(cpu.get("cpu_vector_flags")).isEqualTo(List.of());
        assertThat(Report.cpuLine(cpu)).isEqualTo("unknown");
        // a machine block written before the clock and the sets were recorded
        assertThat(Report.cpuLine(Map.of("cpu", "Intel(R) Xeon(R) Processor"))).isEqualTo("Intel(R) Xeon(R) Processor");
    }
}
