/* Block-Gibbs and CD/PCD kernels for one instruction set (see kernels.h, simd.h): the
 * variant is named by the compiler flags setup.py gives this file (-DCYRBM_ISA_...). */
#define CYRBM_KERNEL_LIBRARY 1
#include "simd.h"
#include "kernels.h"

#if defined(__GNUC__) || defined(__clang__)
#define CYRBM_ALIGN64 __attribute__((aligned(64)))
#else
#define CYRBM_ALIGN64
#endif

/* ---- 8 x 8 transposes in registers, where the variant has wide enough vectors (for the
 * other variants and types gibbs_t.h has the plain form: CYRBM_VEC8X8_<bits> unset) ---- */
#if CYRBM_VBYTES >= 32
#define CYRBM_VEC8X8_32 1
typedef float v8f_ __attribute__((vector_size(32)));
typedef int32_t v8i_ __attribute__((vector_size(32)));
#if defined(__clang__)
#define SHUF8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
#define SHUF8(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shuffle(a, b, (v8i_){i0, i1, i2, i3, i4, i5, i6, i7})
#endif
#define HALVES(v, p, q) (memcpy(&(v), (p), 16), memcpy((char *)&(v) + 16, (q), 16))
/* rows i and i+4 as the two 128-bit halves of one vector, then a 4 x 4 transpose inside
 * each half (no lane crossing) */
CYRBM_INLINE void CYRBM_K(cyrbm_transpose8x8_f32)(float *restrict d, ptrdiff_t ldd,
                                                  const float *restrict s, ptrdiff_t lds) {
    v8f_ x0, x1, x2, x3, x4, x5, x6, x7;
    HALVES(x0, s, s + 4 * lds);
    HALVES(x1, s + lds, s + 5 * lds);
    HALVES(x2, s + 2 * lds, s + 6 * lds);
    HALVES(x3, s + 3 * lds, s + 7 * lds);
    HALVES(x4, s + 4, s + 4 * lds + 4);
    HALVES(x5, s + lds + 4, s + 5 * lds + 4);
    HALVES(x6, s + 2 * lds + 4, s + 6 * lds + 4);
    HALVES(x7, s + 3 * lds + 4, s + 7 * lds + 4);
#define T4X4(a, b, c, e, o0, o1, o2, o3)                                                  \
    {                                                                                     \
        v8f_ t0 = SHUF8(a, b, 0, 8, 1, 9, 4, 12, 5, 13);                                  \
        v8f_ t1 = SHUF8(a, b, 2, 10, 3, 11, 6, 14, 7, 15);                                \
        v8f_ t2 = SHUF8(c, e, 0, 8, 1, 9, 4, 12, 5, 13);                                  \
        v8f_ t3 = SHUF8(c, e, 2, 10, 3, 11, 6, 14, 7, 15);                                \
        v8f_ y0 = SHUF8(t0, t2, 0, 1, 8, 9, 4, 5, 12, 13);                                \
        v8f_ y1 = SHUF8(t0, t2, 2, 3, 10, 11, 6, 7, 14, 15);                              \
        v8f_ y2 = SHUF8(t1, t3, 0, 1, 8, 9, 4, 5, 12, 13);                                \
        v8f_ y3 = SHUF8(t1, t3, 2, 3, 10, 11, 6, 7, 14, 15);                              \
        memcpy(d + (o0) * ldd, &y0, 32);                                                  \
        memcpy(d + (o1) * ldd, &y1, 32);                                                  \
        memcpy(d + (o2) * ldd, &y2, 32);                                                  \
        memcpy(d + (o3) * ldd, &y3, 32);                                                  \
    }
    T4X4(x0, x1, x2, x3, 0, 1, 2, 3)
    T4X4(x4, x5, x6, x7, 4, 5, 6, 7)
#undef T4X4
}
#endif

