/* One vector type of native width per instruction set, and the few operations the
 * kernels use on it.
 *
 * A kernel source is compiled once per instruction set (variant_<isa>.c defines one of
 * CYRBM_ISA_AVX512, _AVX2, _SSE2, _NEON, _GENERIC and includes the kernels); this header
 * then gives
 *
 *   CYRBM_VBYTES     bytes per native vector: 64, 32, 16, or 0 for plain C (scalars)
 *   vd, vf           float64 / float32 vectors of VLD / VLF lanes (plain C: one lane)
 *   vq, vu           uint64 / uint32 vectors of the same lane counts (bit patterns, masks)
 *   CYRBM_K(name)    name_<isa>: the variant's own symbol, declared in kernels.h
 *
 * Operators act lane by lane (GCC/Clang vector extensions; plain C for the generic
 * variant), so every variant does the same arithmetic in each lane: with floating-point
 * contraction off (-ffp-contract=off, set by setup.py for every file) all variants give
 * the same bits.  Where a kernel's result depends on a lane count (a per-lane partial
 * sum, the lanes of a random stream), it uses a fixed logical width of 64 bytes built
 * from 64 / CYRBM_VBYTES native vectors (NQD, NQF), never the native width.
 *
 * Masks are all-ones / all-zeros lanes of vq / vu; MASKQ(c) / MASKU(c) make one from a
 * comparison of vd / vf values. */
#ifndef CYRBM_SIMD_H
#define CYRBM_SIMD_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(CYRBM_ISA_AVX512) || defined(CYRBM_ISA_AVX2) || defined(CYRBM_ISA_SSE2)
#include <immintrin.h>
#elif defined(CYRBM_ISA_NEON)
#include <arm_neon.h>
#endif

/* a compiler barrier (no instruction): what was written to memory before it is read
 * from memory after it.  It keeps GCC from holding a loop's accumulators in the array
 * they are finally stored to (a store and a load per update) when that array is read
 * afterwards in other vector shapes (chib_t.h's products). */
#if defined(__GNUC__) || defined(__clang__)
#define CYRBM_COMPILER_BARRIER() __asm__ volatile("" ::: "memory")
#else
#define CYRBM_COMPILER_BARRIER() ((void)0)
#endif

#if defined(CYRBM_ISA_AVX512)
#define CYRBM_VBYTES 64
#define CYRBM_ISA_NAME avx512
#elif defined(CYRBM_ISA_AVX2)
#define CYRBM_VBYTES 32
#define CYRBM_ISA_NAME avx2
#elif defined(CYRBM_ISA_SSE2)
#define CYRBM_VBYTES 16
#define CYRBM_ISA_NAME sse2
#elif defined(CYRBM_ISA_NEON)
#define CYRBM_VBYTES 16
#define CYRBM_ISA_NAME neon
#elif defined(CYRBM_ISA_GENERIC)
#define CYRBM_VBYTES 0
#define CYRBM_ISA_NAME generic
#else
#error "simd.h: compile through a variant_<isa>.c file, which names the instruction set"
#endif

#define CYRBM_CAT_(a, b) a##_##b
#define CYRBM_CAT(a, b) CYRBM_CAT_(a, b)
#define CYRBM_K(name) CYRBM_CAT(name, CYRBM_ISA_NAME)

#if defined(__GNUC__) || defined(__clang__)
#define CYRBM_INLINE static inline __attribute__((always_inline))
#define CYRBM_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#else
#define CYRBM_INLINE static __inline
#define CYRBM_PREFETCH(p) ((void)(p))
#endif

