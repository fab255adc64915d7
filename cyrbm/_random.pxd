# One random stream per chain: the public type (include/cyrbm/cyrbm_types.h).  The
# generator itself is private (cyrbm/_kernels/rng.h, declared in _ckernels.pxd).
from libc.stdint cimport uint64_t

cdef extern from "cyrbm/cyrbm_types.h" nogil:
    ctypedef struct cyrbm_rng:
        uint64_t s[4]
