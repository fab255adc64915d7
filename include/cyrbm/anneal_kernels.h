/* Annealed importance sampling and exact partition functions: cyrbm's C kernels.
 *
 * Two kernels on raw buffers, free of the Python runtime (callable without the GIL, from
 * any number of threads, each thread on its own runs or chunks):
 *
 *  - cyrbm_ais_block_f32 / _f64 (anneal_template.h): AIS runs between two RBMs A and B
 *    sharing their visible layer (Salakhutdinov & Murray 2008, Eq. 13-17; A may have no
 *    hidden units, which is the base-rate model of Eq. 18).  The runs' states move by
 *    block Gibbs transitions at each inverse temperature beta_k and accumulate their log
 *    importance weights in float64.  cyrbm_ais_visible_*: a visible half-step alone
 *    (exact samples from the base-rate model).
 *
 *  - cyrbm_exact_chunk: a contiguous range of the states of the smaller layer, visited in
 *    Gray-code order, of ln p* with the other layer summed out, as a (max, sum of
 *    exp(f - max)) pair; chunks of a fixed size are combined in a fixed order.
 *
 * Speed.  Neighbouring betas change few units, so each run keeps its hidden inputs
 * x = W^T v + a and its visible inputs u = W h and updates them by the weight rows of the
 * units that flipped, recomputing them exactly every `refresh_every` steps (bounds float32
 * drift).  The few visible flips (about 17 of 784 per step on a trained digit model) are
 * summed per run, 8 vectors of columns at a time in registers, from the rows of W (they
 * fit in L1).  The many hidden flips (about 100 of 500) come from W^T stored in column
 * chunks one vector (64 bytes) wide, each chunk's rows taken in tiles of 32 KB: every run
 * of the thread sums the rows it needs from the tile in 8 register accumulators while
 * the tile is in L1, so a row of W^T comes from L2 once per step and thread, not once per
 * run; the next tile is prefetched a slice per run.  The lists of hidden flips are built
 * 8 units at a time without branches (a table of bit positions), those of the rare
 * visible flips a 64-unit window at a time, with (bA - bB).v following them.  Threads
 * take disjoint blocks of runs through all the steps with no synchronisation.
 * Softplus and logistic functions use a vectorized exp (range reduction and a Taylor
 * polynomial evaluated by Estrin's scheme, about 2 ulp, no lookup tables).  The sum over
 * j of softplus(c x_j) is c sum_j max(x_j, 0) + ln prod_j (1 + exp(-c |x_j|)), products
 * kept as mantissa x 2^exponent: one exp per unit and one log per run and step; the
 * second exp of a log-weight increment, at the previous beta, is the first times a short
 * exact series when the step is small.  On x86-64 Linux with GCC the hot functions are
 * compiled for AVX-512, AVX2 and the baseline and the loader picks one for the running CPU
 * (function multiversioning; define CYRBM_NO_CLONES to turn it off); a plain-C fallback
 * (also selected by CYRBM_AK_NO_VECTOR) does the same arithmetic lane by lane.
 * Floating-point contraction stays off (-std=c99), so the clones give the same bits.
 *
 * Determinism.  Run r draws only from its own random streams (8 interleaved
 * xoshiro256++ lanes, 32 words at rng + 32 r, word w of lane l at w*8 + l), in an order
 * fixed by the layer sizes: per half-step, each hidden layer takes ceil(n/8) draws of the
 * 8 lanes (one float64 uniform per unit: unit u uses lane u % 8 of draw u / 8) and the
 * visible layer ceil(D/16) draws (two float32 uniforms per lane) for float32 models or
 * ceil(D/8) for float64 ones.  A unit turns on when u (1 + t) < (y >= 0 ? 1 : t), t =
 * exp(-|y|), i.e. u < sigma(y).  Block and tile sizes are constants.  So results do not
 * depend on the number of threads or on how runs are grouped.
 *
 * Memory layout (all C order).  Per-run rows are padded with zeros to an odd multiple of
 * 16 elements (ldV, ldA, ldB; odd so that many runs' rows do not share cache sets).  WA
 * and WB are row-major D x ldA / D x ldB; WAT and WBT (nA x ldV, nB x ldV) are stored in
 * column chunks of CYRBM_AK_CHUNK_BYTES, each chunk row-major (see cyrbm_ak_update). */