#if CYRBM_VBYTES > 0
#if !(defined(__GNUC__) || defined(__clang__))
#error "vector variants need GCC or Clang vector extensions; build CYRBM_ISA=generic"
#endif
typedef double vd __attribute__((vector_size(CYRBM_VBYTES)));
typedef float vf __attribute__((vector_size(CYRBM_VBYTES)));
typedef uint64_t vq __attribute__((vector_size(CYRBM_VBYTES)));
typedef uint32_t vu __attribute__((vector_size(CYRBM_VBYTES)));
typedef int32_t vi32 __attribute__((vector_size(CYRBM_VBYTES)));
#define VLD (CYRBM_VBYTES / 8)
#define VLF (CYRBM_VBYTES / 4)
/* VLD floats, widened to a vd */
typedef float vfh __attribute__((vector_size(CYRBM_VBYTES / 2)));
#define MASKQ(c) ((vq)(c))
#define MASKU(c) ((vu)(c))
#define ASQ(x) ((vq)(x))
#define ASD(x) ((vd)(x))
#define ASU(x) ((vu)(x))
#define ASF(x) ((vf)(x))
#define LANE(v, l) ((v)[l])
CYRBM_INLINE vd ld_d(const double *p) { vd v; memcpy(&v, p, sizeof v); return v; }
CYRBM_INLINE vf ld_f(const float *p) { vf v; memcpy(&v, p, sizeof v); return v; }
CYRBM_INLINE void st_d(double *p, vd v) { memcpy(p, &v, sizeof v); }
CYRBM_INLINE void st_f(float *p, vf v) { memcpy(p, &v, sizeof v); }
CYRBM_INLINE vq ld_q(const uint64_t *p) { vq v; memcpy(&v, p, sizeof v); return v; }
CYRBM_INLINE void st_q(uint64_t *p, vq v) { memcpy(p, &v, sizeof v); }
CYRBM_INLINE vd ld_f_as_d(const float *p) {
    vfh v; memcpy(&v, p, sizeof v); return __builtin_convertvector(v, vd);
}
/* VLD float64 lanes rounded to floats and stored (the inverse of ld_f_as_d) */
CYRBM_INLINE void st_d_as_f(float *p, vd v) {
    vfh f = __builtin_convertvector(v, vfh); memcpy(p, &f, sizeof f);
}
/* the correctly rounded square root of each lane (the same bits as sqrt()) */
#if defined(CYRBM_ISA_AVX512)
CYRBM_INLINE vd vsqrt_d(vd x) { return (vd)_mm512_sqrt_pd((__m512d)x); }
#elif defined(CYRBM_ISA_AVX2)
CYRBM_INLINE vd vsqrt_d(vd x) { return (vd)_mm256_sqrt_pd((__m256d)x); }
#elif defined(CYRBM_ISA_SSE2)
CYRBM_INLINE vd vsqrt_d(vd x) { return (vd)_mm_sqrt_pd((__m128d)x); }
#else
CYRBM_INLINE vd vsqrt_d(vd x) {
    int l;
    for (l = 0; l < VLD; l++) x[l] = sqrt(x[l]);
    return x;
}
#endif
/* a b + c with one rounding (a fused multiply-add), lane by lane: the same bits in every
 * variant (IEEE 754's fusedMultiplyAdd).  The hardware instruction with AVX-512, AVX2 (its
 * variant is built with -mfma, and chosen only on CPUs that have FMA3: dispatch.c) and
 * NEON (vfmaq, AArch64); with SSE2 C99's fmaf / fma, correctly rounded by definition, a
 * libm call per lane (glibc's uses the FMA instruction where the CPU has it). */
/* a scalar in every lane: a plain broadcast (BCF / BCD add it to +0, an instruction that
 * the compiler cannot drop, since -0 + 0 = +0), which AVX-512 folds into the use as a
 * broadcast load */
