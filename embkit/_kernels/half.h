/* IEEE 754 binary16 <-> binary32 conversions, portable C (no F16C needed).
 *
 * f32_to_f16 rounds to nearest, ties to even, as numpy's astype(float16) does: overflow gives infinity,
 * values below half the smallest subnormal give (signed) zero, NaN stays NaN.  f16_to_f32 is exact.
 * Bit operations only, so the kernels' fast-math flags do not change the results.
 */
#ifndef EMBKIT_HALF_H
#define EMBKIT_HALF_H
#include <stdint.h>
#include <string.h>

static inline uint16_t f32_to_f16(float value)
{
    uint32_t x, sign, absx, mant, q, rem, halfway;
    int shift;
    memcpy(&x, &value, 4);
    sign = (x >> 16) & 0x8000u;
    absx = x & 0x7fffffffu;
    if (absx >= 0x7f800000u)                       /* infinity or NaN */
        return (uint16_t)(sign | 0x7c00u | (absx > 0x7f800000u ? (0x200u | ((absx >> 13) & 0x3ffu)) : 0u));
    if (absx >= 0x477ff000u)                       /* >= 65520: rounds to infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (absx >= 0x38800000u)                       /* a normal half (>= 2**-14) */
        return (uint16_t)(sign | ((absx + 0xfffu + ((absx >> 13) & 1u) - 0x38000000u) >> 13));
    if (absx < 0x33000000u)                        /* below 2**-25: zero */
        return (uint16_t)sign;
    /* a subnormal half: count units of 2**-24 */
    mant = (absx & 0x7fffffu) | 0x800000u;
    shift = 126 - (int)(absx >> 23);
    q = mant >> shift;
    rem = mant & ((1u << shift) - 1u);
    halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u)))
        q++;
    return (uint16_t)(sign | q);
}

static inline float f16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, e = ((uint32_t)h >> 10) & 0x1fu, m = (uint32_t)h & 0x3ffu, x;
    float value;
    if (e == 0) {
        if (m == 0) {
            x = sign;
        } else {                                   /* subnormal: normalise */
            e = 113;
            while (!(m & 0x400u)) {
                m <<= 1;
                e--;
            }
            x = sign | (e << 23) | ((m & 0x3ffu) << 13);
        }
    } else if (e == 31) {
        x = sign | 0x7f800000u | (m << 13);
    } else {
        x = sign | ((e + 112u) << 23) | (m << 13);
    }
    memcpy(&value, &x, 4);
    return value;
}
#endif
