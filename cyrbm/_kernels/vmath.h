/* cyrbm's one vector-math layer: exp, the logistic function sigma and softplus.
 *
 * e^x for x <= 0 is written once (CYRBM_DEFINE_EXP_D / _F) and instantiated for plain
 * scalars (always) and, inside a kernel variant (simd.h), for its native vectors, with
 * the same operations in every lane, so scalar and vector results are the same bits:
 *   x = n ln2 + r, |r| <= ln2 / 2 (Cody-Waite, two-part ln 2), e^r by its Taylor
 *   polynomial (degree 12 in float64, 7 in float32) by Estrin's scheme (short dependency
 *   chains), times 2^n by adding n to the exponent bits; about 2 ulp, no lookup tables
 *   (tables would bias likelihoods).  x below -708 (float32: -87) is taken as that bound.
 * Then sigma(x) = (x < 0 ? e : 1) / (1 + e) and softplus(x) = max(x, 0) + log1p(e),
 * e = e^-|x|, which never overflow; sigma is within 4 ulp (3.4 seen in float64).
 * NaN stays NaN.  ln x (x > 0 normal), cos(2 pi u) and sin(2 pi u) (u in [0, 1)) in
 * float64, written once the same way, for the normal draws of Gaussian units (gauss_t.h);
 * e^d for small |d| by a short series, for the log weights' second exp. */
#ifndef CYRBM_VMATH_H
#define CYRBM_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* VD, VQ: the float64 type and its uint64 bit pattern; ASQ_, ASD_: bit casts between
 * them; MASK_: all-ones lanes where a comparison holds. */
#define CYRBM_DEFINE_EXP_D(NAME, VD, VQ, ASQ_, ASD_, MASK_)                              \
    static inline VD NAME(VD x) {                                                        \
        const VD lo = (VD){0} - 708.0;                                                   \
        const VQ m = MASK_(x < lo);                                                      \
        VD t, n, r, r2, r4, r8, p07, p8c;                                                \
        x = ASD_((m & ASQ_(lo)) | (~m & ASQ_(x)));                                       \
        t = x * 1.4426950408889634 + 0x1.8p52;     /* n + 1.5 * 2^52 */                  \
        n = t - 0x1.8p52;                                                                \
        r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;       \
        r2 = r * r;                                                                      \
        r4 = r2 * r2;                                                                    \
        r8 = r4 * r4;                                                                    \
        p07 = ((1.0 + r) + r2 * (0.5 + r * (1.0 / 6.0))) +                               \
              r4 * ((1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0))); \
        p8c = ((1.0 / 40320.0 + r * (1.0 / 362880.0)) +                                  \
               r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0))) + r4 * (1.0 / 479001600.0); \
        r = p07 + r8 * p8c;                                                              \
        return ASD_(ASQ_(r) + (ASQ_(t) << 52));                                          \
    }

#define CYRBM_DEFINE_EXP_F(NAME, VF, VU, ASU_, ASF_, MASK_)                              \
    static inline VF NAME(VF x) {                                                        \
        const VF lo = (VF){0} - 87.0f;                                                   \
        const VU m = MASK_(x < lo);                                                      \
        VF t, n, r, r2, r4;                                                              \
        x = ASF_((m & ASU_(lo)) | (~m & ASU_(x)));                                       \
        t = x * 1.44269504088896341f + 0x1.8p23f;                                        \
        n = t - 0x1.8p23f;                                                               \
        r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;                \
        r2 = r * r;                                                                      \
        r4 = r2 * r2;                                                                    \
        r = ((1.0f + r) + r2 * (0.5f + r * (1.0f / 6.0f))) +                             \
            r4 * ((1.0f / 24.0f + r * (1.0f / 120.0f)) + r2 * (1.0f / 720.0f + r * (1.0f / 5040.0f))); \
        return ASF_(ASU_(r) + (ASU_(t) << 23));                                          \
    }

/* sigma(x) from EXP: e = e^-|x|, then (x < 0 ? e : 1) / (1 + e) */
#define CYRBM_DEFINE_LOGISTIC(NAME, VT, VM, EXP, ASM_, AST_, MASK_, SIGN, ONE)            \
    static inline VT NAME(VT x) {                                                        \
        const VT e = EXP(AST_(ASM_(x) | SIGN));                                          \
        const VM neg = MASK_(x < (VT){0});                                               \
        const VT one = (VT){0} + ONE;                                                    \
        return AST_((neg & ASM_(e)) | (~neg & ASM_(one))) / (one + e);                   \
    }

/* ln x for a positive normal x: x = 2^e m, m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.1716, by its odd series to s^23 (Horner in s^2), plus e ln 2
 * in two parts; about 1 ulp.  The exponent becomes a float64 through the 2^52 trick (no
 * int64 conversion instruction needed).  (The normal draw's ln(1 - U) and the Gaussian
 * AIS weights' ln of a product, gauss_t.h.) */