#if defined(CYRBM_ISA_AVX512)
CYRBM_INLINE vf vsplat_f(float w) { return (vf)_mm512_set1_ps(w); }
CYRBM_INLINE vd vsplat_d(double w) { return (vd)_mm512_set1_pd(w); }
#elif defined(CYRBM_ISA_AVX2)
CYRBM_INLINE vf vsplat_f(float w) { return (vf)_mm256_set1_ps(w); }
CYRBM_INLINE vd vsplat_d(double w) { return (vd)_mm256_set1_pd(w); }
#elif defined(CYRBM_ISA_SSE2)
CYRBM_INLINE vf vsplat_f(float w) { return (vf)_mm_set1_ps(w); }
CYRBM_INLINE vd vsplat_d(double w) { return (vd)_mm_set1_pd(w); }
#elif defined(CYRBM_ISA_NEON)
CYRBM_INLINE vf vsplat_f(float w) { return (vf)vdupq_n_f32(w); }
CYRBM_INLINE vd vsplat_d(double w) { return (vd)vdupq_n_f64(w); }
#else
CYRBM_INLINE vf vsplat_f(float w) {
    vf v;
    int l;
    for (l = 0; l < VLF; l++) v[l] = w;
    return v;
}
CYRBM_INLINE vd vsplat_d(double w) {
    vd v;
    int l;
    for (l = 0; l < VLD; l++) v[l] = w;
    return v;
}
#endif
#if defined(CYRBM_ISA_AVX512)
CYRBM_INLINE vf vfma_f(vf a, vf b, vf c) { return (vf)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c); }
CYRBM_INLINE vd vfma_d(vd a, vd b, vd c) { return (vd)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c); }
#elif defined(CYRBM_ISA_AVX2)
CYRBM_INLINE vf vfma_f(vf a, vf b, vf c) { return (vf)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c); }
CYRBM_INLINE vd vfma_d(vd a, vd b, vd c) { return (vd)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c); }
#elif defined(CYRBM_ISA_NEON)
CYRBM_INLINE vf vfma_f(vf a, vf b, vf c) { return (vf)vfmaq_f32((float32x4_t)c, (float32x4_t)a, (float32x4_t)b); }
CYRBM_INLINE vd vfma_d(vd a, vd b, vd c) { return (vd)vfmaq_f64((float64x2_t)c, (float64x2_t)a, (float64x2_t)b); }
#else
CYRBM_INLINE vf vfma_f(vf a, vf b, vf c) {
    int l;
    for (l = 0; l < VLF; l++) c[l] = fmaf(a[l], b[l], c[l]);
    return c;
}
CYRBM_INLINE vd vfma_d(vd a, vd b, vd c) {
    int l;
    for (l = 0; l < VLD; l++) c[l] = fma(a[l], b[l], c[l]);
    return c;
}
#endif
/* The product of a vd's lanes in a fixed tree (lane l times lane l + VLD / 2, then the
 * halves again: the same products in every variant, chib_t.h's fold), and the sum of a
 * vu's or vq's lanes (integers: exact in any order), in registers where the compiler has
 * vector shuffles, else lane by lane. */
#if defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define CYRBM_SHUFFLE 1
#endif
#endif
#if defined(CYRBM_SHUFFLE) && CYRBM_VBYTES == 64
CYRBM_INLINE double hmul_d(vd v) {
    v = v * __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7);
    v = v * __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3);
    return v[0] * v[1];
}
#if defined(CYRBM_ISA_AVX512)
/* lanes o .. o + 7 (o = 0 or 8) of a vf as a vd, in registers: one vcvtps2pd of a 256-bit
 * half (float_t.h's VPART_D) */
#define CYRBM_PART_F_AS_D 1
CYRBM_INLINE vd part_f_as_d(vf v, int o) {
    const __m512 x = (__m512)v;
    if (o == 0) return (vd)_mm512_cvtps_pd(_mm512_castps512_ps256(x));
    return (vd)_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
}
#endif
CYRBM_INLINE uint64_t hsum_q(vq v) {
    v = v + __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7);
    v = v + __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3);
    return v[0] + v[1];
}
CYRBM_INLINE uint32_t hsum_u(vu v) {
    v = v + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13,
                                    14, 15);
    v = v + __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6, 7);
    v = v + __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
    return v[0] + v[1];
}
#elif defined(CYRBM_SHUFFLE) && CYRBM_VBYTES == 32
CYRBM_INLINE double hmul_d(vd v) {
    v = v * __builtin_shufflevector(v, v, 2, 3, 2, 3);
    return v[0] * v[1];
}
CYRBM_INLINE uint64_t hsum_q(vq v) {
    v = v + __builtin_shufflevector(v, v, 2, 3, 2, 3);
    return v[0] + v[1];
}
CYRBM_INLINE uint32_t hsum_u(vu v) {
    v = v + __builtin_shufflevector(v, v, 4, 5, 6, 7, 4, 5, 6, 7);
    v = v + __builtin_shufflevector(v, v, 2, 3, 2, 3, 2, 3, 2, 3);
    return v[0] + v[1];
}
#else
CYRBM_INLINE double hmul_d(vd v) {
    double t[VLD];
    int h, l;
    memcpy(t, &v, sizeof t);
    for (h = VLD / 2; h >= 1; h /= 2)
        for (l = 0; l < h; l++) t[l] *= t[l + h];
    return t[0];
}
CYRBM_INLINE uint64_t hsum_q(vq v) {
    uint64_t s = 0;
    int l;
    for (l = 0; l < VLD; l++) s += LANE(v, l);
    return s;
}
CYRBM_INLINE uint32_t hsum_u(vu v) {
    uint32_t s = 0;
    int l;
    for (l = 0; l < VLF; l++) s += LANE(v, l);
    return s;
}
#endif
/* the lanes of a mask as bits, lane l at bit l (VLD / VLF bits): one instruction where
 * the instruction set has it (GCC's narrowing __builtin_convertvector to bytes goes lane
 * by lane); bits_to_bytes8 below turns them into 0/1 state bytes */
