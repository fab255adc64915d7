# The DBN bound's kernel on raw buffers (cyrbm/_dbn.pyx), for capi.pyx.
from cython cimport floating
from libc.stdint cimport uint8_t
from cyrbm._random cimport cyrbm_rng

cdef enum:
    CYRBM_MAX_LAYERS = 64         # layers of a DBN the kernel takes, plus one

cdef int bound_terms_raw(const floating **W, const floating **vb, const floating **hb,
                         const Py_ssize_t *sizes, Py_ssize_t L, const uint8_t *V,
                         Py_ssize_t N, Py_ssize_t M, cyrbm_rng *streams, Py_ssize_t block,
                         double *lpv, double *lrest, double *lq, double *ent,
                         int n_threads) noexcept nogil
