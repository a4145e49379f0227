package io.flinkgpu.bench.report;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.flinkgpu.bench.sut.Ceiling;
import java.util.List;
import org.junit.jupiter.api.Test;

class RooflineTest {
    private static final List<Ceiling.Point> CEILING = List.of(
            new Ceiling.Point("raw", 8, 8000, 1, 1, 10, 0),
            new Ceiling.Point("onnxmodel", 8, 1, 1, 1, 10, 0), // another path: ignored
            new Ceiling.Point("raw", 1, 1000, 1, 1, 10, 0),
            new Ceiling.Point("raw", 32, 10000, 1, 1, 10, 0));

    @Test
    void theCeilingIsInterpolatedLinearlyBetweenMeasuredBatchSizesAndClampedAtTheEnds() {
        assertThat(Roofline.ceilingAt(CEILING, 1)).isEqualTo(1000);
        assertThat(Roofline.ceilingAt(CEILING, 8)).isEqualTo(8000);
        assertThat(Roofline.ceilingAt(CEILING, 4.5)).isCloseTo(4500, within(1e-9));
        assertThat(Roofline.ceilingAt(CEILING, 20)).isCloseTo(9000, within(1e-9));
        assertThat(Roofline.ceilingAt(CEILING, 0.5)).isEqualTo(1000);
        assertThat(Roofline.ceilingAt(CEILING, 128)).isEqualTo(10000);
        assertThat(Roofline.ceilingAt(CEILING, Double.NaN)).isEqualTo(1000); // no batch reported: batch 1
        assertThat(Roofline.ceilingAt(List.of(new Ceiling.Point("onnxmodel", 1, 5, 1, 1, 1, 0)), 1)).isNaN();
    }

    @Test
    void theBoundAddsThePipelinesAndInferencesCostPerRequest() {
        // 1/2000 + 1/2000 s per request: 1000 req/s
        assertThat(Roofline.bound(2000, 2000)).isCloseTo(1000, within(1e-9));
        assertThat(Roofline.bound(3000, 6000)).isCloseTo(2000, within(1e-9));
        // always below both
        assertThat(Roofline.bound(10_000, 4500)).isLessThan(4500);
        assertThat(Roofline.bound(0, 4500)).isNaN();
        assertThat(Roofline.bound(4500, Double.NaN)).isNaN();
        assertThat(Roofline.bound(Double.POSITIVE_INFINITY, 4500)).isNaN();
    }
}