#define CYRBM_DEFINE_LOG_D(NAME, VD, VQ, ASQ_, ASD_, MASK_)                              \
    static inline VD NAME(VD x) {                                                        \
        const VQ bits = ASQ_(x);                                                         \
        VD m = ASD_((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);             \
        const VQ big = MASK_(m > 1.4142135623730951);                                    \
        const VD e = (ASD_(((bits >> 52) & 0x7ffULL) | 0x4330000000000000ULL) - 0x1p52)   \
            - 1023.0 + ASD_(big & ASQ_((VD){0} + 1.0));                                  \
        static const double lc_[10] = {2.0 / 21.0, 2.0 / 19.0, 2.0 / 17.0, 2.0 / 15.0,    \
                                       2.0 / 13.0, 2.0 / 11.0, 2.0 / 9.0, 2.0 / 7.0,      \
                                       2.0 / 5.0, 2.0 / 3.0};                             \
        VD s, s2, p;                                                                     \
        int k_;                                                                          \
        m = ASD_((big & ASQ_(m * 0.5)) | (~big & ASQ_(m)));                              \
        s = (m - 1.0) / (m + 1.0);                                                       \
        s2 = s * s;                                                                      \
        p = (VD){0} + 2.0 / 23.0;                                                        \
        for (k_ = 0; k_ < 10; k_++) p = lc_[k_] + s2 * p;                                \
        return e * 6.93147180369123816490e-01                                            \
            + ((2.0 * s + s * (s2 * p)) + e * 1.90821492927058770002e-10);               \
    }

/* cos(2 pi u) and sin(2 pi u) for u in [0, 1) (exact multiples of 2^-53, the normal
 * draws' angle), into *cs and *sn: with t = 4u = n + r, n the nearest whole number,
 * |r| <= 1/2 (both exact), a = r pi / 2, the Taylor polynomials of cos a (to a^18) and
 * sin a (to a^17), and the quadrant n mod 4 choosing cos a, -sin a, -cos a or sin a for
 * the cosine and sin a, cos a, -sin a or -cos a for the sine. */
#define CYRBM_DEFINE_SINCOS2PI_D(NAME, VD, VQ, ASQ_, ASD_, MASK_)                        \
    static inline void NAME(VD u, VD *cs, VD *sn) {                                      \
        const VD t = u * 4.0, tn = t + 0x1.8p52;                                         \
        const VQ q = ASQ_(tn) & 3ULL;                                                    \
        const VD a = (t - (tn - 0x1.8p52)) * 1.5707963267948966, a2 = a * a;              \
        static const double cc_[8] = {1.0 / 6402373705728000.0, -1.0 / 20922789888000.0,  \
                                      1.0 / 87178291200.0, -1.0 / 479001600.0,           \
                                      1.0 / 3628800.0, -1.0 / 40320.0, 1.0 / 720.0,       \
                                      -1.0 / 24.0};                                      \
        static const double sc_[8] = {-1.0 / 355687428096000.0, 1.0 / 1307674368000.0,    \
                                      -1.0 / 6227020800.0, 1.0 / 39916800.0,             \
                                      -1.0 / 362880.0, 1.0 / 5040.0, -1.0 / 120.0,        \
                                      1.0 / 6.0};                                        \
        VD c, s;                                                                         \
        int k_;                                                                          \
        c = (VD){0} + cc_[0];                                                            \
        s = (VD){0} + sc_[0];                                                            \
        for (k_ = 1; k_ < 8; k_++) {                                                     \
            c = cc_[k_] + a2 * c;                                                        \
            s = sc_[k_] + a2 * s;                                                        \
        }                                                                                \
        c = 0.5 + a2 * c;                                                                \
        c = 1.0 - a2 * c;                                                                \
        s = a - a * (a2 * s);                                                            \
        {                                                                                \
            const VQ odd = MASK_((q & 1ULL) != 0);                                       \
            const VQ neg = ((q + 1ULL) & 2ULL) << 62, negs = (q & 2ULL) << 62;           \
            *cs = ASD_(((odd & ASQ_(s)) | (~odd & ASQ_(c))) ^ neg);                      \
            *sn = ASD_(((odd & ASQ_(c)) | (~odd & ASQ_(s))) ^ negs);                     \
        }                                                                                \
    }

/* e^d for |d| <= 1/64 by its Taylor polynomial of degree 6 (relative remainder below
 * 5e-17): the second exp of a log-weight increment, e^-b'|x| = e^-b|x| e^d with
 * d = (b - b')|x| small (anneal_t.h, unit_gauss_t.h) */
#define CYRBM_DEFINE_EXP_SMALL_D(NAME, VD)                                               \
    static inline VD NAME(VD d) {                                                        \
        const VD d2 = d * d;                                                             \
        return ((1.0 + d) + d2 * (0.5 + d * (1.0 / 6.0))) +                              \
               (d2 * d2) * ((1.0 / 24.0 + d * (1.0 / 120.0)) + d2 * (1.0 / 720.0));      \
    }

/* ---- plain scalars: every build, every file ---- */
static inline uint64_t cyrbm_d2q(double x) { uint64_t q; memcpy(&q, &x, 8); return q; }
static inline double cyrbm_q2d(uint64_t q) { double x; memcpy(&x, &q, 8); return x; }
static inline uint32_t cyrbm_f2u(float x) { uint32_t q; memcpy(&q, &x, 4); return q; }
static inline float cyrbm_u2f(uint32_t q) { float x; memcpy(&x, &q, 4); return x; }
#define CYRBM_SMASK64(c) ((uint64_t)0 - (uint64_t)(c))
#define CYRBM_SMASK32(c) ((uint32_t)0 - (uint32_t)(c))

CYRBM_DEFINE_EXP_D(cyrbm_exp_neg, double, uint64_t, cyrbm_d2q, cyrbm_q2d, CYRBM_SMASK64)
CYRBM_DEFINE_EXP_F(cyrbm_exp_negf, float, uint32_t, cyrbm_f2u, cyrbm_u2f, CYRBM_SMASK32)
CYRBM_DEFINE_LOGISTIC(cyrbm_sigmoid, double, uint64_t, cyrbm_exp_neg, cyrbm_d2q, cyrbm_q2d,
                      CYRBM_SMASK64, 0x8000000000000000ULL, 1.0)
CYRBM_DEFINE_LOGISTIC(cyrbm_sigmoidf, float, uint32_t, cyrbm_exp_negf, cyrbm_f2u, cyrbm_u2f,
                      CYRBM_SMASK32, 0x80000000u, 1.0f)
CYRBM_DEFINE_LOG_D(cyrbm_log_pos, double, uint64_t, cyrbm_d2q, cyrbm_q2d, CYRBM_SMASK64)
CYRBM_DEFINE_EXP_SMALL_D(cyrbm_exp_small, double)
CYRBM_DEFINE_SINCOS2PI_D(cyrbm_sincos2pi, double, uint64_t, cyrbm_d2q, cyrbm_q2d, CYRBM_SMASK64)

/* softplus(x) = log(1 + e^x), exact to rounding for every finite x */
static inline double cyrbm_softplus(double x) {
    return (x > 0.0 ? x : 0.0) + log1p(cyrbm_exp_neg(-fabs(x)));
}
static inline float cyrbm_softplusf(float x) {
    return (x > 0.0f ? x : 0.0f) + log1pf(cyrbm_exp_negf(-fabsf(x)));
}

/* ---- native vectors of a kernel variant ---- */
#if defined(CYRBM_SIMD_H) && CYRBM_VBYTES > 0
#define CYRBM_VMASKQ(c) ((vq)(c))
#define CYRBM_VMASKU(c) ((vu)(c))
#define CYRBM_VASQ(x) ((vq)(x))
#define CYRBM_VASD(x) ((vd)(x))
#define CYRBM_VASU(x) ((vu)(x))
#define CYRBM_VASF(x) ((vf)(x))
CYRBM_DEFINE_EXP_D(vexp_d, vd, vq, CYRBM_VASQ, CYRBM_VASD, CYRBM_VMASKQ)
CYRBM_DEFINE_EXP_F(vexp_f, vf, vu, CYRBM_VASU, CYRBM_VASF, CYRBM_VMASKU)
CYRBM_DEFINE_LOGISTIC(vsigmoid_d, vd, vq, vexp_d, CYRBM_VASQ, CYRBM_VASD, CYRBM_VMASKQ,
                      0x8000000000000000ULL, 1.0)
CYRBM_DEFINE_LOGISTIC(vsigmoid_f, vf, vu, vexp_f, CYRBM_VASU, CYRBM_VASF, CYRBM_VMASKU,
                      0x80000000u, 1.0f)
CYRBM_DEFINE_LOG_D(vlog_d, vd, vq, CYRBM_VASQ, CYRBM_VASD, CYRBM_VMASKQ)
CYRBM_DEFINE_SINCOS2PI_D(vsincos2pi_d, vd, vq, CYRBM_VASQ, CYRBM_VASD, CYRBM_VMASKQ)
CYRBM_DEFINE_EXP_SMALL_D(vexp_small_d, vd)
#elif defined(CYRBM_SIMD_H)
#define vexp_small_d cyrbm_exp_small
#define vlog_d cyrbm_log_pos
#define vsincos2pi_d cyrbm_sincos2pi
#define vexp_d cyrbm_exp_neg
#define vexp_f cyrbm_exp_negf
#define vsigmoid_d cyrbm_sigmoid
#define vsigmoid_f cyrbm_sigmoidf
#endif

#endif
