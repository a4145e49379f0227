package io.flinkgpu.inference.protocol;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Checks binary16 conversions against the IEEE 754 definition, not against the implementation. */
class Fp16Test {

    /** The value of a binary16 bit pattern by the IEEE 754 formula, computed in double. */
    private static double formula(int bits) {
        int sign = (bits >>> 15) & 1;
        int exponent = (bits >>> 10) & 0x1f;
        int mantissa = bits & 0x3ff;
        double s = sign == 1 ? -1 : 1;
        if (exponent == 0x1f) {
            return mantissa == 0 ? s * Double.POSITIVE_INFINITY : Double.NaN;
        }
        if (exponent == 0) {
            return s * Math.pow(2, -14) * (mantissa / 1024.0);
        }
        return s * Math.pow(2, exponent - 15) * (1 + mantissa / 1024.0);
    }

    @Test
    void representativeValuesHaveTheirIeeeEncodings() {
        assertThat(Fp16.fromFloat(0f)).isEqualTo((short) 0x0000);
        assertThat(Fp16.fromFloat(-0f)).isEqualTo((short) 0x8000);
        assertThat(Fp16.fromFloat(1f)).isEqualTo((short) 0x3c00);
        assertThat(Fp16.fromFloat(-2f)).isEqualTo((short) 0xc000);
        assertThat(Fp16.fromFloat(65504f)).isEqualTo((short) 0x7bff);
        assertThat(Fp16.fromFloat(0x1p-14f)).as("smallest normal").isEqualTo((short) 0x0400);
        assertThat(Fp16.fromFloat(0x1p-24f)).as("smallest subnormal").isEqualTo((short) 0x0001);
        assertThat(Fp16.fromFloat(0x3ffp-24f)).as("largest subnormal").isEqualTo((short) 0x03ff);
        assertThat(Fp16.fromFloat(Float.POSITIVE_INFINITY)).isEqualTo((short) 0x7c00);
        assertThat(Fp16.fromFloat(Float.NEGATIVE_INFINITY)).isEqualTo((short) 0xfc00);
        short nan = Fp16.fromFloat(Float.NaN);
        assertThat(nan & 0x7c00).as("NaN exponent all ones").isEqualTo(0x7c00);
        assertThat(nan & 0x03ff).as("NaN mantissa non-zero").isNotZero();
    }

    @Test
    void representativeValuesRoundTrip() {
        for (float v : new float[] {0f, 1f, -1f, 0.5f, 65504f, -65504f, 0x1p-14f, 0x1p-24f, -0x1p-24f, 0x3ffp-24f,
            0.333251953125f, 1024f, 2049f - 1f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY}) {
            assertThat(Fp16.toFloat(Fp16.fromFloat(v))).as("%s", v).isEqualTo(v);
        }
        assertThat(Float.floatToRawIntBits(Fp16.toFloat(Fp16.fromFloat(-0f)))).isEqualTo(Float.floatToRawIntBits(-0f));
        assertThat(Fp16.toFloat(Fp16.fromFloat(Float.NaN))).isNaN();
    }

    @Test
    void everyBitPatternDecodesToTheIeeeFormula() {
        for (int bits = 0; bits <= 0xffff; bits++) {
            float actual = Fp16.toFloat((short) bits);
            double expected = formula(bits);
            if (Double.isNaN(expected)) {
                assertThat(actual).as("0x%04x", bits).isNaN();
            } else {
                assertThat((double) actual).as("0x%04x", bits).isEqualTo(expected);
                assertThat(Math.copySign(1.0, actual)).as("sign of 0x%04x", bits)
                        .isEqualTo((bits & 0x8000) != 0 ? -1.0 : 1.0);
            }
        }
    }

    @Test
    void everyNonNanBitPatternRoundTripsThroughFloat() {
        for (int bits = 0; bits <= 0xffff; bits++) {
            if (Double.isNaN(formula(bits))) {
                assertThat(Fp16.toFloat(Fp16.fromFloat(Fp16.toFloat((short) bits)))).isNaN();
                continue;
            }
            assertThat(Fp16.fromFloat(Fp16.toFloat((short) bits)) & 0xffff).as("0x%04x", bits).isEqualTo(bits);
        }
    }

    @Test
    void roundsToNearestWithTiesToEvenBetweenEveryPairOfNeighbours() {
        // For each pair of adjacent positive finite halves (and the step from 65504 to infinity),
        // the midpoint rounds to the one with the even mantissa and anything off the midpoint
        // rounds to the nearer one. Negative values mirror positive ones.
        for (int low = 0; low < 0x7c00; low++) {
            int high = low + 1;
            double lowValue = formula(low);
            double highValue = high == 0x7c00 ? 65536.0 : formula(high); // 65536 is where overflow starts
            float mid = (float) ((lowValue + highValue) / 2);
            assertThat((double) mid).as("midpoint is exact in float").isEqualTo((lowValue + highValue) / 2);
            int even = (low & 1) == 0 ? low : high;

            assertThat(Fp16.fromFloat(mid) & 0xffff).as("tie above 0x%04x", low).isEqualTo(even);
            assertThat(Fp16.fromFloat(Math.nextDown(mid)) & 0xffff).as("just below midpoint above 0x%04x", low)
                    .isEqualTo(low);
            assertThat(Fp16.fromFloat(Math.nextUp(mid)) & 0xffff).as("just above midpoint above 0x%04x", low)
                    .isEqualTo(high);
            assertThat(Fp16.fromFloat(-mid) & 0xffff).as("negative tie above 0x%04x", low).isEqualTo(even | 0x8000);
        }
    }

    @Test
    void overflowAndUnderflowSaturateToInfinityAndSignedZero() {
        assertThat(Fp16.fromFloat(65520f)).as("halfway to 2^16 rounds up to infinity").isEqualTo((short) 0x7c00);
        assertThat(Fp16.fromFloat(1e10f)).isEqualTo((short) 0x7c00);
        assertThat(Fp16.fromFloat(-Float.MAX_VALUE)).isEqualTo((short) 0xfc00);
        assertThat(Fp16.fromFloat(0x1p-25f)).as("half the smallest subnormal ties to zero").isEqualTo((short) 0);
        assertThat(Fp16.fromFloat(Float.MIN_VALUE)).isEqualTo((short) 0);
        assertThat(Fp16.fromFloat(-Float.MIN_VALUE)).isEqualTo((short) 0x8000);
        assertThat(Fp16.fromFloat(1e-30f)).isEqualTo((short) 0);
    }

    @Test
    void everyNanPayloadStaysNan() {
        for (int payload : new int[] {1, 0x1fff, 0x2000, 0x400000, 0x7fffff}) {
            float nan = Float.intBitsToFloat(0x7f800000 | payload);
            assertThat(Float.isNaN(Fp16.toFloat(Fp16.fromFloat(nan)))).as("payload 0x%x", payload).isTrue();
            float negNan = Float.intBitsToFloat(0xff800000 | payload);
            assertThat(Float.isNaN(Fp16.toFloat(Fp16.fromFloat(negNan)))).as("payload 0x%x", payload).isTrue();
        }
    }
}