#if defined(CYRBM_ISA_AVX512)
CYRBM_INLINE unsigned mask_bits_d(vq m) { return _mm512_test_epi64_mask((__m512i)m, (__m512i)m); }
CYRBM_INLINE unsigned mask_bits_f(vu m) { return _mm512_test_epi32_mask((__m512i)m, (__m512i)m); }
#elif defined(CYRBM_ISA_AVX2)
CYRBM_INLINE unsigned mask_bits_d(vq m) { return (unsigned)_mm256_movemask_pd((__m256d)m); }
CYRBM_INLINE unsigned mask_bits_f(vu m) { return (unsigned)_mm256_movemask_ps((__m256)m); }
#elif defined(CYRBM_ISA_SSE2)
CYRBM_INLINE unsigned mask_bits_d(vq m) { return (unsigned)_mm_movemask_pd((__m128d)m); }
CYRBM_INLINE unsigned mask_bits_f(vu m) { return (unsigned)_mm_movemask_ps((__m128)m); }
#else
CYRBM_INLINE unsigned mask_bits_d(vq m) {
    unsigned b = 0;
    int l;
    for (l = 0; l < VLD; l++) b |= (unsigned)(m[l] & 1u) << l;
    return b;
}
CYRBM_INLINE unsigned mask_bits_f(vu m) {
    unsigned b = 0;
    int l;
    for (l = 0; l < VLF; l++) b |= (unsigned)(m[l] & 1u) << l;
    return b;
}
#endif
#else
typedef double vd;
typedef float vf;
typedef uint64_t vq;
typedef uint32_t vu;
#define VLD 1
#define VLF 1
#define MASKQ(c) ((uint64_t)0 - (uint64_t)(c))
#define MASKU(c) ((uint32_t)0 - (uint32_t)(c))
CYRBM_INLINE vq cyrbm_asq(double x) { vq q; memcpy(&q, &x, 8); return q; }
CYRBM_INLINE vd cyrbm_asd(vq q) { vd x; memcpy(&x, &q, 8); return x; }
CYRBM_INLINE vu cyrbm_asu(float x) { vu q; memcpy(&q, &x, 4); return q; }
CYRBM_INLINE vf cyrbm_asf(vu q) { vf x; memcpy(&x, &q, 4); return x; }
#define ASQ(x) cyrbm_asq(x)
#define ASD(x) cyrbm_asd(x)
#define ASU(x) cyrbm_asu(x)
#define ASF(x) cyrbm_asf(x)
#define LANE(v, l) (v)
CYRBM_INLINE vd ld_d(const double *p) { return *p; }
CYRBM_INLINE vf ld_f(const float *p) { return *p; }
CYRBM_INLINE void st_d(double *p, vd v) { *p = v; }
CYRBM_INLINE void st_f(float *p, vf v) { *p = v; }
CYRBM_INLINE vq ld_q(const uint64_t *p) { return *p; }
CYRBM_INLINE void st_q(uint64_t *p, vq v) { *p = v; }
CYRBM_INLINE vd ld_f_as_d(const float *p) { return (double)*p; }
CYRBM_INLINE void st_d_as_f(float *p, vd v) { *p = (float)v; }
CYRBM_INLINE vd vsqrt_d(vd x) { return sqrt(x); }
/* a b + c with one rounding (C99's fmaf / fma: correctly rounded by definition) */
CYRBM_INLINE vf vsplat_f(float w) { return w; }
CYRBM_INLINE vd vsplat_d(double w) { return w; }
CYRBM_INLINE vf vfma_f(vf a, vf b, vf c) { return fmaf(a, b, c); }
CYRBM_INLINE vd vfma_d(vd a, vd b, vd c) { return fma(a, b, c); }
CYRBM_INLINE unsigned mask_bits_d(vq m) { return (unsigned)(m & 1u); }
CYRBM_INLINE unsigned mask_bits_f(vu m) { return (unsigned)(m & 1u); }
CYRBM_INLINE double hmul_d(vd v) { return v; }
CYRBM_INLINE uint64_t hsum_q(vq v) { return v; }
CYRBM_INLINE uint32_t hsum_u(vu v) { return v; }
#endif

