package io.flinkgpu.bench.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class PressureTest {
    private static final String CPU = "some avg10=7.55 avg60=12.96 avg300=18.29 total=20292178978\n"
            + "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
    private static final String IO = "some avg10=0.00 avg60=0.08 avg300=0.25 total=490322742\n"
            + "full avg10=0.00 avg60=0.03 avg300=0.10 total=168148352\n";
    private static final String MEMORY = "some avg10=0.00 avg60=0.00 avg300=0.00 total=12\n"
            + "full avg10=0.00 avg60=0.00 avg300=0.00 total=5\n";

    @Test
    void theTotalsAreReadFromEachFilesSomeAndFullLines() {
        Pressure.Totals t = Pressure.parse(CPU, IO, MEMORY);
        assertThat(t).isEqualTo(new Pressure.Totals(20292178978L, 490322742L, 168148352L, 12, 5));
    }

    @Test
    void aCpuFileWithoutAFullLineAsOlderKernelsWriteItReadsAsNoFullStall() {
        assertThat(Pressure.total("some avg10=0.00 avg60=0.00 avg300=0.00 total=42\n", "full")).isZero();
        assertThatThrownBy(() -> Pressure.total("full avg10=0.00 total=1\n", "some"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Pressure.total("some avg10=0.00\n", "some"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aPointsStallsAreTheDifferencesInMillisecondsAndItsWorstWindowIsTheLargestIoStep() {
        Pressure.Totals start = new Pressure.Totals(1_000, 2_000, 500, 0, 0);
        Pressure.Readings readings = new Pressure.Readings(start);
        readings.add(new Pressure.Totals(51_000, 12_000, 600, 0, 0)); // warm-up: 10 ms of I/O stall
        readings.add(null); // a reading that failed changes nothing
        readings.add(new Pressure.Totals(52_000, 412_000, 300_600, 7_000, 1_000)); // a window: 400 ms
        readings.add(new Pressure.Totals(53_000, 413_000, 300_600, 7_000, 1_000)); // a quiet window: 1 ms
        Pressure.Stalls s = readings.stalls();
        assertThat(s.cpuSomeMs()).isEqualTo(52.0);
        assertThat(s.ioSomeMs()).isEqualTo(411.0);
        assertThat(s.ioFullMs()).isEqualTo(300.1);
        assertThat(s.memorySomeMs()).isEqualTo(7.0);
        assertThat(s.memoryFullMs()).isEqualTo(1.0);
        assertThat(s.ioSomeMostInAWindowMs()).isEqualTo(400.0);
    }

    @Test
    void theMachineIsReadWhereTheKernelReportsPressure() {
        boolean reported = Files.isReadable(Path.of("/proc/pressure/io"));
        Pressure.Readings readings = Pressure.Readings.start();
        assertThat(readings != null).isEqualTo(reported);
        if (readings != null) {
            readings.sample();
            assertThat(readings.stalls().ioSomeMs()).isGreaterThanOrEqualTo(0);
        }
    }
}