#ifndef CYRBM_ANNEAL_KERNELS_H
#define CYRBM_ANNEAL_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cyrbm/omp_compat.h"

#define CYRBM_AK_PAD 16          /* row padding, in elements */
#define CYRBM_AK_BLOCK 128       /* hidden units per partial product (a multiple of 16) */
#define CYRBM_AK_CHUNK_BYTES 64  /* W^T is stored in column chunks this wide (1 vector) */
#ifndef CYRBM_AK_TILE_BYTES
#define CYRBM_AK_TILE_BYTES 32768 /* rows of a chunk taken at a time (L1 cache) */
#endif
#define CYRBM_AK_RNG_WORDS 32    /* 8 lanes x 4 words of xoshiro256++ per run */

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) \
    && !defined(CYRBM_NO_CLONES) && !defined(CYRBM_NATIVE)
#define CYRBM_AK_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CYRBM_AK_CLONES
#endif

#if (defined(__GNUC__) || defined(__clang__)) && !defined(CYRBM_AK_NO_VECTOR)
#define CYRBM_AK_PREFETCH(p) __builtin_prefetch((p), 0, 2)
#define CYRBM_AK_VECTOR 1
#define CYRBM_AK_INLINE static inline __attribute__((always_inline))
#if !defined(__clang__)
/* 64-byte vector types in the baseline clone: harmless, every helper is inlined */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
#else
#define CYRBM_AK_PREFETCH(p) ((void)(p))
#define CYRBM_AK_VECTOR 0
#define CYRBM_AK_INLINE static __inline
#endif

/* Optional phase timers (build with -DCYRBM_AK_PROFILE): cycles per phase of a step. */
#if defined(CYRBM_AK_PROFILE) && defined(__x86_64__)
#include <x86intrin.h>
static uint64_t cyrbm_ak_prof[8];
#define CYRBM_AK_PROF_START uint64_t cyrbm_ak_t0 = __rdtsc(), cyrbm_ak_t1
#define CYRBM_AK_PROF_LAP(i) \
    (cyrbm_ak_t1 = __rdtsc(), cyrbm_ak_prof[i] += cyrbm_ak_t1 - cyrbm_ak_t0, cyrbm_ak_t0 = cyrbm_ak_t1)
#else
#define CYRBM_AK_PROF_START
#define CYRBM_AK_PROF_LAP(i)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The two RBMs of an annealing run, sharing the D visible units.
 * The intermediate distributions are (SM08 Eq. 13-14)
 *   p_k(v) ~ sum_{hA,hB} exp(-(1 - beta_k) E(v, hA; A) - beta_k E(v, hB; B)),
 * so ln p*_k(v) = (1-beta_k) bA.v + beta_k bB.v
 *               + sum_j softplus((1-beta_k) xA_j) + sum_j softplus(beta_k xB_j). */
typedef struct {
    ptrdiff_t D, nA, nB;            /* visible units, hidden units of A and of B */
    ptrdiff_t ldV, ldA, ldB;        /* padded widths */
    const void *WA, *WAT, *aA, *bA; /* D x ldA, nA x ldV, ldA, ldV (bA: base biases) */
    const void *WB, *WBT, *aB, *bB; /* D x ldB, nB x ldV, ldB, ldV */
    const double *dbias;            /* ldV: bA - bB in float64 */
    double xboundA, xboundB;        /* bounds on |x| = |W^T v + a| over all v and units */
} cyrbm_ais_pair;

/* The state of R runs (row r of each array belongs to run r). */
typedef struct {
    uint8_t *v, *hA, *hB;           /* R x ldV, R x ldA, R x ldB: 0/1 states (pads 0) */
    void *xA, *xB;                  /* R x ldA, R x ldB: hidden pre-activations W^T v + a */
    void *uA, *uB;                  /* R x ldV: visible inputs from the hiddens, W h */
    /* units that turned on / off in the last half-step (ascending), and their counts;
     * on refresh the "on" lists hold all active units */
    int32_t *vlist, *vlist_off, *nv, *nv_off;             /* R x ldV, R x ldV, R, R */
    int32_t *hlistA, *hlistA_off, *nhA, *nhA_off;         /* R x ldA, ..., R, R */
    int32_t *hlistB, *hlistB_off, *nhB, *nhB_off;         /* R x ldB, ..., R, R */
    double *logw;                   /* R: log importance weights */
    double *dot;                    /* R: (bA - bB).v, updated with v */
    uint64_t *rng;                  /* R x 32: the runs' random streams */
    int32_t *cur;                   /* R x cur_stride: tile bounds of the hidden lists */
    ptrdiff_t cur_stride;           /* 2 (ceil(nA / tile) + 1) + 2 (ceil(nB / tile) + 1) */
} cyrbm_ais_state;

