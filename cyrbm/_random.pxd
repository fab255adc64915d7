# One random stream per chain (include/cyrbm/rng.h: xoshiro256++).
from libc.stdint cimport uint64_t

cdef extern from "cyrbm/rng.h" nogil:
    ctypedef struct cyrbm_rng:
        uint64_t s[4]
    uint64_t cyrbm_rng_next(cyrbm_rng *r)
    double cyrbm_rng_uniform(cyrbm_rng *r)