#if CYRBM_VBYTES >= 64
#define CYRBM_VEC8X8_64 1
#if defined(__clang__)
#define SHUF8D(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shufflevector(a, b, i0, i1, i2, i3, i4, i5, i6, i7)
#else
typedef int64_t v8l_ __attribute__((vector_size(64)));
#define SHUF8D(a, b, i0, i1, i2, i3, i4, i5, i6, i7) \
    __builtin_shuffle(a, b, (v8l_){i0, i1, i2, i3, i4, i5, i6, i7})
#endif
/* three rounds of interleaving rows i and i+4 */
#define ZIPROUND(a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3, b4, b5, b6, b7)          \
    b0 = SHUF8D(a0, a4, 0, 8, 1, 9, 2, 10, 3, 11);                                        \
    b1 = SHUF8D(a0, a4, 4, 12, 5, 13, 6, 14, 7, 15);                                      \
    b2 = SHUF8D(a1, a5, 0, 8, 1, 9, 2, 10, 3, 11);                                        \
    b3 = SHUF8D(a1, a5, 4, 12, 5, 13, 6, 14, 7, 15);                                      \
    b4 = SHUF8D(a2, a6, 0, 8, 1, 9, 2, 10, 3, 11);                                        \
    b5 = SHUF8D(a2, a6, 4, 12, 5, 13, 6, 14, 7, 15);                                      \
    b6 = SHUF8D(a3, a7, 0, 8, 1, 9, 2, 10, 3, 11);                                        \
    b7 = SHUF8D(a3, a7, 4, 12, 5, 13, 6, 14, 7, 15);
CYRBM_INLINE void CYRBM_K(cyrbm_transpose8x8_f64)(double *restrict d, ptrdiff_t ldd,
                                                  const double *restrict s, ptrdiff_t lds) {
    vd r0, r1, r2, r3, r4, r5, r6, r7, t0, t1, t2, t3, t4, t5, t6, t7;
    r0 = ld_d(s); r1 = ld_d(s + lds); r2 = ld_d(s + 2 * lds); r3 = ld_d(s + 3 * lds);
    r4 = ld_d(s + 4 * lds); r5 = ld_d(s + 5 * lds); r6 = ld_d(s + 6 * lds);
    r7 = ld_d(s + 7 * lds);
    ZIPROUND(r0, r1, r2, r3, r4, r5, r6, r7, t0, t1, t2, t3, t4, t5, t6, t7)
    ZIPROUND(t0, t1, t2, t3, t4, t5, t6, t7, r0, r1, r2, r3, r4, r5, r6, r7)
    ZIPROUND(r0, r1, r2, r3, r4, r5, r6, r7, t0, t1, t2, t3, t4, t5, t6, t7)
    st_d(d, t0); st_d(d + ldd, t1); st_d(d + 2 * ldd, t2); st_d(d + 3 * ldd, t3);
    st_d(d + 4 * ldd, t4); st_d(d + 5 * ldd, t5); st_d(d + 6 * ldd, t6);
    st_d(d + 7 * ldd, t7);
}

CYRBM_INLINE void CYRBM_K(cyrbm_transpose8x8_u64)(vq *restrict y, const vq *restrict x) {
    vq t0, t1, t2, t3, t4, t5, t6, t7, r0, r1, r2, r3, r4, r5, r6, r7;
    ZIPROUND(x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7], t0, t1, t2, t3, t4, t5, t6, t7)
    ZIPROUND(t0, t1, t2, t3, t4, t5, t6, t7, r0, r1, r2, r3, r4, r5, r6, r7)
    ZIPROUND(r0, r1, r2, r3, r4, r5, r6, r7, y[0], y[1], y[2], y[3], y[4], y[5], y[6], y[7])
}
#undef ZIPROUND

#endif

#define CYRBM_FT 32
#include "float_t.h"
#include "gibbs_t.h"
#include "bound_t.h"
#undef CYRBM_FT
#define CYRBM_FT 64
#include "float_t.h"
#include "gibbs_t.h"
#include "bound_t.h"
/* mode hopping, on the row sums and factorial rows of its type and of float64 (its
 * proposal kernels), so after both types' */
#include "modehop_t.h"
#undef CYRBM_FT
#define CYRBM_FT 32
#include "float_t.h"
#include "modehop_t.h"
