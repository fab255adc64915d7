/* The types of cyrbm's public C API (cyrbm.h). */
#ifndef CYRBM_TYPES_H
#define CYRBM_TYPES_H

#include <stdint.h>

/* One chain's random stream: the four state words of xoshiro256++.  Make states with
 * cyrbm.capi.make_streams(seed, n) (one SeedSequence child per chain). */
typedef struct cyrbm_rng {
    uint64_t s[4];
} cyrbm_rng;

#endif
