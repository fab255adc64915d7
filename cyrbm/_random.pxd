# One random stream per chain: the public type (include/cyrbm/cyrbm_types.h).  The
# generator itself is private (cyrbm/_kernels/rng.h, declared in _ckernels.pxd).
from libc.stdint cimport uint64_t

cdef extern from "cyrbm/cyrbm_types.h" nogil:
    ctypedef struct cyrbm_rng:
        uint64_t s[4]


cdef inline int check_streams(const uint64_t[:, ::1] streams, Py_ssize_t n, str what,
                              bint at_least=False) except -1:
    """The one check of a driver's chain streams: ``n`` rows (``at_least`` n) of the 4
    words of a cyrbm_rng.  ``what`` names them in the error ("gauss_run: streams")."""
    cdef Py_ssize_t rows = streams.shape[0], words = streams.shape[1]
    if words != 4 or (rows < n if at_least else rows != n):
        raise ValueError(f"{what} must have shape ({'at least ' if at_least else ''}{n}, 4), "
                         f"not ({rows}, {words}).")
    return 0