/* 8 bits as 8 bytes of 0 / 1, bit k to byte k (little-endian: the byte at address + k):
 * byte k of the product holds bit k of b in its bit k; adding 0x7f sets its top bit
 * exactly when that bit is set, without a carry into the next byte */
CYRBM_INLINE uint64_t bits_to_bytes8(unsigned b) {
    const uint64_t y = ((uint64_t)(b & 255u) * 0x0101010101010101ULL) & 0x8040201008040201ULL;
    return ((y + 0x7F7F7F7F7F7F7F7FULL) >> 7) & 0x0101010101010101ULL;
}
/* its inverse: 8 bytes that are each 0 or 1 as an 8-bit number (byte k -> bit k; the
 * product gathers the low bits into bits 56..63, no two terms meeting) */
CYRBM_INLINE unsigned bytes8_to_bits(uint64_t x) {
    return (unsigned)((x * 0x0102040810204080ULL) >> 56);
}

/* The one Bernoulli draw from log-odds y (vectors of a kernel variant): a unit is on when
 * u < sigma(y), tested without a division as u (1 + e) < (y >= 0 ? 1 : e), e = e^-|y|
 * (vmath.h); the lanes' masks.  (Draws from given probabilities: rng.h.) */
#define CYRBM_DRAW_D(u, y, e) MASKQ((u) * (1.0 + (e)) < SELD(MASKQ((y) >= 0.0), BCD(1.0), (e)))
#define CYRBM_DRAW_F(u, y, e)                                                             \
    MASKU((u) * (1.0f + (e)) < SELF(MASKU((y) >= 0.0f), BCF(1.0f), (e)))

/* The one builder of set-bit lists: append base + (position of each set bit of the 8-bit
 * m), ascending, to list[*n ...], from a table of the positions of the set bits of each
 * byte value (then zeros) without a branch per unit: 8 entries are written, *n advances
 * by the number of set bits (room for *n + 8 needed).  (From 0/1 bytes:
 * cyrbm_active_units, common.c.) */