/* ------------------------------------------------------------------------------------
 * Vector helpers (GCC/Clang vector extensions; lowered to zmm, ymm or xmm code).
 * ------------------------------------------------------------------------------------ */
#if CYRBM_AK_VECTOR
typedef double cyrbm_v8d __attribute__((vector_size(64)));
typedef int64_t cyrbm_v8l __attribute__((vector_size(64)));
typedef uint64_t cyrbm_v8q __attribute__((vector_size(64)));
typedef float cyrbm_v16f __attribute__((vector_size(64)));
typedef int32_t cyrbm_v16i __attribute__((vector_size(64)));
typedef uint32_t cyrbm_v16u __attribute__((vector_size(64)));
typedef float cyrbm_v8f __attribute__((vector_size(32)));
typedef int8_t cyrbm_v8c __attribute__((vector_size(8)));
typedef int8_t cyrbm_v16c __attribute__((vector_size(16)));

#define CYRBM_AK_SEL(VT, IT, m, a, b) ((VT)(((m) & (IT)(a)) | (~(m) & (IT)(b))))

CYRBM_AK_INLINE cyrbm_v8d cyrbm_ak_ld8d(const double *p) { cyrbm_v8d v; memcpy(&v, p, 64); return v; }
CYRBM_AK_INLINE void cyrbm_ak_st8d(double *p, cyrbm_v8d v) { memcpy(p, &v, 64); }
CYRBM_AK_INLINE cyrbm_v16f cyrbm_ak_ld16f(const float *p) { cyrbm_v16f v; memcpy(&v, p, 64); return v; }
CYRBM_AK_INLINE void cyrbm_ak_st16f(float *p, cyrbm_v16f v) { memcpy(p, &v, 64); }
CYRBM_AK_INLINE cyrbm_v8d cyrbm_ak_ld8f_as_d(const float *p) {
    cyrbm_v8f v; memcpy(&v, p, 32); return __builtin_convertvector(v, cyrbm_v8d);
}

/* e^x for x <= 0 (x below -708 is taken as -708), to about 2 ulp: x = n ln2 + r with
 * |r| <= ln2 / 2, e^r by its Taylor polynomial of degree 12 evaluated by Estrin's scheme
 * (short dependency chains, so several vectors are in flight at once), times 2^n. */
CYRBM_AK_INLINE cyrbm_v8d cyrbm_ak_exp8d(cyrbm_v8d x) {
    const cyrbm_v8d zero = {0};
    cyrbm_v8d t, n, r, r2, r4, r8, p01, p23, p45, p67, p89, pab, p03, p47, p8b, p07, p8c;
    x = CYRBM_AK_SEL(cyrbm_v8d, cyrbm_v8l, x < -708.0, zero - 708.0, x);
    t = x * 1.4426950408889634 + 0x1.8p52;     /* n + 1.5 * 2^52 */
    n = t - 0x1.8p52;
    r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
    r2 = r * r;
    r4 = r2 * r2;
    r8 = r4 * r4;
    p01 = 1.0 + r;
    p23 = 0.5 + r * (1.0 / 6.0);
    p45 = 1.0 / 24.0 + r * (1.0 / 120.0);
    p67 = 1.0 / 720.0 + r * (1.0 / 5040.0);
    p89 = 1.0 / 40320.0 + r * (1.0 / 362880.0);
    pab = 1.0 / 3628800.0 + r * (1.0 / 39916800.0);
    p03 = p01 + r2 * p23;
    p47 = p45 + r2 * p67;
    p8b = p89 + r2 * pab;
    p07 = p03 + r4 * p47;
    p8c = p8b + r4 * (1.0 / 479001600.0);
    r = p07 + r8 * p8c;
    return (cyrbm_v8d)((cyrbm_v8l)r + ((cyrbm_v8l)t << 52));
}

/* e^x for x <= 0 in float32 (x below -87 is taken as -87), to about 2 ulp: degree-7
 * Taylor polynomial by Estrin's scheme. */
