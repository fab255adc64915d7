/* cyrbm's one random generator: xoshiro256++ (Blackman & Vigna, 2019), its stream
 * layouts and its uniform conventions.
 *
 * The step is written once (CYRBM_XOSHIRO_STEP) for any type with 64-bit lanes: a
 * uint64_t (one stream) or a vector of uint64 lanes (several streams side by side, one
 * per lane, each seeing exactly its own numbers).  States are seeded from Python through
 * numpy.random.SeedSequence (cyrbm/_random.pyx), so a stream's numbers depend only on
 * the seed, its purpose and its index, never on threads.
 *
 * Layouts:
 *   chain stream   cyrbm_rng: four words s[0..3] (block Gibbs, CD/PCD, RBM.sample);
 *   AIS run        CYRBM_RNG_LANES = 8 streams interleaved lane-major: word w of lane l
 *                  at w * 8 + l (32 words per run).
 * Normal draws: Box-Muller's cosine and sine, two normals from two u53 uniforms of a
 * chain stream (gauss_t.h, with vmath.h's ln, cos and sin).
 * Uniforms from a 64-bit draw x:
 *   cyrbm_u53(x)   (x >> 11) 2^-53: 53 bits, [0, 1)        (chain streams)
 *   u52            (x >> 12 | 1.0's exponent) - 1: 52 bits (AIS, float64 lanes)
 *   u23 pairs      the low and high 32-bit halves of x, each (h >> 9 | 1.0f's exponent)
 *                  - 1: two float32 uniforms of 23 bits, low half first (AIS, float32)
 */
#ifndef CYRBM_KERNELS_RNG_H
#define CYRBM_KERNELS_RNG_H

#include <math.h>
#include <stdint.h>
#include "cyrbm/cyrbm_types.h"

#define CYRBM_RNG_LANES 8
#define CYRBM_RNG_RUN_WORDS (4 * CYRBM_RNG_LANES)

#define CYRBM_ROTL64(x, k) (((x) << (k)) | ((x) >> (64 - (k))))

/* result = the next 64 bits of the stream(s) in s0..s3, which advance */
#define CYRBM_XOSHIRO_STEP(T, s0, s1, s2, s3, result)                                    \
    do {                                                                                  \
        const T xo_t_ = (s1) << 17;                                                       \
        (result) = CYRBM_ROTL64((s0) + (s3), 23) + (s0);                                  \
        (s2) ^= (s0);                                                                     \
        (s3) ^= (s1);                                                                     \
        (s1) ^= (s2);                                                                     \
        (s0) ^= (s3);                                                                     \
        (s2) ^= xo_t_;                                                                    \
        (s3) = CYRBM_ROTL64((s3), 45);                                                    \
    } while (0)

/* Next 64 random bits of a chain stream. */
static inline uint64_t cyrbm_rng_next(cyrbm_rng *r) {
    uint64_t x;
    CYRBM_XOSHIRO_STEP(uint64_t, r->s[0], r->s[1], r->s[2], r->s[3], x);
    return x;
}

/* The uniform conversions, each written once (the three conventions above).  The macros
 * take a uint64_t or a vector of uint64 lanes x (32-bit lanes h for u23) and the bit cast
 * AS_D / AS_F to float64 / float32 lanes of the same width (simd.h's ASD, ASF).
 * CYRBM_U53 is cyrbm_u53 for vector lanes: the top 53 bits as two exact 32-bit halves
 * through the 2^52 trick, (hi 2^32 + lo) 2^-53, the same value. */
static inline double cyrbm_u53(uint64_t x) { return (double)(x >> 11) * 0x1.0p-53; }
#define CYRBM_U53(AS_D, x)                                                                \
    ((((AS_D(((x) >> 43) | 0x4330000000000000ULL) - 0x1p52) * 0x1p32) +                   \
      (AS_D((((x) >> 11) & 0xffffffffULL) | 0x4330000000000000ULL) - 0x1p52)) * 0x1p-53)
#define CYRBM_U52(AS_D, x) (AS_D(((x) >> 12) | 0x3FF0000000000000ULL) - 1.0)
#define CYRBM_U23(AS_F, h) (AS_F(((h) >> 9) | 0x3F800000u) - 1.0f)

static inline double cyrbm_rng_uniform(cyrbm_rng *r) { return cyrbm_u53(cyrbm_rng_next(r)); }

/* The one Bernoulli draw of a chain stream: 1 with probability p (U < p, U a u53
 * uniform); vector forms: simd.h's CYRBM_DRAW_D / _F (from log-odds) and the eight-lane
 * draws of cyrbm_bernoulli8 (gibbs_t.h), which give the same bits. */
static inline int cyrbm_rng_bernoulli(cyrbm_rng *r, double p) { return cyrbm_rng_uniform(r) < p; }

/* Next 64 bits of lane l of an AIS run's interleaved streams (s: 32 words). */
static inline uint64_t cyrbm_rng_next_lane(uint64_t *s, int l) {
    uint64_t x;
    CYRBM_XOSHIRO_STEP(uint64_t, s[l], s[8 + l], s[16 + l], s[24 + l], x);
    return x;
}

/* Seed a run's 8 interleaved lanes from one chain stream: lane l takes the chain's next
 * four outputs as its state (a lane that came out all zero, probability 2^-256, is
 * nudged), so a run's numbers depend only on its chain's stream (the C API's Gibbs
 * sweeps and RBM.sample take chain streams, the engine runs on 8 lanes). */
static inline void cyrbm_rng_seed_run(cyrbm_rng *chain, uint64_t *run) {
    int l, w;
    for (l = 0; l < CYRBM_RNG_LANES; l++) {
        uint64_t any = 0;
        for (w = 0; w < 4; w++) any |= run[w * CYRBM_RNG_LANES + l] = cyrbm_rng_next(chain);
        if (!any) run[l] = 0x9E3779B97F4A7C15ULL;
    }
}

#endif
