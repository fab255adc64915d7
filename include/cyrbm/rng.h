/* One random stream per chain: xoshiro256++ (Blackman & Vigna, 2019).
 *
 * The state is four 64-bit words, seeded from Python through numpy.random.SeedSequence
 * (one child sequence per chain), so a chain's numbers depend only on the seed and the
 * chain's index, never on which thread runs it.  Every function is nogil-safe C. */
#ifndef CYRBM_RNG_H
#define CYRBM_RNG_H

#include <stdint.h>

typedef struct cyrbm_rng {
    uint64_t s[4];
} cyrbm_rng;

static inline uint64_t cyrbm_rotl64(const uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

/* Next 64 random bits. */
static inline uint64_t cyrbm_rng_next(cyrbm_rng *r) {
    uint64_t *s = r->s;
    const uint64_t result = cyrbm_rotl64(s[0] + s[3], 23) + s[0];
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = cyrbm_rotl64(s[3], 45);
    return result;
}

/* Uniform double in [0, 1) with 53 random bits. */
static inline double cyrbm_rng_uniform(cyrbm_rng *r) {
    return (double)(cyrbm_rng_next(r) >> 11) * 0x1.0p-53;
}

/* Two uniform floats in [0, 1) with 24 random bits each, from one 64-bit draw. */
static inline void cyrbm_rng_uniform2f(cyrbm_rng *r, float *a, float *b) {
    const uint64_t x = cyrbm_rng_next(r);
    *a = (float)(x >> 40) * 0x1.0p-24f;
    *b = (float)((x >> 8) & 0xFFFFFFu) * 0x1.0p-24f;
}

#endif