CYRBM_INLINE void cyrbm_emit8(unsigned m, int32_t base, int32_t *list, int32_t *n) {
    static const int32_t bitpos[256][8] = {
        {0,0,0,0,0,0,0,0}, {0,0,0,0,0,0,0,0}, {1,0,0,0,0,0,0,0}, {0,1,0,0,0,0,0,0}, {2,0,0,0,0,0,0,0}, {0,2,0,0,0,0,0,0}, {1,2,0,0,0,0,0,0}, {0,1,2,0,0,0,0,0},
        {3,0,0,0,0,0,0,0}, {0,3,0,0,0,0,0,0}, {1,3,0,0,0,0,0,0}, {0,1,3,0,0,0,0,0}, {2,3,0,0,0,0,0,0}, {0,2,3,0,0,0,0,0}, {1,2,3,0,0,0,0,0}, {0,1,2,3,0,0,0,0},
        {4,0,0,0,0,0,0,0}, {0,4,0,0,0,0,0,0}, {1,4,0,0,0,0,0,0}, {0,1,4,0,0,0,0,0}, {2,4,0,0,0,0,0,0}, {0,2,4,0,0,0,0,0}, {1,2,4,0,0,0,0,0}, {0,1,2,4,0,0,0,0},
        {3,4,0,0,0,0,0,0}, {0,3,4,0,0,0,0,0}, {1,3,4,0,0,0,0,0}, {0,1,3,4,0,0,0,0}, {2,3,4,0,0,0,0,0}, {0,2,3,4,0,0,0,0}, {1,2,3,4,0,0,0,0}, {0,1,2,3,4,0,0,0},
        {5,0,0,0,0,0,0,0}, {0,5,0,0,0,0,0,0}, {1,5,0,0,0,0,0,0}, {0,1,5,0,0,0,0,0}, {2,5,0,0,0,0,0,0}, {0,2,5,0,0,0,0,0}, {1,2,5,0,0,0,0,0}, {0,1,2,5,0,0,0,0},
        {3,5,0,0,0,0,0,0}, {0,3,5,0,0,0,0,0}, {1,3,5,0,0,0,0,0}, {0,1,3,5,0,0,0,0}, {2,3,5,0,0,0,0,0}, {0,2,3,5,0,0,0,0}, {1,2,3,5,0,0,0,0}, {0,1,2,3,5,0,0,0},
        {4,5,0,0,0,0,0,0}, {0,4,5,0,0,0,0,0}, {1,4,5,0,0,0,0,0}, {0,1,4,5,0,0,0,0}, {2,4,5,0,0,0,0,0}, {0,2,4,5,0,0,0,0}, {1,2,4,5,0,0,0,0}, {0,1,2,4,5,0,0,0},
        {3,4,5,0,0,0,0,0}, {0,3,4,5,0,0,0,0}, {1,3,4,5,0,0,0,0}, {0,1,3,4,5,0,0,0}, {2,3,4,5,0,0,0,0}, {0,2,3,4,5,0,0,0}, {1,2,3,4,5,0,0,0}, {0,1,2,3,4,5,0,0},
        {6,0,0,0,0,0,0,0}, {0,6,0,0,0,0,0,0}, {1,6,0,0,0,0,0,0}, {0,1,6,0,0,0,0,0}, {2,6,0,0,0,0,0,0}, {0,2,6,0,0,0,0,0}, {1,2,6,0,0,0,0,0}, {0,1,2,6,0,0,0,0},
        {3,6,0,0,0,0,0,0}, {0,3,6,0,0,0,0,0}, {1,3,6,0,0,0,0,0}, {0,1,3,6,0,0,0,0}, {2,3,6,0,0,0,0,0}, {0,2,3,6,0,0,0,0}, {1,2,3,6,0,0,0,0}, {0,1,2,3,6,0,0,0},
        {4,6,0,0,0,0,0,0}, {0,4,6,0,0,0,0,0}, {1,4,6,0,0,0,0,0}, {0,1,4,6,0,0,0,0}, {2,4,6,0,0,0,0,0}, {0,2,4,6,0,0,0,0}, {1,2,4,6,0,0,0,0}, {0,1,2,4,6,0,0,0},
        {3,4,6,0,0,0,0,0}, {0,3,4,6,0,0,0,0}, {1,3,4,6,0,0,0,0}, {0,1,3,4,6,0,0,0}, {2,3,4,6,0,0,0,0}, {0,2,3,4,6,0,0,0}, {1,2,3,4,6,0,0,0}, {0,1,2,3,4,6,0,0},
        {5,6,0,0,0,0,0,0}, {0,5,6,0,0,0,0,0}, {1,5,6,0,0,0,0,0}, {0,1,5,6,0,0,0,0}, {2,5,6,0,0,0,0,0}, {0,2,5,6,0,0,0,0}, {1,2,5,6,0,0,0,0}, {0,1,2,5,6,0,0,0},
        {3,5,6,0,0,0,0,0}, {0,3,5,6,0,0,0,0}, {1,3,5,6,0,0,0,0}, {0,1,3,5,6,0,0,0}, {2,3,5,6,0,0,0,0}, {0,2,3,5,6,0,0,0}, {1,2,3,5,6,0,0,0}, {0,1,2,3,5,6,0,0},
        {4,5,6,0,0,0,0,0}, {0,4,5,6,0,0,0,0}, {1,4,5,6,0,0,0,0}, {0,1,4,5,6,0,0,0}, {2,4,5,6,0,0,0,0}, {0,2,4,5,6,0,0,0}, {1,2,4,5,6,0,0,0}, {0,1,2,4,5,6,0,0},
        {3,4,5,6,0,0,0,0}, {0,3,4,5,6,0,0,0}, {1,3,4,5,6,0,0,0}, {0,1,3,4,5,6,0,0}, {2,3,4,5,6,0,0,0}, {0,2,3,4,5,6,0,0}, {1,2,3,4,5,6,0,0}, {0,1,2,3,4,5,6,0},
        {7,0,0,0,0,0,0,0}, {0,7,0,0,0,0,0,0}, {1,7,0,0,0,0,0,0}, {0,1,7,0,0,0,0,0}, {2,7,0,0,0,0,0,0}, {0,2,7,0,0,0,0,0}, {1,2,7,0,0,0,0,0}, {0,1,2,7,0,0,0,0},
        {3,7,0,0,0,0,0,0}, {0,3,7,0,0,0,0,0}, {1,3,7,0,0,0,0,0}, {0,1,3,7,0,0,0,0}, {2,3,7,0,0,0,0,0}, {0,2,3,7,0,0,0,0}, {1,2,3,7,0,0,0,0}, {0,1,2,3,7,0,0,0},
        {4,7,0,0,0,0,0,0}, {0,4,7,0,0,0,0,0}, {1,4,7,0,0,0,0,0}, {0,1,4,7,0,0,0,0}, {2,4,7,0,0,0,0,0}, {0,2,4,7,0,0,0,0}, {1,2,4,7,0,0,0,0}, {0,1,2,4,7,0,0,0},
        {3,4,7,0,0,0,0,0}, {0,3,4,7,0,0,0,0}, {1,3,4,7,0,0,0,0}, {0,1,3,4,7,0,0,0}, {2,3,4,7,0,0,0,0}, {0,2,3,4,7,0,0,0}, {1,2,3,4,7,0,0,0}, {0,1,2,3,4,7,0,0},
        {5,7,0,0,0,0,0,0}, {0,5,7,0,0,0,0,0}, {1,5,7,0,0,0,0,0}, {0,1,5,7,0,0,0,0}, {2,5,7,0,0,0,0,0}, {0,2,5,7,0,0,0,0}, {1,2,5,7,0,0,0,0}, {0,1,2,5,7,0,0,0},
        {3,5,7,0,0,0,0,0}, {0,3,5,7,0,0,0,0}, {1,3,5,7,0,0,0,0}, {0,1,3,5,7,0,0,0}, {2,3,5,7,0,0,0,0}, {0,2,3,5,7,0,0,0}, {1,2,3,5,7,0,0,0}, {0,1,2,3,5,7,0,0},
        {4,5,7,0,0,0,0,0}, {0,4,5,7,0,0,0,0}, {1,4,5,7,0,0,0,0}, {0,1,4,5,7,0,0,0}, {2,4,5,7,0,0,0,0}, {0,2,4,5,7,0,0,0}, {1,2,4,5,7,0,0,0}, {0,1,2,4,5,7,0,0},
        {3,4,5,7,0,0,0,0}, {0,3,4,5,7,0,0,0}, {1,3,4,5,7,0,0,0}, {0,1,3,4,5,7,0,0}, {2,3,4,5,7,0,0,0}, {0,2,3,4,5,7,0,0}, {1,2,3,4,5,7,0,0}, {0,1,2,3,4,5,7,0},
        {6,7,0,0,0,0,0,0}, {0,6,7,0,0,0,0,0}, {1,6,7,0,0,0,0,0}, {0,1,6,7,0,0,0,0}, {2,6,7,0,0,0,0,0}, {0,2,6,7,0,0,0,0}, {1,2,6,7,0,0,0,0}, {0,1,2,6,7,0,0,0},
        {3,6,7,0,0,0,0,0}, {0,3,6,7,0,0,0,0}, {1,3,6,7,0,0,0,0}, {0,1,3,6,7,0,0,0}, {2,3,6,7,0,0,0,0}, {0,2,3,6,7,0,0,0}, {1,2,3,6,7,0,0,0}, {0,1,2,3,6,7,0,0},
        {4,6,7,0,0,0,0,0}, {0,4,6,7,0,0,0,0}, {1,4,6,7,0,0,0,0}, {0,1,4,6,7,0,0,0}, {2,4,6,7,0,0,0,0}, {0,2,4,6,7,0,0,0}, {1,2,4,6,7,0,0,0}, {0,1,2,4,6,7,0,0},
        {3,4,6,7,0,0,0,0}, {0,3,4,6,7,0,0,0}, {1,3,4,6,7,0,0,0}, {0,1,3,4,6,7,0,0}, {2,3,4,6,7,0,0,0}, {0,2,3,4,6,7,0,0}, {1,2,3,4,6,7,0,0}, {0,1,2,3,4,6,7,0},
        {5,6,7,0,0,0,0,0}, {0,5,6,7,0,0,0,0}, {1,5,6,7,0,0,0,0}, {0,1,5,6,7,0,0,0}, {2,5,6,7,0,0,0,0}, {0,2,5,6,7,0,0,0}, {1,2,5,6,7,0,0,0}, {0,1,2,5,6,7,0,0},
        {3,5,6,7,0,0,0,0}, {0,3,5,6,7,0,0,0}, {1,3,5,6,7,0,0,0}, {0,1,3,5,6,7,0,0}, {2,3,5,6,7,0,0,0}, {0,2,3,5,6,7,0,0}, {1,2,3,5,6,7,0,0}, {0,1,2,3,5,6,7,0},
        {4,5,6,7,0,0,0,0}, {0,4,5,6,7,0,0,0}, {1,4,5,6,7,0,0,0}, {0,1,4,5,6,7,0,0}, {2,4,5,6,7,0,0,0}, {0,2,4,5,6,7,0,0}, {1,2,4,5,6,7,0,0}, {0,1,2,4,5,6,7,0},
        {3,4,5,6,7,0,0,0}, {0,3,4,5,6,7,0,0}, {1,3,4,5,6,7,0,0}, {0,1,3,4,5,6,7,0}, {2,3,4,5,6,7,0,0}, {0,2,3,4,5,6,7,0}, {1,2,3,4,5,6,7,0}, {0,1,2,3,4,5,6,7},
    };
#if !defined(__POPCNT__)
    static const uint8_t bitcnt[256] = {
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5,
        1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
        1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
        2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
        1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
        2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
        2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
        3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7, 4, 5, 5, 6, 5, 6, 6, 7, 5, 6, 6, 7, 6, 7, 7, 8,
    };
#endif
    const int32_t *p = bitpos[m & 255u];
    int32_t *o = list + *n;
#if CYRBM_VBYTES >= 32
    typedef int32_t v8i __attribute__((vector_size(32)));
    v8i v;
    memcpy(&v, p, 32);
    v += base;
    memcpy(o, &v, 32);
#else
    int l;
    for (l = 0; l < 8; l++) o[l] = base + p[l];
#endif
#if defined(__POPCNT__)
    *n += __builtin_popcount(m & 255u);   /* (one instruction, not a table load) */
#else
    *n += bitcnt[m & 255u];
#endif
}

/* native vectors per 64-byte logical block */
#define NQD (8 / VLD)
#define NQF (16 / VLF)

/* select: lanes of a where the mask m is set, of b elsewhere */
#define SELD(m, a, b) ASD(((m) & ASQ(a)) | (~(m) & ASQ(b)))
#define SELF(m, a, b) ASF(((m) & ASU(a)) | (~(m) & ASU(b)))
/* broadcast a constant (also for the scalar "vectors" of the generic variant) */
#define BCD(c) ((vd){0} + (double)(c))
#define BCF(c) ((vf){0} + (float)(c))

#endif