CYRBM_AK_INLINE cyrbm_v16f cyrbm_ak_exp16f(cyrbm_v16f x) {
    const cyrbm_v16f zero = {0};
    cyrbm_v16f t, n, r, r2, r4, p01, p23, p45, p67;
    x = CYRBM_AK_SEL(cyrbm_v16f, cyrbm_v16i, x < -87.0f, zero - 87.0f, x);
    t = x * 1.44269504088896341f + 0x1.8p23f;
    n = t - 0x1.8p23f;
    r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
    r2 = r * r;
    r4 = r2 * r2;
    p01 = 1.0f + r;
    p23 = 0.5f + r * (1.0f / 6.0f);
    p45 = 1.0f / 24.0f + r * (1.0f / 120.0f);
    p67 = 1.0f / 720.0f + r * (1.0f / 5040.0f);
    r = (p01 + r2 * p23) + r4 * (p45 + r2 * p67);
    return (cyrbm_v16f)((cyrbm_v16i)r + ((cyrbm_v16i)t << 23));
}

/* Lane masks for the last, partial group of a layer: load 8 (or 16) entries starting
 * at 8 - rem (16 - rem) to get rem leading all-ones lanes; computed without compares
 * (GCC turns lane-index compares into scalar code). */
static const int64_t cyrbm_ak_mask64[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static const int32_t cyrbm_ak_mask32[32] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
                                            -1, -1, -1, 0,  0,  0,  0,  0,  0,  0,  0,  0,  0,
                                            0,  0,  0,  0,  0,  0};

CYRBM_AK_INLINE cyrbm_v8l cyrbm_ak_valid8(ptrdiff_t rem) {
    cyrbm_v8l m;
    memcpy(&m, cyrbm_ak_mask64 + 8 - (rem < 8 ? rem : 8), 64);
    return m;
}

CYRBM_AK_INLINE cyrbm_v16i cyrbm_ak_valid16(ptrdiff_t rem) {
    cyrbm_v16i m;
    memcpy(&m, cyrbm_ak_mask32 + 16 - (rem < 16 ? rem : 16), 64);
    return m;
}

CYRBM_AK_INLINE cyrbm_v8q cyrbm_ak_rotl(cyrbm_v8q x, int k) { return (x << k) | (x >> (64 - k)); }

/* One xoshiro256++ step of each of the 8 lanes. */
CYRBM_AK_INLINE cyrbm_v8q cyrbm_ak_next(cyrbm_v8q s[4]) {
    const cyrbm_v8q result = cyrbm_ak_rotl(s[0] + s[3], 23) + s[0];
    const cyrbm_v8q t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = cyrbm_ak_rotl(s[3], 45);
    return result;
}

/* 8 float64 uniforms in [0, 1) (52 bits each) from one draw. */
CYRBM_AK_INLINE cyrbm_v8d cyrbm_ak_unif8d(cyrbm_v8q r) {
    return (cyrbm_v8d)((r >> 12) | 0x3FF0000000000000ULL) - 1.0;
}

/* 16 float32 uniforms in [0, 1) (23 bits each) from one draw: lane 2l from the low half
 * of 64-bit lane l, lane 2l+1 from its high half. */
CYRBM_AK_INLINE cyrbm_v16f cyrbm_ak_unif16f(cyrbm_v8q r) {
    const cyrbm_v16u w = (cyrbm_v16u)r;
    return (cyrbm_v16f)((w >> 9) | 0x3F800000u) - 1.0f;
}

CYRBM_AK_INLINE void cyrbm_ak_rng_load(cyrbm_v8q s[4], const uint64_t *p) {
    memcpy(s, p, 4 * 64);
}
CYRBM_AK_INLINE void cyrbm_ak_rng_store(uint64_t *p, const cyrbm_v8q s[4]) {
    memcpy(p, s, 4 * 64);
}
#define CYRBM_AK_RNG_T cyrbm_v8q
#else  /* scalar fallback: the same arithmetic, lane by lane */
typedef uint64_t cyrbm_ak_rngq;
#define CYRBM_AK_RNG_T uint64_t
#endif

/* Scalar e^x for x <= 0 with the same polynomials and evaluation order (used by the
 * fallback and the tests). */
