package io.flinkgpu.inference.protocol;

/** IEEE 754 binary16 conversions (Java 17 has no Float.floatToFloat16). Round-to-nearest-even. */
public final class Fp16 {
    private Fp16() {}

    public static short fromFloat(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int exponent = (bits >>> 23) & 0xff;
        int mantissa = bits & 0x7fffff;
        if (exponent == 0xff) { // NaN or infinity
            return (short) (sign | 0x7c00 | (mantissa != 0 ? 0x200 | (mantissa >>> 13) : 0));
        }
        int halfExponent = exponent - 127 + 15;
        if (halfExponent >= 0x1f) { // overflow -> infinity
            return (short) (sign | 0x7c00);
        }
        if (halfExponent <= 0) { // subnormal or zero
            if (halfExponent < -10) {
                return (short) sign;
            }
            mantissa |= 0x800000;
            int shift = 14 - halfExponent;
            int halfMantissa = mantissa >>> shift;
            int remainder = mantissa & ((1 << shift) - 1);
            int halfway = 1 << (shift - 1);
            if (remainder > halfway || (remainder == halfway && (halfMantissa & 1) != 0)) {
                halfMantissa++;
            }
            return (short) (sign | halfMantissa);
        }
        int half = sign | (halfExponent << 10) | (mantissa >>> 13);
        int remainder = mantissa & 0x1fff;
        if (remainder > 0x1000 || (remainder == 0x1000 && (half & 1) != 0)) {
            half++; // may carry into the exponent, which is the correct rounding
        }
        return (short) half;
    }

    public static float toFloat(short half) {
        int h = half & 0xffff;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1f;
        int mantissa = h & 0x3ff;
        if (exponent == 0x1f) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            if (mantissa == 0) {
                return Float.intBitsToFloat(sign);
            }
            float value = mantissa / 1024f / 16384f; // 2^-14 * m/1024
            return sign != 0 ? -value : value;
        }
        return Float.intBitsToFloat(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
    }
}
