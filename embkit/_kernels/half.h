/* IEEE 754 binary16 <-> binary32 conversions.
 *
 * f32_to_f16 rounds to nearest, ties to even, as numpy's astype(float16) does: overflow gives infinity,
 * values below half the smallest subnormal give (signed) zero, NaN stays NaN.  f16_to_f32 is exact.
 * Bit operations only, so the kernels' fast-math flags do not change the results.
 *
 * halves_from_floats / floats_from_halves convert arrays: with the x86 F16C instructions when the CPU has
 * them (checked once, at run time: the build needs no -march flag), else with the two functions above.
 * F16C rounds to nearest even too, so both paths give the same bits.
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

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>
#define EMBKIT_HALF_F16C 1

__attribute__((target("avx,f16c")))
static void halves_from_floats_f16c(const float *src, uint16_t *dst, long n)
{
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; i < n; i++)
        dst[i] = f32_to_f16(src[i]);
}

__attribute__((target("avx,f16c")))
static void floats_from_halves_f16c(const uint16_t *src, float *dst, long n)
{
    long i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}

/* 1 when the CPU runs F16C and AVX (the answer is the same on every thread: a race only repeats the check) */
static int half_f16c(void)
{
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    }
    return known;
}
#else
#define EMBKIT_HALF_F16C 0
static int half_f16c(void) { return 0; }
#endif

/* use_f16c: 1 to take the F16C path when the CPU has it, 0 for the portable one (tests compare them) */
static void halves_from_floats(const float *src, uint16_t *dst, long n, int use_f16c)
{
    long i;
#if EMBKIT_HALF_F16C
    if (use_f16c && half_f16c()) {
        halves_from_floats_f16c(src, dst, n);
        return;
    }
#endif
    for (i = 0; i < n; i++)
        dst[i] = f32_to_f16(src[i]);
}

static void floats_from_halves(const uint16_t *src, float *dst, long n, int use_f16c)
{
    long i;
#if EMBKIT_HALF_F16C
    if (use_f16c && half_f16c()) {
        floats_from_halves_f16c(src, dst, n);
        return;
    }
#endif
    for (i = 0; i < n; i++)
        dst[i] = f16_to_f32(src[i]);
}
#endif