static inline double cyrbm_ak_exp_scalar(double x) {
    double t, n, r, r2, r4, r8, p07, p8c;
    int64_t bits, tb;
    if (x < -708.0) x = -708.0;
    t = x * 1.4426950408889634 + 0x1.8p52;
    n = t - 0x1.8p52;
    r = (x - n * 6.93147180369123816490e-01) - n * 1.90821492927058770002e-10;
    r2 = r * r;
    r4 = r2 * r2;
    r8 = r4 * r4;
    p07 = ((1.0 + r) + r2 * (0.5 + r * (1.0 / 6.0))) +
          r4 * ((1.0 / 24.0 + r * (1.0 / 120.0)) + r2 * (1.0 / 720.0 + r * (1.0 / 5040.0)));
    p8c = ((1.0 / 40320.0 + r * (1.0 / 362880.0)) +
           r2 * (1.0 / 3628800.0 + r * (1.0 / 39916800.0))) + r4 * (1.0 / 479001600.0);
    r = p07 + r8 * p8c;
    memcpy(&bits, &r, 8);
    memcpy(&tb, &t, 8);
    bits = (int64_t)((uint64_t)bits + ((uint64_t)tb << 52));
    memcpy(&r, &bits, 8);
    return r;
}

static inline float cyrbm_ak_expf_scalar(float x) {
    float t, n, r, r2, r4;
    int32_t bits, tb;
    if (x < -87.0f) x = -87.0f;
    t = x * 1.44269504088896341f + 0x1.8p23f;
    n = t - 0x1.8p23f;
    r = (x - n * 0.693145751953125f) - n * 1.428606765330187045e-06f;
    r2 = r * r;
    r4 = r2 * r2;
    r = ((1.0f + r) + r2 * (0.5f + r * (1.0f / 6.0f))) +
        r4 * ((1.0f / 24.0f + r * (1.0f / 120.0f)) + r2 * (1.0f / 720.0f + r * (1.0f / 5040.0f)));
    memcpy(&bits, &r, 4);
    memcpy(&tb, &t, 4);
    bits = (int32_t)((uint32_t)bits + ((uint32_t)tb << 23));
    memcpy(&r, &bits, 4);
    return r;
}

static inline uint64_t cyrbm_ak_rotl1(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* One xoshiro256++ step of lane l of a run's lane-major state. */
static inline uint64_t cyrbm_ak_next_lane(uint64_t *s, int l) {
    const uint64_t result = cyrbm_ak_rotl1(s[l] + s[24 + l], 23) + s[l];
    const uint64_t t = s[8 + l] << 17;
    s[16 + l] ^= s[l];
    s[24 + l] ^= s[8 + l];
    s[8 + l] ^= s[16 + l];
    s[l] ^= s[24 + l];
    s[16 + l] ^= t;
    s[24 + l] = cyrbm_ak_rotl1(s[24 + l], 45);
    return result;
}

/* Multiply the running product *P (kept as mantissa * 2^*E) by f, exactly rescaled. */
static inline void cyrbm_ak_mulexp(double *P, int64_t *E, double f) {
    int e;
    *P = frexp(*P * f, &e);
    *E += e;
}

/* The same with the exponent held in a double (an exact integer). */
static inline void cyrbm_ak_mulexp_d(double *P, double *E, double f) {
    int e;
    *P = frexp(*P * f, &e);
    *E += (double)e;
}

/* The low bits of 8 bytes that are each 0 or 1, as an 8-bit number (byte i -> bit i). */
static inline uint64_t cyrbm_ak_pack8(uint64_t x) { return (x * 0x0102040810204080ULL) >> 56; }

/* Index of the lowest set bit of a non-zero word. */
static inline int cyrbm_ak_ctz(uint64_t x) {
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(x);
#else
    int k = 0;
    while (!(x & 1u)) { x >>= 1; k++; }
    return k;
#endif
}

/* The positions of the set bits of each byte value, ascending (then zeros), and their
 * number: lists of flipped hidden units (many) are appended 8 units at a time without
 * branches. */
static const int32_t cyrbm_ak_bitpos[256][8] = {
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
static const uint8_t cyrbm_ak_bitcnt[256] = {
    0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, 1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    1, 2, 2, 3, 2, 3, 3, 4, 2, 3, 3, 4, 3, 4, 4, 5, 2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    2, 3, 3, 4, 3, 4, 4, 5, 3, 4, 4, 5, 4, 5, 5, 6, 3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7,
    3, 4, 4, 5, 4, 5, 5, 6, 4, 5, 5, 6, 5, 6, 6, 7, 4, 5, 5, 6, 5, 6, 6, 7, 5, 6, 6, 7, 6, 7, 7, 8,
};

/* Append base + (position of each set bit of the 8-bit m), ascending, to list[*n ...]:
 * 8 entries are written, *n advances by the number of set bits, so list must have room
 * for *n + 8 entries (true when base + 8 <= the list's capacity and *n <= base). */
static inline void cyrbm_ak_emit8(unsigned m, int32_t base, int32_t *list, int32_t *n) {
    const int32_t *p = cyrbm_ak_bitpos[m & 255u];
    int32_t *o = list + *n;
#if CYRBM_AK_VECTOR
    typedef int32_t v8i __attribute__((vector_size(32)));
    v8i v;
    memcpy(&v, p, 32);
    v += base;
    memcpy(o, &v, 32);
#else
    int l;
    for (l = 0; l < 8; l++) o[l] = base + p[l];
#endif
    *n += cyrbm_ak_bitcnt[m & 255u];
}

/* Where each tile of `tile` rows starts in a run's ascending lists of units that turned
 * on (`on`, n_on entries) and off: bd[t] and bd[t + 1] bound tile t's entries of "on",
 * bd[ntiles + 1 + t] and bd[ntiles + 2 + t] those of "off" (ntiles = ceil(nrows / tile)). */
static inline void cyrbm_ak_tile_bounds(const int32_t *on, int32_t n_on, const int32_t *off,
                                        int32_t n_off, ptrdiff_t nrows, ptrdiff_t tile,
                                        int32_t *bd) {
    const ptrdiff_t ntiles = (nrows + tile - 1) / tile;
    int pass;
    for (pass = 0; pass < 2; pass++) {
        const int32_t *l = pass == 0 ? on : off;
        const int32_t n = pass == 0 ? n_on : n_off;
        int32_t *b = bd + pass * (ntiles + 1);
        int32_t q = 0;
        ptrdiff_t t;
        for (t = 0; t < ntiles; t++) {
            b[t] = q;
            while (q < n && l[q] < (t + 1) * tile) q++;
        }
        b[ntiles] = n;
    }
}

/* Append base + (position of each set bit of m), ascending, to list[*n ...]: one step
 * per set bit, cheap when flips are rare (the visible units). */
static inline void cyrbm_ak_emit(uint64_t m, ptrdiff_t base, int32_t *list, int32_t *n) {
    int32_t c = *n;
    for (; m; m &= m - 1) list[c++] = (int32_t)(base + cyrbm_ak_ctz(m));
    *n = c;
}

/* ------------------------------------------------------------------------------------
 * Exact ln Z: a chunk of the Gray-code enumeration of the smaller layer.
 *
 * States s of the enumerated layer (m units) are visited as g(i) = i ^ (i >> 1) for
 * i0 <= i < i1; neighbouring codes differ in bit ctz(i), so the other layer's inputs
 *   act = co + sum_k s_k Ws[k, :]   (n_pad entries, pads of co at -1e4)
 * change by one row of Ws per state.  They are recomputed exactly every 1024 states.
 *   f(s) = cs.s + sum_i softplus(act_i),
 * and out[0] = max f, out[1] = sum exp(f - max), all in float64; each[i - i0] = f of state
 * i when `each` is not NULL (exact sampling).
 * ------------------------------------------------------------------------------------ */
static inline void cyrbm_ak_exact_reset(const double *Ws, ptrdiff_t ld, const double *cs,
                                        const double *co, ptrdiff_t m, ptrdiff_t n_pad,
                                        uint64_t g, double *act, double *lin) {
    ptrdiff_t k, i;
    double s = 0.0;
    memcpy(act, co, (size_t)n_pad * sizeof(double));
    for (k = 0; k < m; k++) {
        if ((g >> k) & 1u) {
            const double *w = Ws + k * ld;
            for (i = 0; i < n_pad; i++) act[i] += w[i];
            s += cs[k];
        }
    }
    *lin = s;
}

CYRBM_AK_CLONES static void cyrbm_exact_chunk(const double *Ws, ptrdiff_t ld, const double *cs,
                                              const double *co, ptrdiff_t m, ptrdiff_t n_pad,
                                              uint64_t i0, uint64_t i1, double *act,
                                              double *out, double *each) {
    uint64_t i, g = i0 ^ (i0 >> 1);
    double lin, mx = -INFINITY, sm = 0.0;
    ptrdiff_t c, c0;
    (void)m;
    cyrbm_ak_exact_reset(Ws, ld, cs, co, m, n_pad, g, act, &lin);
    for (i = i0; i < i1; i++) {
        double f, relu, P = 1.0;
        int64_t E = 0;
        if (i > i0) {
            if (((i - i0) & 1023u) == 0) {
                g = i ^ (i >> 1);
                cyrbm_ak_exact_reset(Ws, ld, cs, co, m, n_pad, g, act, &lin);
            } else {
                int k = cyrbm_ak_ctz(i);
                const double *w = Ws + (ptrdiff_t)k * ld;
                g ^= (uint64_t)1 << k;
                if ((g >> k) & 1u) {
                    for (c = 0; c < n_pad; c++) act[c] += w[c];
                    lin += cs[k];
                } else {
                    for (c = 0; c < n_pad; c++) act[c] -= w[c];
                    lin -= cs[k];
                }
            }
        }
#if CYRBM_AK_VECTOR
        {
            const cyrbm_v8d zero = {0};
            cyrbm_v8d rv = zero;
            for (c0 = 0; c0 < n_pad; c0 += 1024) {
                ptrdiff_t c1 = c0 + 1024 < n_pad ? c0 + 1024 : n_pad;
                cyrbm_v8d pv = zero + 1.0;
                int l;
                double q = 1.0;
                for (c = c0; c < c1; c += 8) {
                    cyrbm_v8d a = cyrbm_ak_ld8d(act + c);
                    cyrbm_v8d na = (cyrbm_v8d)((cyrbm_v8l)a | INT64_MIN); /* -|a| */
                    rv += CYRBM_AK_SEL(cyrbm_v8d, cyrbm_v8l, a > 0.0, a, zero);
                    pv *= 1.0 + cyrbm_ak_exp8d(na);
                }
                for (l = 0; l < 8; l++) q *= pv[l];
                cyrbm_ak_mulexp(&P, &E, q);
            }
            relu = 0.0;
            for (c = 0; c < 8; c++) relu += rv[c];
        }
#else
        {
            double rl[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            for (c0 = 0; c0 < n_pad; c0 += 1024) {
                ptrdiff_t c1 = c0 + 1024 < n_pad ? c0 + 1024 : n_pad;
                double pl[8] = {1, 1, 1, 1, 1, 1, 1, 1}, q = 1.0;
                int l;
                for (c = c0; c < c1; c += 8)
                    for (l = 0; l < 8; l++) {
                        double a = act[c + l];
                        rl[l] += a > 0.0 ? a : 0.0;
                        pl[l] *= 1.0 + cyrbm_ak_exp_scalar(-fabs(a));
                    }
                for (l = 0; l < 8; l++) q *= pl[l];
                cyrbm_ak_mulexp(&P, &E, q);
            }
            relu = 0.0;
            for (c = 0; c < 8; c++) relu += rl[c];
        }
#endif
        f = lin + relu + (log(P) + (double)E * 0.69314718055994530942);
        if (each) each[i - i0] = f;
        if (f > mx) {
            sm = sm * exp(mx - f) + 1.0;
            mx = f;
        } else {
            sm += exp(f - mx);
        }
    }
    out[0] = mx;
    out[1] = sm;
}

/* ------------------------------------------------------------------------------------
 * AIS, instantiated for float32 and float64 parameters.
 * ------------------------------------------------------------------------------------ */
#define CYRBM_AK_T float
#define CYRBM_AK_NAME(x) x##_f32
#define CYRBM_AK_IS_F32 1
#include "cyrbm/anneal_template.h"
#undef CYRBM_AK_T
#undef CYRBM_AK_NAME
#undef CYRBM_AK_IS_F32

#define CYRBM_AK_T double
#define CYRBM_AK_NAME(x) x##_f64
#define CYRBM_AK_IS_F32 0
#include "cyrbm/anneal_template.h"
#undef CYRBM_AK_T
#undef CYRBM_AK_NAME
#undef CYRBM_AK_IS_F32

#ifdef __cplusplus
}
#endif

#endif
